#!/usr/bin/env python3
"""The slow burn's sensitivity tables (bench/RESULTS.md): synthetic jobs of R
ranks (8 per node, 50 ms steps, 1% compute noise, node clocks skewed),
written through the tracer's own Recorder by build/bench/synth_recordings
and judged by `slowburn analyze`: who is named, by which test, at what
cost, and how long into the job it was found (the first finding naming the
slow rank: its `found_at`, on the reference node's clock, less the job's
first call there).

  bench/sensitivity.py [BUILD] [SECONDS] [TABLES]     (make bench: SECONDS 300)

TABLES, comma-separated (default: constant,ramp,healthy,rates):
  constant  a rank S times slower from the start, one seed a cell;
  ramp      a rank ramping from 1.00x to S over 2*SECONDS (the slowdown it
            had reached when found), at 8 and 64 ranks;
  healthy   healthy jobs (no slow rank), six seeds, drifting clocks: every
            finding there is a false one;
  rates     detection rates: ten seeds a cell, 8 and 64 ranks;
  ramp512   the ramps at 512 ranks (~3-8 min);
  day       one continuous job of 64 ranks, 86,400 s of 50 ms steps (24.6 h
            with the waits for the slowest), clocks drifting +-50
            ppm, rank 0 doing 0.5% more work every step (healthy
            structure): its findings are false ones (~12 min, ~5 GB of
            recordings in the temporary folder)."""
import json
import pathlib
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build")
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 300
tables = (sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else "constant,ramp,healthy,rates").split(",")
unknown = set(tables) - {"constant", "ramp", "healthy", "rates", "ramp512", "day"}
if unknown:
    sys.exit("sensitivity: no table %s (constant, ramp, healthy, rates, ramp512, day)" % ", ".join(sorted(unknown)))
synth = build / "bench" / "synth_recordings"
slowburn = build / "slowburn"


def job_start_wall(directory):
    """The reference recording's first call, as a wall time (its own anchor)."""
    first = sorted(pathlib.Path(directory).glob("*.sbr"))[0]
    db = sqlite3.connect("file:%s?mode=ro" % first, uri=True)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    t0 = db.execute("SELECT min(entry_ns) FROM calls").fetchone()[0]
    return (t0 - int(meta["clock_anchor_monotonic_ns"]) + int(meta["clock_anchor_realtime_ns"])) / 1e9


def judge(ranks, slow, slowdown, secs, ramp_s=0, seed=42, drift_ppm=0):
    """(verdict, findings, start): analyze's verdict line and finding lines."""
    d = tempfile.mkdtemp(prefix="sens-")
    try:
        subprocess.run([str(synth), d, str(ranks), "8", str(secs), "50", str(slow), str(slowdown), "0.01",
                        str(drift_ppm), str(ramp_s), str(seed)], check=True, stdout=subprocess.DEVNULL)
        # Only the findings and the verdict are kept: a day's window lines
        # (64 ranks, one a window) are ~11 GB of JSON.
        with subprocess.Popen([str(slowburn), "analyze", "--json", d], stdout=subprocess.PIPE, text=True) as run:
            lines = [json.loads(l) for l in run.stdout
                     if l.startswith("{") and ('"kind":"finding"' in l or '"kind":"verdict"' in l)]
        if run.returncode not in (0, 2):
            raise RuntimeError("slowburn analyze %s exited %d" % (d, run.returncode))
        start = job_start_wall(d)
    finally:
        shutil.rmtree(d)
    verdict = next((l for l in lines if l.get("kind") == "verdict"), {"stragglers": []})
    return verdict, [l for l in lines if l.get("kind") == "finding"], start


def found_after(findings, rank, start):
    at = [f["found_at"] for f in findings if f.get("rank") == rank and f.get("found_at") is not None]
    return min(at) - start if at else None


def constant_table():
    print("| ranks | slowdown | named | detector | severity | cost | last in | found after |")
    print("|---|---|---|---|---|---|---|---|")
    for ranks in (8, 64, 512):
        slow = ranks // 2 + 1
        for s in (1.0, 1.02, 1.03, 1.05, 1.1, 1.2, 1.5):
            verdict, findings, start = judge(ranks, slow, s, seconds)
            named = verdict["stragglers"]
            if not named:
                print("| %d | %sx | nobody | - | - | - | - | - |" % (ranks, s))
            for f in named:
                e = f["evidence"]
                who = "rank %d%s" % (f["rank"], "" if f["rank"] == slow else " (WRONG)")
                after = found_after(findings, f["rank"], start)
                print("| %d | %sx | %s | %s | %s | %.1f%% | %.0f%% | %s |" % (
                    ranks, s, who, e["detector"], f["severity"], 100 * f["cost_share"], 100 * e["last_fraction"],
                    "%.0f s" % after if after is not None else "at the verdict"))
            sys.stdout.flush()


