/*
 * A stand-in for NCCL's public communicator API, with nccl.h's exact
 * signatures (so the same argument slots: ncclUniqueId, 128 bytes passed by
 * value, lives at 8(%rsp) of ncclCommInitRank and takes no register):
 * ncclGetUniqueId, ncclCommInitRank[Config], ncclCommSplit, ncclCommDestroy,
 * ncclCommAbort, ncclAllReduce, ncclAllGather, ncclBroadcast,
 * ncclReduceScatter, ncclSend, ncclRecv, ncclGroupStart/End.
 *
 * Collectives return at once, as NCCL's do (they only enqueue). What makes
 * the ranks wait for each other is sb_stream_sync(comm), the stand-in's
 * cudaStreamSynchronize: it returns once every member of the communicator
 * has enqueued as many collectives as the caller. Members meet through a
 * shared-memory segment named from the unique id (and a split's parent,
 * order and color), one counter per rank. Communicator objects are never
 * freed, so a re-created communicator has a new address, as a fresh
 * allocation usually does.
 *
 * Built as ncclapi/libnccl.so.2.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NCCL_UNIQUE_ID_BYTES 128
#define MAX_RANKS 64

typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef void *cudaStream_t;
typedef struct ncclConfig ncclConfig_t;

struct shared {
	volatile long enqueued[MAX_RANKS];
};

typedef struct ncclComm {
	char name[96];
	int rank, nranks;
	int splits; /* splits made from it: the order part of a child's name */
	long mine;  /* collectives this rank enqueued */
	struct shared *shm;
} *ncclComm_t;

static uint64_t fnv1a(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static ncclComm_t open_comm(const char *name, int rank, int nranks)
{
	ncclComm_t comm = calloc(1, sizeof(*comm));
	int fd;

	snprintf(comm->name, sizeof(comm->name), "%s", name);
	comm->rank = rank;
	comm->nranks = nranks;
	fd = shm_open(name, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct shared)) != 0) {
		perror("shm_open");
		exit(3);
	}
	comm->shm = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return comm;
}

__attribute__((noinline)) ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	uint64_t seed = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);

	memset(id, 0, sizeof(*id));
	memcpy(id->internal, &seed, sizeof(seed));
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	char name[96];

	if (nranks <= 0 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
		return 4; /* ncclInvalidArgument */
	snprintf(name, sizeof(name), "/sb-nccl-%016llx", (unsigned long long)fnv1a(id.internal, sizeof(id.internal)));
	*comm = open_comm(name, rank, nranks);
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
							       ncclConfig_t *config)
{
	(void)config;
	return ncclCommInitRank(comm, nranks, id, rank);
}

/* Members of one color, ranked by key then parent rank: here the test
 * gives keys that make that the parent rank's order. */
__attribute__((noinline)) ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
						      ncclConfig_t *config)
{
	char name[96];
	int members = 0, rank = 0;

	(void)config;
	comm->splits++;
	if (color < 0) {
		*newcomm = NULL;
		return 0;
	}
	/* The test splits by rank % 2: members are the parent ranks of that parity. */
	for (int r = 0; r < comm->nranks; r++)
		if (r % 2 == color % 2) {
			if (r < comm->rank)
				rank++;
			members++;
		}
	(void)key;
	snprintf(name, sizeof(name), "%.60s-s%dc%d", comm->name, comm->splits, color);
	*newcomm = open_comm(name, rank, members);
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (comm)
		munmap((void *)comm->shm, sizeof(struct shared));
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return ncclCommDestroy(comm);
}

static ncclResult_t enqueue(ncclComm_t comm)
{
	if (!comm)
		return 4;
	comm->mine++;
	__atomic_store_n(&comm->shm->enqueued[comm->rank], comm->mine, __ATOMIC_RELEASE);
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
						      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
						      cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)stream;
	return enqueue(comm);
}

__attribute__((noinline)) ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
						      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)sendcount, (void)datatype, (void)stream;
	return enqueue(comm);
}

__attribute__((noinline)) ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
						      ncclDataType_t datatype, int root, ncclComm_t comm,
						      cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)root, (void)stream;
	return enqueue(comm);
}

__attribute__((noinline)) ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
							  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
							  cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)recvcount, (void)datatype, (void)op, (void)stream;
	return enqueue(comm);
}

__attribute__((noinline)) ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
						 ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)count, (void)datatype, (void)peer, (void)comm, (void)stream;
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
						 ncclComm_t comm, cudaStream_t stream)
{
	(void)recvbuff, (void)count, (void)datatype, (void)peer, (void)comm, (void)stream;
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclGroupStart(void)
{
	return 0;
}

__attribute__((noinline)) ncclResult_t ncclGroupEnd(void)
{
	return 0;
}

/* The stand-in's cudaStreamSynchronize: every member has enqueued as many. */
void sb_stream_sync(ncclComm_t comm)
{
	for (;;) {
		int behind = 0;

		for (int r = 0; r < comm->nranks; r++)
			if (__atomic_load_n(&comm->shm->enqueued[r], __ATOMIC_ACQUIRE) < comm->mine)
				behind = 1;
		if (!behind)
			return;
		usleep(20);
	}
}

/* Removes the shared segments (the test's cleanup). */
void sb_comm_unlink(ncclComm_t comm)
{
	if (comm)
		shm_unlink(comm->name);
}
