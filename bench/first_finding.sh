#!/usr/bin/env bash
# make bench (and make bench-first-finding): how soon `slowburn trace` names
# a straggler, and how often it names anyone in a healthy job.
#   RUNS runs of the MPI demo (4 ranks, 3 ms compute a step) with rank
#   i mod 4 at SLOWDOWN x the compute, traced for DURATION_S seconds: the
#   seconds from attach to the first finding, and whether it named the
#   injected rank; then RUNS healthy runs: every straggler finding is false.
# Prints Markdown for bench/RESULTS.md.
set -euo pipefail
build=${1:-build}
runs=${RUNS:-20}
duration=${DURATION_S:-3}
slowdown=${SLOWDOWN:-1.3}
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (loads BPF programs)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for i in $(seq 0 $((runs - 1))); do
	"$build/slowburn" demo --json -d "$duration" --slow-rank $((i % 4)) --slowdown "$slowdown" >"$tmp/slow-$i.jsonl" 2>/dev/null || true
done
for i in $(seq 0 $((runs - 1))); do
	"$build/slowburn" demo --json -d "$duration" --healthy >"$tmp/healthy-$i.jsonl" 2>/dev/null || true
done

python3 - "$tmp" "$runs" "$duration" "$slowdown" <<'PY'
import json, statistics, sys
tmp, runs, duration, slowdown = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def lines(path):
    out = []
    for line in open(path):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out

times, right_first, verdicts, detectors = [], 0, 0, {}
for i in range(runs):
    ls = lines(f"{tmp}/slow-{i}.jsonl")
    demo = next((l for l in ls if l.get("event") == "demo"), None)
    findings = [l for l in ls if l.get("kind") == "finding" and l.get("type") == "straggler"]
    if demo and demo.get("match"):
        verdicts += 1
    if demo and demo.get("first_finding_after_s") is not None:
        times.append(demo["first_finding_after_s"])
    if findings:
        first = findings[0]
        detectors[first["evidence"]["detector"]] = detectors.get(first["evidence"]["detector"], 0) + 1
        if first.get("rank") == i % 4:
            right_first += 1
false_findings, false_runs = 0, 0
for i in range(runs):
    ls = lines(f"{tmp}/healthy-{i}.jsonl")
    n = sum(1 for l in ls if l.get("kind") == "finding" and l.get("type") == "straggler")
    false_findings += n
    false_runs += n > 0

def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * (len(xs) - 1)))))]

print(f"`RUNS={runs} DURATION_S={duration} SLOWDOWN={slowdown} bench/first_finding.sh`:")
print()
print(f"- straggler runs ({slowdown}x compute, rank i mod 4): first finding in {len(times)} of {runs}; "
      f"it named the injected rank in {right_first}; verdict matched in {verdicts}; first finding's detector: "
      + ", ".join(f"{k} {v}" for k, v in sorted(detectors.items())))
if times:
    print(f"- seconds from attach to the first finding: min {min(times):.3f}, median {statistics.median(times):.3f}, "
          f"p90 {q(times, 0.9):.3f}, max {max(times):.3f}")
    print(f"- all: {','.join(f'{t:.3f}' for t in sorted(times))}")
print(f"- healthy runs: {false_findings} straggler finding(s) in {false_runs} of {runs} runs")
PY
