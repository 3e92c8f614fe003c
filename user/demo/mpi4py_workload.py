#!/usr/bin/python3
"""A Python MPI job (mpi4py on Open MPI), shaped like a communication-bound
training step: a little compute, then comm.Allreduce of a buffer of doubles.
The ranks agree to stop in the same step (the stop flag rides on a second
all-reduce), on SIGTERM or after --seconds, so none is left waiting.

  mpirun -np 4 /usr/bin/python3 slowburn-mpi4py-workload.py [--seconds S]
         [--compute-us C] [--doubles N]
"""
import argparse
import array
import signal
import time

from mpi4py import MPI

stop_requested = False


def on_term(signum, frame):
    global stop_requested
    stop_requested = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--compute-us", type=float, default=500)
    parser.add_argument("--doubles", type=int, default=4096)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    grads = array.array("d", [float(rank)]) * args.doubles
    reduced = array.array("d", [0.0]) * args.doubles
    flag, flags = array.array("d", [0.0]), array.array("d", [0.0])
    start = time.monotonic()
    steps = 0
    while True:
        until = time.perf_counter() + args.compute_us / 1e6
        while time.perf_counter() < until:
            pass
        comm.Allreduce([grads, MPI.DOUBLE], [reduced, MPI.DOUBLE], op=MPI.SUM)
        flag[0] = 1.0 if stop_requested or (rank == 0 and time.monotonic() - start > args.seconds) else 0.0
        comm.Allreduce([flag, MPI.DOUBLE], [flags, MPI.DOUBLE], op=MPI.SUM)
        steps += 1
        if flags[0] > 0:
            break
    if rank == 0:
        print(f"workload done: {steps} steps in {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
