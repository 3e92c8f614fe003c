/*
 * The demo workload: a barrier-synchronised OpenMPI job shaped like a
 * data-parallel training step: compute, then MPI_Allgather, then
 * MPI_Allreduce. One rank can be given more compute per step (--slow-rank,
 * --slowdown): the straggler slowburn must name.
 *
 * Compute is a fixed amount of arithmetic, the same on every rank (rank 0
 * calibrates it and broadcasts it), scaled on the slow rank: a slower rank
 * does more work, as a rank on a throttled or contended device does.
 * --ramp-s grows the slow rank's extra work from nothing over that many
 * seconds (the seed's "Operation Slowburn": a slow onset no alert sees).
 *
 * --tp K lays the ranks out as Megatron-style jobs do (MPI_Comm_split): a
 * step is then compute, MPI_Allreduce inside the tensor-parallel group of K
 * consecutive ranks, MPI_Allgather inside the data-parallel group of ranks
 * K apart, and the world MPI_Allreduce that carries the stop flag.
 *
 *   slowburn-mpi-workload [--slow-rank R] [--slowdown F] [--ramp-s S]
 *                         [--compute-us C] [--tp K] [--seconds S]
 *                         [--steps N] [--warmup-s W] [--progress-s P]
 *                         [--wait-file F] [--init-wait-file F]
 *                         [--gradient-bytes B] [--spare-comms N]
 *
 * --spare-comms N duplicates MPI_COMM_WORLD N times before the --tp split
 * and keeps the copies (frameworks make many groups): the split's
 * communicators then sit where a library puts its later ones (MPICH: past
 * its 8 preallocated objects, in a heap block).
 *
 * --gradient-bytes B all-reduces B bytes of "gradients" on the world after
 * each step's compute: with little compute the job is communication-bound,
 * the case where a rank that arrives on time can still hold everyone up
 * inside the collective (its CPU throttled while it drives its part).
 *
 * SIGUSR1 stalls the rank that receives it between two steps, outside any
 * collective, until SIGUSR1 again or SIGTERM: a rank stuck in its own code (a
 * data loader, a deadlocked thread) while the others wait in the next
 * collective, the hang slowburn must name.
 *
 * --warmup-s waits after MPI_Init before the first collective, so a tracer
 * that discovers processes on a timer (slowburn probe) sees every call: the
 * soak benchmark compares its counts with the steps this job reports.
 *
 * --wait-file F waits after MPI_Init (and --warmup-s) until F exists, with
 * no MPI call meanwhile: a test starts its tracer first, then lets the job
 * talk. --init-wait-file F waits the same way before MPI_Init, where Open
 * MPI's UCX connects the ranks on one node (their RDMA QPs are created and
 * brought up there): a tracer attached first sees that too.
 *
 * Four faults the hang tests inject at step S (0 = off), each in one rank:
 *   --freeze-inside R:S  rank R stops itself (SIGSTOP, 50 ms into its
 *       MPI_Allgather of step S: the others enter it 300 ms late, so it is
 *       inside when it stops, having completed step S-1);
 *   --freeze-outside R:S rank R stops itself (SIGSTOP) before that
 *       MPI_Allgather, outside any collective (a rank stopped by a debugger
 *       or a cgroup freezer in its own code);
 *   --read-pipe R:S      rank R reads a pipe nobody writes before that
 *       MPI_Allgather (a data loader waiting for input that never comes);
 *   --mismatch R:S       rank R calls MPI_Bcast (root 0) where the others
 *       call that MPI_Allgather (the ranks disagree on the collective).
 *
 * --progress-s P makes rank 0 print "progress STEP MONOTONIC_S" every P
 * seconds: bench/alternate.py measures the step rate of one long job while it
 * turns slowburn on and off, so the comparison carries no job-to-job noise.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested, stall_requested;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_stall(int sig)
{
	(void)sig;
	stall_requested = !stall_requested;
}

static void on_alarm(int sig)
{
	(void)sig;
	kill(getpid(), SIGSTOP);
}

/* "R:S" -> rank and step; step 0 when absent or malformed. */
static void parse_fault(const char *arg, int *rank, long *step)
{
	if (sscanf(arg, "%d:%ld", rank, step) != 2)
		*step = 0;
}

static void sleep_s(double s)
{
	struct timespec pause = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&pause, NULL);
}

