#!/usr/bin/env bash
# Section 25: the slow burn in probe mode on a real job (issue 30). A 4-rank
# Open MPI job of the demo workload (3 ms of compute a step; rank 1's
# compute SLOWDOWN times longer, a busy loop, not a sleep) under `slowburn
# probe`, for SECONDS; what the service logged: its first finding of each
# rule, when (after the job's launch), whom, at what cost and severity.
# The service's state file (--state-file) at exit gives, per rank of the
# costliest lane, what the rule judged: its cost, last arrivals and the
# run-queue wait inside its calls (a minor cost where every peer waits for a
# CPU 20%+ of its time inside is the scheduler's, and withheld).
# Usage: [RANKS=4] bench/probe_slow_burn.sh BUILD [SECONDS] [SLOWDOWN...] (1 = healthy)
set -euo pipefail
build=${1:-build}
seconds=${2:-240}
ranks=${RANKS:-4}
shift $(($# >= 2 ? 2 : $#))
if [ $# -gt 0 ]; then slowdowns=("$@"); else slowdowns=(1.05 1.1 1); fi
slowburn=$build/slowburn
workload=$build/libexec/slowburn-mpi-workload
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
echo
echo "### 25. The slow burn in probe mode on a real job (bench/probe_slow_burn.sh), run of $(date -u '+%Y-%m-%d %H:%M') UTC on $(uname -r), $(nproc) CPUs"
echo
echo "\`mpirun -np $ranks slowburn-mpi-workload --slow-rank 1 --slowdown S --compute-us 3000 --seconds $seconds\`"
echo "under \`slowburn probe --no-hardware --overhead-budget 0\` (5 s windows); the first finding of each rule,"
echo "seconds after the job's launch."
echo
echo "| slowdown | rule (detector) | first after launch, s | rank | cost share | severity | findings of the rule | lane near the end: per rank cost % / last % / runq-inside % |"
echo "|---|---|---|---|---|---|---|---|"
for s in "${slowdowns[@]}"; do
	rm -rf "$tmp/log"
	rm -f "$tmp/state.json" "$tmp/state.running"
	"$slowburn" probe --listen '' --log-dir "$tmp/log" --no-hardware --overhead-budget 0 \
		--state-file "$tmp/state.json" >"$tmp/probe.out" 2>&1 &
	probe=$!
	sleep 3
	launched=$(date +%s.%N)
	slow=()
	[ "$s" != 1 ] && slow=(--slow-rank 1 --slowdown "$s")
	# The state file while the job runs (its ranks leave it when they exit).
	(while sleep 5; do grep -qs '"totals"' "$tmp/state.json" && cp -f "$tmp/state.json" "$tmp/state.running"; done) &
	keeper=$!
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" "$workload" "${slow[@]}" --compute-us 3000 \
		--seconds "$seconds" >"$tmp/job.out" 2>&1
	kill "$keeper"
	sleep 2
	kill -TERM "$probe"
	wait "$probe" || true
	python3 - "$tmp/log/slowburn.jsonl" "$launched" "$s" "$tmp/state.running" <<'PY'
import json, sys
path, launched, slowdown, state_path = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
lane_text = "-"
try:
    lanes = json.load(open(state_path))["slow_burn"]
    if lanes:
        lane = max(lanes, key=lambda l: max(r["blame_ns"] for r in l["totals"]["ranks"]))
        t = lane["totals"]
        cells = []
        for r in sorted(t["ranks"], key=lambda r: r["pid"]):
            runq = f"{100 * r['runq_ns'] / r['inside_ns']:.0f}" if r["runq_ns"] is not None and r["inside_ns"] else "?"
            cells.append(f"{100 * r['blame_ns'] / t['traced_ns']:.1f}/{100 * r['lasts'] / max(t['instances'], 1):.0f}/{runq}")
        lane_text = f"{lane['probe']}, {t['instances']} instances: " + ", ".join(cells)
except (OSError, ValueError, KeyError):
    pass
first, counts = {}, {}
for line in open(path):
    j = json.loads(line)
    if j.get("kind") != "finding" or j.get("type") != "straggler":
        continue
    rule = (j.get("evidence") or {}).get("detector", "?")
    counts[rule] = counts.get(rule, 0) + 1
    first.setdefault(rule, j)
name = "healthy" if slowdown == "1" else slowdown + "x"
if not first:
    print(f"| {name} | (none) | - | - | - | - | 0 | {lane_text} |")
for rule, j in sorted(first.items(), key=lambda kv: kv[1]["ts"]):
    print(f"| {name} | {rule} | {j['ts'] - launched:.1f} | {j['rank']} | {j.get('cost_share', 0):.3f} | "
          f"{j.get('severity')} | {counts[rule]} | {lane_text} |")
PY
done
