/*
 * Benchmark target: calls bench_target() CALLS times in a tight loop and
 * prints the mean wall time per call. Whatever uprobes are attached to
 * bench_target at the time are what the caller measures.
 *
 * Its argument is laid out like gloo's collective options (the first word
 * points at the process group's context; a u32 tag at byte 128, as in
 * gloo::AllreduceOptions), so a probe that reads a communicator through it
 * reads real memory, as it does in a PyTorch rank.
 *
 *   call_loop CALLS   ->   "ns_per_call 1234.5"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct fake_options {
	void *context;
	char pad[120];
	uint32_t tag;
};

static long fake_context[4];

__attribute__((noinline)) int bench_target(struct fake_options *options)
{
	asm volatile("" ::: "memory");
	return (int)++options->tag;
}

int main(int argc, char **argv)
{
	struct timespec start, end;
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	struct fake_options options = { .context = fake_context };
	int acc = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < calls; i++)
		acc = bench_target(&options);
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("ns_per_call %.1f\n",
	       ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / (double)calls);
	return acc == 0;
}
