/*
 * A stand-in "libmpi.so.99" that exports MPI_Allreduce only (OpenMPI's
 * signature, opaque handles as pointers). A process that loads it looks like
 * an MPI rank with a library missing most MPI symbols: the probes for those
 * must report "symbol missing" while mpi.allreduce attaches.
 */
#include <stddef.h>

__attribute__((visibility("default"), noinline)) int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
								   void *datatype, void *op, void *comm)
{
	asm volatile("" ::"r"(sendbuf), "r"(recvbuf), "r"(datatype), "r"(op), "r"(comm) : "memory");
	return count < 0;
}
