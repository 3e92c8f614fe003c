#!/usr/bin/python3
"""The PyTorch demo workload: a small DistributedDataParallel training job
on the gloo backend (CPU), one process per rank, started with the torchrun
environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) as
torchrun and srun do.

Each step: a batch from the "data path" (one rank can be made to stall
there: --slow-rank, --slow-ms), forward, backward (DDP all-reduces the
gradients through gloo), optimizer step; with --group-size K, a tensor-
parallel-style all-reduce inside groups of K consecutive ranks made with
dist.new_group; then a small world all-reduce on which every rank agrees
to stop together (no rank left waiting in a collective).

With --slow-factor F the slow rank computes F times as long instead of
stalling: after its forward, backward and optimizer step it keeps its CPU
busy for (F - 1) times the CPU time they take without communication,
timed on a copy of the model before the first step (a slower GPU or a throttled CPU, not
a sleep: on a node with fewer cores than ranks a sleeping rank hands its
CPU to the others and is not late).

  slowburn-ddp-workload.py [--slow-rank R] [--slow-ms M | --slow-factor F]
                           [--ramp-s S] [--group-size K] [--seconds S]
                           [--steps N] [--warmup-s W]
"""
import argparse
import copy
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

stop_requested = False


def on_term(signum, frame):
    global stop_requested
    stop_requested = True


def own_compute_s(model, loss_fn, steps=50):
    """The median CPU time of a forward, backward and optimizer step of a
    copy of this model alone (no communication): what --slow-factor
    multiplies. CPU time, so that waiting for a CPU on a busy node neither
    inflates it nor counts towards the extra work."""
    model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    took = []
    for _ in range(steps):
        inputs, targets = torch.randn(32, 64), torch.randint(0, 10, (32,))
        began = time.thread_time()
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()
        optimizer.step()
        took.append(time.thread_time() - began)
    return sorted(took)[steps // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--slow-rank", type=int, default=-1, help="rank that stalls in its data path")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--slow-ms", type=float, default=8.0, help="its stall per step")
    how.add_argument("--slow-factor", type=float, default=0.0,
                     help="instead of stalling, the slow rank computes this many times as long (1.05: 5%% slower)")
    p.add_argument("--ramp-s", type=float, default=0.0, help="grow the stall from 0 over this many seconds")
    p.add_argument("--group-size", type=int, default=0, help="all-reduce in groups of K consecutive ranks too")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=-1)
    p.add_argument("--warmup-s", type=float, default=0.0, help="wait before the first collective")
    args = p.parse_args()
    if args.slow_factor and args.slow_factor < 1:
        p.error("--slow-factor must be 1 or more (1.05: 5% slower)")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    torch.set_num_threads(1)  # ranks share the machine's cores, as on a real node's GPUs' hosts
    torch.manual_seed(0)

    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    my_group = None
    if args.group_size > 1:
        # Every rank creates every group, in the same order (dist.new_group is collective).
        for start in range(0, world, args.group_size):
            members = list(range(start, min(start + args.group_size, world)))
            group = dist.new_group(members)
            if rank in members:
                my_group = group
    if args.warmup_s > 0:
        time.sleep(args.warmup_s)

    local = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss_fn = nn.CrossEntropyLoss()
    compute_s = own_compute_s(local, loss_fn) if rank == args.slow_rank and args.slow_factor > 0 else 0.0
    model = DistributedDataParallel(local)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.monotonic()
    step = 0
    while args.steps < 0 or step < args.steps:
        inputs, targets = torch.randn(32, 64), torch.randint(0, 10, (32,))
        slow = rank == args.slow_rank
        share = min(1.0, (time.monotonic() - start) / args.ramp_s) if slow and args.ramp_s > 0 else 1.0
        if slow and args.slow_factor <= 0:
            time.sleep(args.slow_ms * share / 1000.0)  # the data path stalls
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()
        optimizer.step()
        if slow and args.slow_factor > 0:
            until = time.thread_time() + (args.slow_factor - 1) * share * compute_s
            while time.thread_time() < until:  # computes longer: its own CPU time
                pass
        if my_group is not None:
            dist.all_reduce(torch.ones(16), group=my_group)
        done = stop_requested or (rank == 0 and time.monotonic() - start > args.seconds)
        flag = torch.tensor([1.0 if done else 0.0])
        dist.all_reduce(flag)
        step += 1
        if flag.item() > 0:
            break
    if rank == 0:
        print(f"workload done: {step} steps in {time.monotonic() - start:.1f} s", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
