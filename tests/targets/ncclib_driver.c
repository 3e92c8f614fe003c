/*
 * Drives the NCCL IB stand-in (ncclib/libnccl.so.2) once GO_FILE exists.
 *
 *   ncclib_driver GO_FILE SENDS RECVS FLUSHES POLLS DELAY_US BASE_BYTES DEFERRED_EVERY
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int sb_run_ib_requests(int sends, int recvs, int flushes, int polls, long delay_us, size_t base, int deferred_every);

int main(int argc, char **argv)
{
	if (argc != 9) {
		fprintf(stderr, "usage: %s GO_FILE SENDS RECVS FLUSHES POLLS DELAY_US BASE_BYTES DEFERRED_EVERY\n", argv[0]);
		return 2;
	}
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	return sb_run_ib_requests(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atol(argv[6]),
				  (size_t)atol(argv[7]), atoi(argv[8]));
}
