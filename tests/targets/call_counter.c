/*
 * Test target for the BPF integration tests: calls functions an exact number
 * of times, with an injected sleep, once the test has attached.
 *
 *   call_counter GO_FILE COUNT_A COUNT_B COUNT_C SLEEP_US
 *
 * Waits until GO_FILE exists (the test creates it after attaching), then
 * calls sb_target_a() COUNT_A times (each sleeps SLEEP_US), sb_target_b()
 * COUNT_B times (sb_target_b(size) passes its size argument through) and
 * sb_target_c() COUNT_C times (returns at once), then exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int sb_target_a(long sleep_us)
{
	struct timespec ts = { .tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
	return 1;
}

__attribute__((noinline)) long sb_target_b(void *buffer, unsigned long size_bytes)
{
	asm volatile("" ::"r"(buffer) : "memory");
	return (long)size_bytes;
}

__attribute__((noinline)) int sb_target_c(void)
{
	asm volatile("" ::: "memory");
	return 3;
}

int main(int argc, char **argv)
{
	long count_a, count_b, count_c, sleep_us, acc = 0;
	char buffer[16];

	if (argc != 6) {
		fprintf(stderr, "usage: %s GO_FILE COUNT_A COUNT_B COUNT_C SLEEP_US\n", argv[0]);
		return 2;
	}
	count_a = atol(argv[2]);
	count_b = atol(argv[3]);
	count_c = atol(argv[4]);
	sleep_us = atol(argv[5]);
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	for (long i = 0; i < count_a; i++)
		acc += sb_target_a(sleep_us);
	for (long i = 0; i < count_b; i++)
		acc += sb_target_b(buffer, (unsigned long)(i + 1) * 64);
	for (long i = 0; i < count_c; i++)
		acc += sb_target_c();
	return acc < 0;
}
