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

  slowburn-ddp-workload.py [--slow-rank R] [--slow-ms M] [--ramp-s S]
                           [--group-size K] [--seconds S] [--steps N]
                           [--warmup-s W]
"""
import argparse
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--slow-rank", type=int, default=-1, help="rank that stalls in its data path")
    p.add_argument("--slow-ms", type=float, default=8.0, help="its stall per step")
    p.add_argument("--ramp-s", type=float, default=0.0, help="grow the stall from 0 over this many seconds")
    p.add_argument("--group-size", type=int, default=0, help="all-reduce in groups of K consecutive ranks too")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=-1)
    p.add_argument("--warmup-s", type=float, default=0.0, help="wait before the first collective")
    args = p.parse_args()

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

    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    start = time.monotonic()
    step = 0
    while args.steps < 0 or step < args.steps:
        inputs, targets = torch.randn(32, 64), torch.randint(0, 10, (32,))
        if rank == args.slow_rank:
            share = min(1.0, (time.monotonic() - start) / args.ramp_s) if args.ramp_s > 0 else 1.0
            time.sleep(args.slow_ms * share / 1000.0)  # the data path stalls
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()
        optimizer.step()
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
