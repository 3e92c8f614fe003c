/*
 * Test target linked against the stand-in libmpi.so.99: waits for GO_FILE,
 * calls MPI_Allreduce COUNT times, then sleeps SLEEP_S seconds (so a tracer
 * can be signalled while it runs) and exits.
 *
 *   standin_rank GO_FILE COUNT SLEEP_S
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, void *datatype, void *op, void *comm);

int main(int argc, char **argv)
{
	double in = 1, out = 0;
	long count;

	if (argc != 4) {
		fprintf(stderr, "usage: %s GO_FILE COUNT SLEEP_S\n", argv[0]);
		return 2;
	}
	count = atol(argv[2]);
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	for (long i = 0; i < count; i++)
		MPI_Allreduce(&in, &out, 1, NULL, NULL, NULL);
	sleep((unsigned)atoi(argv[3]));
	return 0;
}
