#!/usr/bin/env bash
# Section 26d: the slow burn on a real PyTorch DDP job on gloo (issue 30).
# RANKS ranks of the bundled DDP workload, started with the torchrun
# environment; rank 1 computes SLOWDOWN times as long as its own forward,
# backward and optimizer step (a busy loop: --slow-factor), traced with
# `slowburn trace --probe 'gloo.*'` for SECONDS: who the verdict names (or
# withholds), by which rule, at what cost, and how long after the launch
# the first finding naming rank 1 came.
# Usage: [RANKS=2] [KEEP=1] bench/gloo_slow_burn.sh BUILD [SECONDS] [SLOWDOWN...] (1 = healthy;
# KEEP: leave the last job's trace in the temporary folder named on stderr)
set -euo pipefail
build=${1:-build}
seconds=${2:-60}
ranks=${RANKS:-2}
shift $(($# >= 2 ? 2 : $#))
if [ $# -gt 0 ]; then slowdowns=("$@"); else slowdowns=(1 1.05 1.1 1.2 1.5); fi
[ "$seconds" -ge 20 ] || { echo "gloo_slow_burn: SECONDS must be 20 or more" >&2; exit 1; }
for s in "${slowdowns[@]}"; do
	python3 -c "import sys; float(sys.argv[1]) >= 1 or sys.exit(1)" "$s" 2>/dev/null ||
		{ echo "gloo_slow_burn: SLOWDOWN '$s' is not a number of 1 or more (1 = healthy)" >&2; exit 1; }
done
slowburn=$build/slowburn
workload=$build/libexec/slowburn-ddp-workload.py
tmp=$(mktemp -d)
[ -z "${KEEP:-}" ] || echo "keeping $tmp" >&2
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
echo "| ranks | slowdown | named | detector | severity | cost | last in | first finding after launch | withheld |"
echo "|---|---|---|---|---|---|---|---|---|"
port=29650
for s in "${slowdowns[@]}"; do
	port=$((port + 1))
	pids=()
	procs=()
	launched=$(date +%s.%N)
	for r in $(seq 0 $((ranks - 1))); do
		slow=()
		python3 -c "import sys; sys.exit(float(sys.argv[1]) <= 1)" "$s" && slow=(--slow-rank 1 --slow-factor "$s")
		# The rank itself, not a wrapper: slowburn traces the pid it is given.
		RANK=$r LOCAL_RANK=$r WORLD_SIZE=$ranks LOCAL_WORLD_SIZE=$ranks MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			/usr/bin/python3 "$workload" "${slow[@]}" --seconds "$seconds" >"$tmp/rank$r.out" 2>&1 &
		pids+=(--pid $!)
		procs+=($!)
	done
	# Bounded: a rank left in gloo's rendezvous (a port taken) must not hang the table.
	(sleep $((seconds + 60)) && kill "${procs[@]}" 2>/dev/null) &
	watchdog=$!
	sleep 3 # the ranks import torch and meet before their first collective
	"$slowburn" trace --probe 'gloo.*' --no-hardware -d $((seconds - 5)) --json "${pids[@]}" >"$tmp/trace.json" 2>"$tmp/trace.err" || true
	wait "${procs[@]}" || true
	kill $watchdog 2>/dev/null || true
	if ! grep -q '"kind":"verdict"' "$tmp/trace.json"; then
		echo "| $ranks | ${s}x | (trace failed: $(tail -1 "$tmp/trace.err")) | | | | | | |"
		continue
	fi
	python3 - "$tmp/trace.json" "$launched" "$s" "$ranks" <<'PY'
import json, sys
path, launched, slowdown, ranks = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = [json.loads(l) for l in open(path) if l.startswith("{")]
verdict = next(l for l in lines if l.get("kind") == "verdict")
first = min((l["found_at"] for l in lines if l.get("kind") == "finding" and l.get("rank") == 1
             and l.get("found_at") is not None), default=None)
name = "healthy" if float(slowdown) <= 1 else slowdown + "x"
withheld = ", ".join("rank %s %.1f%% (%s...)" % (w["rank"], 100 * w.get("cost_share", 0), w.get("reason", "")[:40])
                     for w in verdict.get("withheld", [])) or "-"
when = "%.1f s" % (first - launched) if first is not None else "-"
if not verdict["stragglers"]:
    print(f"| {ranks} | {name} | nobody | - | - | - | - | {when} | {withheld} |")
for f in verdict["stragglers"]:
    e = f["evidence"]
    print(f"| {ranks} | {name} | rank {f['rank']} | {e['detector']} | {f['severity']} | {100 * f['cost_share']:.1f}% | "
          f"{100 * e['last_fraction']:.0f}% | {when} | {withheld} |")
PY
done
