#!/usr/bin/python3
"""The job's slowdown under `slowburn probe`, measured inside one job.

Separate jobs differ by a few percent on this VM for reasons of their own
(where the scheduler puts four ranks on two CPUs, MPI's start-up), more than
the cost to be measured. So one long demo job runs here, rank 0 printing its
step count every 0.25 s (`--progress-s`), and the service is started and
stopped beside it: phases without a service alternate with phases under each
configuration. A phase's first seconds (the service starting, finding the
ranks, attaching; or detaching) are not measured. Each configuration's
phase is compared with the mean of the no-service phases just before and
after it, which cancels the job's slow drift; the ratio reported is the
median of those pairs, with their spread.

  bench/alternate.py BUILD [--cycles N] [--phase-s S] [--settle-s S]
                     [--config 'LABEL=PROBE ARGS' ...]

--config replaces the default configurations (repeatable): LABEL names the
row, the rest are `slowburn probe` arguments, split on spaces. Example, the
steady cost of one probe attached against both, without any toggle:
  --config 'both=--overhead-budget 0 --no-sampling'
  --config 'allgather only=--overhead-budget 0 --no-sampling --probe mpi.allgather'
ARGS `none` starts no service: a placebo row, measured as the others are,
whose spread about 1.000x is what the run resolves. ARGS `toggles:HZ` runs
BUILD/bench/toggle_cost instead of a service: the probe pair attached at a
function the job never calls (MPI_Comm_spawn) in every rank and detached
again, HZ times a second, so the row's slowdown is the toggles' alone; the
run then prints what one link set's toggle cost the job (RESULTS 8e).

Prints a Markdown table (bench/RESULTS.md section 8c). Needs root, mpirun.
"""
import argparse
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

CONFIGS = [
    ("budget off, every call trapped", ["--overhead-budget", "0", "--no-sampling"]),
    ("default (sampling, budget 1%)", []),
    ("placebo (no service)", None),
]


class Progress:
    """Rank 0's (step, monotonic seconds) lines, read as they come."""

    def __init__(self, stream):
        self.points = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            m = re.match(r"progress (\d+) ([\d.]+)", line)
            if m:
                with self.lock:
                    self.points.append((int(m.group(1)), float(m.group(2))))

    def rate(self, t0, t1):
        """Steps per second between the first point at/after t0 and the last at/before t1."""
        with self.lock:
            inside = [p for p in self.points if t0 <= p[1] <= t1]
        if len(inside) < 2:
            return None
        (s0, a), (s1, b) = inside[0], inside[-1]
        return (s1 - s0) / (b - a)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hits(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return 0.0
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("slowburn_probe_hits_total"))


def parse_config(args):
    """None: no service; ("toggles", HZ): the toggler; else slowburn probe's arguments."""
    args = args.strip()
    if args == "none":
        return None
    if args.startswith("toggles:"):
        fields = args.split(":")
        return ("toggles", float(fields[1]), fields[2] if len(fields) > 2 else "MPI_Comm_spawn")
    return args.split()


def job_ranks(workload):
    """The demo job's rank pids, and the libmpi they mapped."""
    pids, library = [], None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{entry}/exe") != os.path.realpath(workload):
                continue
            with open(f"/proc/{entry}/maps") as f:
                for line in f:
                    if "libmpi.so" in line:
                        library = line.split()[-1]
            pids.append(entry)
        except OSError:
            continue
    return pids, library


