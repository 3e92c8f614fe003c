#!/usr/bin/env bash
# The host signals' cost (make bench runs this after record.sh):
#  14. per context switch: bench/sched_cost ping-pongs two processes with no
#      program, with the sched programs following another process, and
#      following both (alternating in one run);
#  15. the demo job's slowdown under `slowburn trace` with the host signals
#      against the same trace with --no-host, alternating in one run.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-5}
trips=${SCHED_TRIPS:-50000}
steps=${RECORD_STEPS:-1500}
slowburn=$build/slowburn
workload=$build/libexec/slowburn-mpi-workload
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

traced_job() { # TRACE_ARGS...: the job's wall seconds under trace (with those args)
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
echo "## Host signals (bench/host.sh), run of $(date -u '+%Y-%m-%d %H:%M') UTC on $(uname -r), $(nproc) CPUs"
echo
echo "### 14. Cost per context switch of the sched programs"
echo
echo "\`$build/bench/sched_cost $rounds $trips\`: two processes on one CPU ping-pong a byte over pipes; configurations"
echo "alternate, $rounds rounds."
echo
"$build/bench/sched_cost" "$rounds" "$trips"
echo
echo "### 15. The job's slowdown with the host signals, against \`trace --no-host\`"
echo
echo "The demo job (4 ranks x $steps steps of 3 ms on $(nproc) CPUs) under \`slowburn trace --probe 'mpi.*'\`,"
echo "with the host signals (sched programs, /proc and cgroup reads each second) and with \`--no-host\`,"
echo "alternating, $rounds rounds; job seconds as the job reports them."
echo
without=() with=()
for i in $(seq "$rounds"); do
	without+=("$(traced_job --no-host)")
	with+=("$(traced_job)")
done
w=$(printf '%s\n' "${without[@]}" | median)
h=$(printf '%s\n' "${with[@]}" | median)
echo "- trace --no-host: ${without[*]} s (median $w)"
echo "- trace (host signals on): ${with[*]} s (median $h)"
echo "- ratio of medians: $(echo "$h / $w" | bc -l | cut -c1-5)"
