/*
 * Test target: loads the real CUDA runtime and NCCL libraries and calls
 * their entry points an exact number of times. Without a GPU or driver the
 * calls fail fast (no device / invalid argument), but they are real calls
 * into the real libraries, so the uprobes on them fire.
 *
 *   gpu_lib_caller GO_FILE LIBCUDART LIBNCCL COUNT
 *
 * Waits for GO_FILE, then calls cudaStreamSynchronize(0),
 * cudaEventSynchronize(0), ncclAllReduce(... comm=NULL ...) and ncclGroupEnd()
 * COUNT times each; prints the return codes of the first calls.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*sync_fn)(void *);
typedef int (*allreduce_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*group_end_fn)(void);

int main(int argc, char **argv)
{
	void *cudart, *nccl;
	sync_fn stream_sync, event_sync;
	allreduce_fn all_reduce;
	group_end_fn group_end;
	long count;

	if (argc != 5) {
		fprintf(stderr, "usage: %s GO_FILE LIBCUDART LIBNCCL COUNT\n", argv[0]);
		return 2;
	}
	cudart = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
	nccl = dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL);
	if (!cudart || !nccl) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 3;
	}
	stream_sync = (sync_fn)dlsym(cudart, "cudaStreamSynchronize");
	event_sync = (sync_fn)dlsym(cudart, "cudaEventSynchronize");
	all_reduce = (allreduce_fn)dlsym(nccl, "ncclAllReduce");
	group_end = (group_end_fn)dlsym(nccl, "ncclGroupEnd");
	if (!stream_sync || !event_sync || !all_reduce || !group_end) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 4;
	}
	count = atol(argv[4]);
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	for (long i = 0; i < count; i++) {
		int a = stream_sync(NULL), b = event_sync(NULL);
		/* count 1024 floats (ncclFloat32 = 7), ncclSum = 0, comm NULL */
		int c = all_reduce(NULL, NULL, 1024, 7, 0, NULL, NULL), d = group_end();

		if (i == 0)
			printf("cudaStreamSynchronize=%d cudaEventSynchronize=%d ncclAllReduce=%d ncclGroupEnd=%d\n",
			       a, b, c, d);
	}
	return 0;
}