def start_service(slowburn, port, args, log):
    p = subprocess.Popen([slowburn, "probe", "--listen", f"127.0.0.1:{port}", *args],
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1)
            return p
        except OSError:
            if p.poll() is not None:
                sys.exit(f"bench: slowburn probe exited ({p.returncode}); see {log.name}")
            time.sleep(0.1)
    sys.exit(f"bench: slowburn probe did not answer on port {port}; see {log.name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--cycles", type=int, default=6)
    ap.add_argument("--phase-s", type=float, default=16)
    ap.add_argument("--settle-s", type=float, default=6)
    ap.add_argument("--port", type=int, default=9497)
    ap.add_argument("--config", action="append", default=[], metavar="LABEL=ARGS")
    ap.add_argument("--dump", metavar="FILE",
                    help="write rank 0's progress points and every phase's bounds there (JSON), for a closer look")
    ap.add_argument("--bind", choices=["core", "none"], default="none",
                    help="core: ranks pinned round-robin to the cores (as mpirun does with a core a rank); none: "
                         "the scheduler places them (the pairs spread about as much either way: RESULTS 8c)")
    a = ap.parse_args()
    configs = CONFIGS
    if a.config:
        try:
            configs = [(label, parse_config(args)) for label, args in (c.split("=", 1) for c in a.config)]
        except ValueError:
            ap.error("--config takes LABEL=ARGS (the label, '=', then slowburn probe's arguments)")
    if not 0 < a.settle_s < a.phase_s:
        ap.error("--settle-s must be above 0 and below --phase-s: a phase is measured after it settles")
    slowburn = os.path.join(a.build, "slowburn")
    workload = os.path.join(a.build, "libexec", "slowburn-mpi-workload")
    log = open(os.path.join(a.build, "alternate-service.log"), "w")
    binding = (["--map-by", "core:oversubscribe", "--bind-to", "core:overload-allowed"] if a.bind == "core"
               else ["--bind-to", "none"])
    job = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe"] + binding + ["-np", "4",
                            workload, "--compute-us", "3000", "--seconds", "1000000", "--progress-s", "0.25"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    progress = Progress(job.stdout)
    time.sleep(5)  # MPI start-up, the compute calibration

    def phase(args):
        """One phase: the service (or none) over phase_s; its steady rate and costs."""
        toggler = None
        if isinstance(args, tuple):
            pids, library = job_ranks(workload)
            if len(pids) != 4 or not library:
                sys.exit(f"bench: the job's ranks or their libmpi not found ({pids}, {library})")
            toggler = subprocess.Popen([os.path.join(a.build, "bench", "toggle_cost"), library, args[2],
                                        str(args[1]), *pids], stdout=subprocess.PIPE, text=True)
        service = start_service(slowburn, a.port, args, log) if isinstance(args, list) else None
        start = time.monotonic()
        time.sleep(a.settle_s)
        cpu0 = cpu_seconds(service.pid) if service else 0
        h0 = hits(a.port) if service else 0
        t0 = time.monotonic()
        time.sleep(start + a.phase_s - t0)
        t1 = time.monotonic()
        cpu1 = cpu_seconds(service.pid) if service else 0
        h1 = hits(a.port) if service else 0
        if service:
            service.send_signal(signal.SIGTERM)
            service.wait()
        if toggler:
            toggler.send_signal(signal.SIGTERM)
            out, _ = toggler.communicate()
            m = re.search(r"toggles (\d+) cpu_s ([\d.]+) wall_s ([\d.]+)", out or "")
            if not m:
                sys.exit(f"bench: toggle_cost failed ({toggler.returncode}): {out}")
            # Over the whole phase: the toggles' rate is steady from the start.
            cpu1 = float(m.group(2)) / int(m.group(1)) if int(m.group(1)) else 0  # CPU seconds a toggle
            h1 = int(m.group(1)) / float(m.group(3))  # link-set toggles a second
            return progress.rate(t0, t1), cpu1, h1
        if job.poll() is not None:
            sys.exit("bench: the job exited during the run")
        phases.append({"config": args, "start": start, "t0": t0, "t1": t1})
        return progress.rate(t0, t1), (cpu1 - cpu0) / (t1 - t0), (h1 - h0) / (t1 - t0)

    phases = []
    ratios = {name: [] for name, _ in configs}
    cpu = {name: [] for name, _ in configs}
    calls = {name: [] for name, _ in configs}
    rates_none = []
    before, _, _ = phase(None)
    rates_none.append(before)
    for c in range(a.cycles):
        # The order turns each cycle, so no configuration always follows another.
        order = configs[c % len(configs):] + configs[:c % len(configs)]
        for name, args in order:
            rate, cpu_s, calls_s = phase(args)
            after, _, _ = phase(None)
            rates_none.append(after)
            ratios[name].append(((before + after) / 2) / rate)
            cpu[name].append(cpu_s)
            calls[name].append(calls_s)
            before = after
    os.killpg(job.pid, signal.SIGTERM)
    job.wait()
    if a.dump:
        with open(a.dump, "w") as f:
            json.dump({"progress": progress.points, "phases": phases}, f)

    print(f"| configuration | job slowdown, median of {a.cycles} pairs | geometric mean (95% CI) | pairs' range | "
          "calls trapped /s | service CPU s/s |")
    print("|---|---|---|---|---|---|")
    print(f"| no service | 1.000x | - | steps/s {min(rates_none):.1f}-{max(rates_none):.1f} | - | - |")
    for name, _ in configs:
        r = ratios[name]
        mean, low, high = mean_ci(r)
        print(f"| {name} | {statistics.median(r):.4f}x | {mean:.4f}x ({low:.4f}-{high:.4f}) | {min(r):.4f}-{max(r):.4f} | "
              f"{statistics.median(calls[name]):.0f} | {statistics.median(cpu[name]):.4f} |")
    print()
    for name, args in configs:
        if not isinstance(args, tuple):
            continue
        mean, low, high = mean_ci(ratios[name])
        rate = statistics.median(calls[name])
        print(f"{name}: {rate:.1f} link-set toggles a second (attach and detach, one process each) slowed the job "
              f"{(mean - 1) * 100:.2f}% (95% CI {(low - 1) * 100:.2f} to {(high - 1) * 100:.2f}): "
              f"{(mean - 1) / rate * 1e3:.2f} ms of the job's time a toggle "
              f"({(low - 1) / rate * 1e3:.2f} to {(high - 1) / rate * 1e3:.2f}); "
              f"toggle_cost's own CPU {statistics.median(cpu[name]) * 1e3:.2f} ms a toggle")
    # Each configuration against the first, cycle by cycle: both measured
    # against their own neighbours within the same minute or two.
    first = configs[0][0]
    for name, _ in configs[1:]:
        mean, low, high = mean_ci([x / y for x, y in zip(ratios[name], ratios[first])])
        print(f"{name} against {first}, cycle by cycle: {mean:.4f}x (95% CI {low:.4f}-{high:.4f})")
    print()
    print("Pairs (no service / configuration, steps/s ratio): " +
          "; ".join(f"{n}: " + " ".join(f"{x:.4f}" for x in ratios[n]) for n, _ in configs))


def mean_ci(ratios, resamples=10000):
    """Geometric mean of the ratios, and a bootstrap 95% interval for it
    (percentiles of resampled means; a fixed seed, so a rerun of the same
    numbers prints the same interval)."""
    logs = [math.log(x) for x in ratios]
    rng = random.Random(1)
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    return (math.exp(statistics.fmean(logs)), math.exp(means[int(0.025 * resamples)]),
            math.exp(means[int(0.975 * resamples) - 1]))

if __name__ == "__main__":
    main()
