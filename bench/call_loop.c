/*
 * Benchmark target: calls bench_target() CALLS times in a tight loop and
 * prints the mean wall time per call. Whatever uprobes are attached to
 * bench_target at the time are what the caller measures.
 *
 *   call_loop CALLS   ->   "ns_per_call 1234.5"
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int bench_target(int x)
{
	asm volatile("" ::: "memory");
	return x + 1;
}

int main(int argc, char **argv)
{
	struct timespec start, end;
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	int acc = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < calls; i++)
		acc = bench_target(acc);
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("ns_per_call %.1f\n",
	       ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / (double)calls);
	return acc == 0;
}