def ramp_table(secs, sizes=(8, 64)):
    print("| ranks | ramp over %.0f s | named | first found by | found after | its slowdown then |" % secs)
    print("|---|---|---|---|---|---|")
    for ranks in sizes:
        slow = ranks // 2 + 1
        for s in (1.05, 1.1, 1.2):
            verdict, findings, start = judge(ranks, slow, s, secs, ramp_s=secs)
            names = sorted({f["rank"] for f in verdict["stragglers"]})
            first = [f for f in findings if f.get("rank") == slow and f.get("found_at") is not None]
            first.sort(key=lambda f: f["found_at"])
            if not first:
                print("| %d | 1.0x to %sx | %s | - | - | - |" % (ranks, s, names or "nobody"))
                continue
            after = first[0]["found_at"] - start
            print("| %d | 1.0x to %sx | %s | %s | %.0f s | %.3fx |" % (
                ranks, s, ", ".join("rank %d%s" % (r, "" if r == slow else " (WRONG)") for r in names) or "nobody",
                first[0]["evidence"]["detector"], after, 1 + (s - 1) * min(1.0, after / secs)))
            sys.stdout.flush()


def healthy_table(secs, seeds):
    print("| ranks | seed | clock drift | job time | findings | named in the verdict |")
    print("|---|---|---|---|---|---|")
    total_s, false = 0.0, 0
    for seed in seeds:
        verdict, findings, _ = judge(64, -1, 1.0, secs, seed=seed, drift_ppm=50)
        total_s += secs
        false += len(findings)
        print("| 64 | %d | +-50 ppm | %.0f s | %d | %s |" % (
            seed, secs, len(findings), ", ".join("rank %d" % f["rank"] for f in verdict["stragglers"]) or "nobody"))
        sys.stdout.flush()
    print("\n%d false finding(s) in %.1f h of healthy 64-rank job time." % (false, total_s / 3600))


def rates_table(secs, seeds=range(1, 11)):
    """Of len(seeds) jobs a cell, how many named the slow rank, how many
    named a wrong rank (beside it or alone), and when the right one was
    first found."""
    print("| ranks | slowdown | named it | named a wrong rank | found after (median, range) | cost (median) |")
    print("|---|---|---|---|---|---|")
    for ranks in (8, 64):
        slow = ranks // 2 + 1
        for s in (1.02, 1.03, 1.05, 1.1):
            hits, wrong, afters, costs = 0, 0, [], []
            for seed in seeds:
                verdict, findings, start = judge(ranks, slow, s, secs, seed=seed)
                names = {f["rank"] for f in verdict["stragglers"]}
                wrong += bool(names - {slow})
                if slow in names:
                    hits += 1
                    costs.append(next(f["cost_share"] for f in verdict["stragglers"] if f["rank"] == slow))
                    after = found_after(findings, slow, start)
                    if after is not None:
                        afters.append(after)
            afters.sort()
            costs.sort()
            print("| %d | %sx | %d of %d | %d | %s | %s |" % (
                ranks, s, hits, len(seeds), wrong,
                "%.0f s (%.0f-%.0f)" % (afters[len(afters) // 2], afters[0], afters[-1]) if afters else "-",
                "%.1f%%" % (100 * costs[len(costs) // 2]) if costs else "-"))
            sys.stdout.flush()


def day_table():
    """One healthy day: what a fleet would see from one job's recordings."""
    secs = 86400
    began = time.monotonic()
    verdict, findings, _ = judge(64, 0, 1.005, secs, seed=7, drift_ppm=50)
    took = time.monotonic() - began
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the generator's or analyze's
    print("| ranks | job time | clock drift | structure | findings | named in the verdict | withheld |")
    print("|---|---|---|---|---|---|---|")
    print("| 64 | 86,400 s of 50 ms steps (%d instances judged) | +-50 ppm | rank 0 1.005x | %d | %s | %d |" % (
        verdict.get("instances", 0), len(findings), ", ".join("rank %d" % f["rank"] for f in verdict["stragglers"]) or "nobody",
        len(verdict.get("withheld", []))))
    for f in findings:
        print("\nfalse finding: %s" % f.get("summary", f))
    print("\nGenerated and judged in %.0f s; the largest child's peak RSS %.0f MiB." % (took, rss_mib))


if __name__ == "__main__":
    if not synth.exists() or not slowburn.exists():
        sys.exit("sensitivity: %s or %s missing: make bench builds them" % (synth, slowburn))
    if "constant" in tables:
        print("### Constant slowdowns (%.0f s each)\n" % seconds)
        constant_table()
    if "ramp" in tables:
        print("\n### Ramps\n")
        ramp_table(2 * seconds)
    if "healthy" in tables:
        print("\n### Healthy jobs\n")
        healthy_table(2 * seconds, range(1, 7))
    if "rates" in tables:
        print("\n### Detection rates (%.0f s each, ten seeds a cell)\n" % seconds)
        rates_table(seconds)
    if "ramp512" in tables:
        print("\n### Ramps at 512 ranks\n")
        ramp_table(2 * seconds, sizes=(512,))
    if "day" in tables:
        print("\n### A healthy day\n")
        day_table()
