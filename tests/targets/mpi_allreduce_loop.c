/*
 * Test target: an MPI job whose ranks wait for GO_FILE, then call
 * MPI_Allreduce exactly COUNT times and MPI_Barrier once, then exit.
 *
 *   mpirun -np N mpi_allreduce_loop GO_FILE COUNT
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, go = 0;
	long count;
	double in = 1, out = 0;

	MPI_Init(&argc, &argv);
	if (argc != 3) {
		fprintf(stderr, "usage: %s GO_FILE COUNT\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	count = atol(argv[2]);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	/* Only rank 0 polls the file; the others learn it from a Bcast, which
	 * is not a probe the tests count. */
	while (!go) {
		if (rank == 0)
			go = access(argv[1], F_OK) == 0;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
		if (!go)
			usleep(2000);
	}
	for (long i = 0; i < count; i++)
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