static void stall_while_asked(void)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	while (stall_requested && !stop_requested)
		nanosleep(&tick, NULL);
}

/* Until PATH exists (or SIGTERM), without any MPI call. */
static void wait_for_file(const char *path)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	while (access(path, F_OK) != 0 && !stop_requested)
		nanosleep(&tick, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A dependent chain the compiler cannot fold away. */
static uint64_t work(uint64_t iterations, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (uint64_t i = 0; i < iterations; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Iterations per microsecond of CPU time, not of wall time: the other ranks
 * busy-poll in MPI_Bcast meanwhile, and a rate measured on half a core would
 * make every step half as long as asked on a quiet machine. */
static uint64_t calibrate_iterations_per_us(void)
{
	uint64_t n = 1 << 16;
	double elapsed;
	volatile uint64_t sink;

	for (;;) {
		double start = cpu_s();

		sink = work(n, 7);
		elapsed = cpu_s() - start;
		if (elapsed > 0.02)
			break;
		n *= 2;
	}
	(void)sink;
	return (uint64_t)(n / (elapsed * 1e6)) + 1;
}

int main(int argc, char **argv)
{
	int slow_rank = -1, rank, size;
	double slowdown = 1.0, seconds = 60, compute_us = 3000, warmup_s = 0, ramp_s = 0, progress_s = 0;
	int tp = 0, spare_comms = 0;
	MPI_Comm tp_comm = MPI_COMM_NULL, dp_comm = MPI_COMM_NULL;
	long steps = -1;
	const char *wait_file = NULL, *init_wait_file = NULL;
	uint64_t per_us, iterations, acc = 0;
	int freeze_rank = -1, outside_rank = -1, pipe_rank = -1, mismatch_rank = -1;
	long freeze_step = 0, outside_step = 0, pipe_step = 0, mismatch_step = 0;
	long gradient_bytes = 0;
	double *gradient = NULL, *reduced = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--slow-rank") && i + 1 < argc)
			slow_rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--slowdown") && i + 1 < argc)
			slowdown = atof(argv[++i]);
		else if (!strcmp(argv[i], "--compute-us") && i + 1 < argc)
			compute_us = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--warmup-s") && i + 1 < argc)
			warmup_s = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ramp-s") && i + 1 < argc)
			ramp_s = atof(argv[++i]);
		else if (!strcmp(argv[i], "--progress-s") && i + 1 < argc)
			progress_s = atof(argv[++i]);
		else if (!strcmp(argv[i], "--tp") && i + 1 < argc)
			tp = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--wait-file") && i + 1 < argc)
			wait_file = argv[++i];
		else if (!strcmp(argv[i], "--init-wait-file") && i + 1 < argc)
			init_wait_file = argv[++i];
		else if (!strcmp(argv[i], "--freeze-inside") && i + 1 < argc)
			parse_fault(argv[++i], &freeze_rank, &freeze_step);
		else if (!strcmp(argv[i], "--read-pipe") && i + 1 < argc)
			parse_fault(argv[++i], &pipe_rank, &pipe_step);
		else if (!strcmp(argv[i], "--freeze-outside") && i + 1 < argc)
			parse_fault(argv[++i], &outside_rank, &outside_step);
		else if (!strcmp(argv[i], "--mismatch") && i + 1 < argc)
			parse_fault(argv[++i], &mismatch_rank, &mismatch_step);
		else if (!strcmp(argv[i], "--gradient-bytes") && i + 1 < argc)
			gradient_bytes = atol(argv[++i]);
		else if (!strcmp(argv[i], "--spare-comms") && i + 1 < argc)
			spare_comms = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--slow-rank R] [--slowdown F] [--ramp-s S] [--compute-us C] "
					"[--tp K] [--seconds S] [--steps N] [--warmup-s W] [--progress-s P] "
					"[--wait-file F] [--init-wait-file F] [--freeze-inside R:S] [--freeze-outside R:S] "
					"[--read-pipe R:S] [--mismatch R:S] [--gradient-bytes B] [--spare-comms N]\n", argv[0]);
			return 2;
		}
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGUSR1, on_stall);

	if (init_wait_file)
		wait_for_file(init_wait_file);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm *spare = calloc(spare_comms > 0 ? (size_t)spare_comms : 1, sizeof(MPI_Comm));

	for (int i = 0; i < spare_comms; i++)
		MPI_Comm_dup(MPI_COMM_WORLD, &spare[i]);
	if (tp > 1) {
		MPI_Comm_split(MPI_COMM_WORLD, rank / tp, rank, &tp_comm);
		MPI_Comm_split(MPI_COMM_WORLD, rank % tp, rank, &dp_comm);
	}
	if (warmup_s > 0) {
		struct timespec pause = { (time_t)warmup_s, (long)((warmup_s - (time_t)warmup_s) * 1e9) };

		nanosleep(&pause, NULL);
	}
	if (wait_file)
		wait_for_file(wait_file);


	per_us = rank == 0 ? calibrate_iterations_per_us() : 0;
	MPI_Bcast(&per_us, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	iterations = (uint64_t)(per_us * compute_us);

	double start = now_s(), next_progress = start + progress_s;
	double *gathered = calloc((size_t)size, sizeof(double));
	size_t gradient_n = gradient_bytes > 0 ? (size_t)gradient_bytes / sizeof(double) : 0;

	if (gradient_n) {
		gradient = calloc(gradient_n, sizeof(double));
		reduced = calloc(gradient_n, sizeof(double));
	}
	long step;
	for (step = 0; steps < 0 || step < steps; step++) {
		double mine, sums[2], local[2], part;
		uint64_t todo = iterations;

		stall_while_asked();
		if (rank == slow_rank) {
			double share = ramp_s > 0 ? (now_s() - start) / ramp_s : 1.0;

			todo = (uint64_t)(iterations * (1.0 + (slowdown - 1.0) * (share < 1.0 ? share : 1.0)));
		}
		acc ^= work(todo, acc + (uint64_t)step);
		mine = (double)(acc & 0xffff);
		/* A communication-bound step: the gradients' all-reduce dominates it. */
		if (gradient_n) {
			gradient[step % gradient_n] = mine;
			MPI_Allreduce(gradient, reduced, (int)gradient_n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		}
		if (tp > 1) {
			MPI_Allreduce(&mine, &part, 1, MPI_DOUBLE, MPI_SUM, tp_comm);
			MPI_Allgather(&part, 1, MPI_DOUBLE, gathered, 1, MPI_DOUBLE, dp_comm);
		} else if (mismatch_step && step == mismatch_step && rank == mismatch_rank) {
			MPI_Bcast(&mine, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		} else {
			if (freeze_step && step == freeze_step) {
				if (rank == freeze_rank) {
					struct itimerval in50ms = { { 0, 0 }, { 0, 50 * 1000 } };

					signal(SIGALRM, on_alarm);
					setitimer(ITIMER_REAL, &in50ms, NULL);
				} else {
					sleep_s(0.3);
				}
			}
			if (outside_step && step == outside_step && rank == outside_rank)
				kill(getpid(), SIGSTOP);
			if (pipe_step && step == pipe_step && rank == pipe_rank) {
				int fds[2];
				char c;

				if (pipe(fds) == 0)
					(void)!read(fds[0], &c, 1);
			}
			MPI_Allgather(&mine, 1, MPI_DOUBLE, gathered, 1, MPI_DOUBLE, MPI_COMM_WORLD);
		}
		/* Any rank asked to stop (or rank 0's clock ran out): everyone
		 * learns it from the same Allreduce and leaves in the same step, so
		 * no rank is left waiting in a collective. */
		local[0] = gathered[0];
		local[1] = stop_requested || (rank == 0 && now_s() - start > seconds);
		MPI_Allreduce(local, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (sums[1] > 0) {
			step++;
			break;
		}
		if (rank == 0 && progress_s > 0 && now_s() >= next_progress) {
			printf("progress %ld %.6f\n", step + 1, now_s());
			fflush(stdout);
			next_progress += progress_s;
		}
	}
	if (rank == 0)
		printf("workload done: %ld steps in %.1f s\n", step, now_s() - start);
	free(gathered);
	free(gradient);
	free(reduced);
	if (tp > 1) {
		MPI_Comm_free(&tp_comm);
		MPI_Comm_free(&dp_comm);
	}
	for (int i = 0; i < spare_comms; i++)
		MPI_Comm_free(&spare[i]);
	free(spare);
	MPI_Finalize();
	return 0;
}
