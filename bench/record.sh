#!/usr/bin/env bash
# Recordings (make bench runs this after service.sh):
#  11. the job's slowdown under `slowburn trace` with --record against the
#      same trace without it, alternating in one run; the recording's size
#      per million calls;
#  12. analyze's time and peak memory on one of them;
#  13. analyze on synthetic merges of 64 and 512 ranks (bench/synth_recordings)
#      over 60-600 s: time, peak RSS, what the verdict and the clock check say.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-5}
steps=${RECORD_STEPS:-1500}
slowburn=$build/slowburn
workload=$build/libexec/slowburn-mpi-workload
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
source "$(dirname "$0")/synth_analyze.sh"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

traced_job() { # RECORD_ARGS...: the job's wall seconds under trace (with those args)
	"${mpirun[@]}" "$workload" --compute-us 3000 --steps "$steps" --warmup-s 2 >"$tmp/job.out" 2>&1 &
	local job=$!
	sleep 1
	"$slowburn" trace --probe 'mpi.*' --no-hardware --no-rdma "$@" >"$tmp/trace.out" 2>&1 &
	local tracer=$!
	wait "$job"
	kill -INT "$tracer"
	wait "$tracer" || true
	awk '/workload done/ {print $(NF-1)}' "$tmp/job.out"
}

echo
echo "## Recordings (bench/record.sh), run of $(date -u '+%Y-%m-%d %H:%M') UTC on $(uname -r), $(nproc) CPUs"
echo
echo "### 11. The job's slowdown with \`trace --record\`, against \`trace\` alone"
echo
echo "The demo job (4 ranks x $steps steps of 3 ms) under \`slowburn trace --probe 'mpi.*'\`, with and"
echo "without \`--record\`, alternating, $rounds rounds; job seconds as the job reports them."
echo
plain=() recorded=()
for i in $(seq "$rounds"); do
	plain+=("$(traced_job)")
	recorded+=("$(traced_job --record "$tmp/r$i.sbr")")
done
p=$(printf '%s\n' "${plain[@]}" | median)
r=$(printf '%s\n' "${recorded[@]}" | median)
echo "- trace alone: ${plain[*]} s (median $p)"
echo "- trace --record: ${recorded[*]} s (median $r)"
echo "- ratio of medians: $(echo "$r / $p" | bc -l | cut -c1-5)"
calls=$(sqlite3 "$tmp/r1.sbr" 'select count(*) from calls')
bytes=$(stat -c %s "$tmp/r1.sbr")
echo "- recording: $calls calls in $bytes bytes: $(echo "$bytes / $calls" | bc) bytes a call," \
	"$(echo "$bytes * 1000000 / $calls / 1048576" | bc) MiB per million calls"
echo
echo "### 12. analyze"
echo
/usr/bin/time -f '%e %M' -o "$tmp/time" "$slowburn" analyze "$tmp/r1.sbr" >/dev/null 2>&1 || true
read -r secs kib <"$tmp/time"
echo "- one recording of $calls calls: ${secs} s, peak RSS ${kib} KiB"
echo
echo "### 13. analyze on synthetic merges (many nodes)"
echo
echo "\`$build/bench/synth_recordings DIR RANKS 8 SECONDS 50 RANK\`: recordings of a job of RANKS ranks,"
echo "8 a node, one all-reduce per 50 ms step, rank RANK 1.5x slower (-1: none), node clocks skewed by up to"
echo "+-100 ms and tracers started up to 16 steps late; then \`slowburn analyze DIR\` (time, peak RSS)."
echo
echo "| ranks | nodes | job seconds | slowed rank | calls | analyze s | peak RSS KiB | verdict names | clocks |"
echo "|---|---|---|---|---|---|---|---|---|"
for spec in "64 60 33" "64 600 33" "64 2400 33" "512 60 257" "512 300 257" "512 600 257" "512 60 -1"; do
	read -r ranks seconds slow <<<"$spec"
	synth_analyze "$build" "$tmp" "$ranks" 8 "$seconds" "$slow"
	echo "| $ranks | $((ranks / 8)) | $seconds | $([ "$slow" -ge 0 ] && echo "$slow" || echo none) | $calls | $secs | $kib | ${named:-nobody} | $clocks |"
done
