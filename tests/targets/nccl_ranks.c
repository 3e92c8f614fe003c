/*
 * One rank of a job on the NCCL stand-in (ncclapi/libnccl.so.2), once
 * GO_FILE exists: a world communicator from ncclCommInitRank, pairs split
 * from it by parity, STEPS steps of compute then an all-reduce on each
 * (each followed by the stand-in's stream synchronize), then the pairs
 * destroyed and split again for STEPS/4 more steps on them.
 *
 *   nccl_ranks GO_FILE ID_HEX RANK NRANKS STEPS SLOW_RANK SLOW_US
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	char internal[128];
} ncclUniqueId;
typedef struct ncclComm *ncclComm_t;
typedef struct ncclConfig ncclConfig_t;

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
int ncclCommDestroy(ncclComm_t comm);
int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, ncclComm_t comm, void *stream);
void sb_stream_sync(ncclComm_t comm);
void sb_comm_unlink(ncclComm_t comm);

static void step(ncclComm_t comm, float *buf, useconds_t compute_us)
{
	usleep(compute_us);
	ncclAllReduce(buf, buf, 4, 7 /* ncclFloat32 */, 0 /* ncclSum */, comm, NULL);
	sb_stream_sync(comm);
}

int main(int argc, char **argv)
{
	ncclUniqueId id;
	ncclComm_t world, pair, again;
	float buf[4] = { 0 };

	if (argc != 8) {
		fprintf(stderr, "usage: %s GO_FILE ID_HEX RANK NRANKS STEPS SLOW_RANK SLOW_US\n", argv[0]);
		return 2;
	}
	int rank = atoi(argv[3]), nranks = atoi(argv[4]), steps = atoi(argv[5]), slow = atoi(argv[6]);
	useconds_t compute = 1000 + (rank == slow ? (useconds_t)atoi(argv[7]) : 0);

	memset(&id, 0, sizeof(id));
	for (size_t i = 0; i < 16 && argv[2][2 * i] && argv[2][2 * i + 1]; i++) {
		unsigned byte;

		sscanf(argv[2] + 2 * i, "%2x", &byte);
		id.internal[i] = (char)byte;
	}
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	if (ncclCommInitRank(&world, nranks, id, rank) != 0 || ncclCommSplit(world, rank % 2, rank, &pair, NULL) != 0)
		return 1;
	for (int s = 0; s < steps; s++) {
		step(world, buf, compute);
		step(pair, buf, 0);
	}
	ncclCommDestroy(pair);
	if (ncclCommSplit(world, rank % 2, rank, &again, NULL) != 0)
		return 1;
	for (int s = 0; s < steps / 4; s++)
		step(again, buf, compute);
	sb_stream_sync(world);
	sb_comm_unlink(pair);
	sb_comm_unlink(again);
	sb_comm_unlink(world);
	ncclCommDestroy(again);
	ncclCommDestroy(world);
	return 0;
}
