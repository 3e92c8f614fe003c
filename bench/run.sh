#!/usr/bin/env bash
# make bench: every number in bench/RESULTS.md comes from this script.
# Ratios are taken within one run (configurations alternate), never against
# numbers from another machine or another day.
set -euo pipefail
build=${1:-build}
out=$build/bench/latest.md
rounds=${ROUNDS:-5}
calls=${CALLS:-20000}
demo_runs=${DEMO_RUNS:-8}
rss_seconds=${RSS_SECONDS:-60}
mkdir -p "$build/bench"

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (loads BPF programs)" >&2
	exit 1
fi

# Runs `slowburn demo --json ARGS --slow-rank R` demo_runs times (R = 0..3 in
# turn) and prints how many verdicts matched and the seconds to the first finding.
first_findings() {
	local times=() correct=0 line t sorted
	for i in $(seq 0 $((demo_runs - 1))); do
		line=$("$build/slowburn" demo --json "$@" --slow-rank $((i % 4)) | grep '"event":"demo"' || true)
		t=$(echo "$line" | sed -n 's/.*"first_finding_after_s":\([0-9.]*\).*/\1/p')
		if echo "$line" | grep -q '"match":true'; then correct=$((correct + 1)); fi
		[ -n "$t" ] && times+=("$t")
	done
	sorted=$(printf '%s\n' "${times[@]}" | sort -n)
	echo "- correct verdicts: $correct of $demo_runs"
	echo "- seconds to first finding: $(echo $sorted | tr ' ' ',') (median $(printf '%s\n' $sorted | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'))"
}

{
	echo "## Run of $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -r), $(nproc) CPUs"
	echo
	echo "### 1. Per-call cost of the probe pair"
	echo
	echo "\`$build/bench/probe_cost $build/bench/call_loop $rounds $calls\`: a loop calls one function"
	echo "$calls times per sample; configurations alternate, $rounds rounds."
	echo
	"$build/bench/probe_cost" "$build/bench/call_loop" "$rounds" "$calls"
	echo
	echo "### 2. Ring-buffer consumer: decode throughput (one core)"
	echo
	echo "\`$build/bench/decode_bench --benchmark_min_time=1\`"
	echo
	echo '```'
	"$build/bench/decode_bench" --benchmark_min_time=1 2>/dev/null | grep -E '^BM_'
	echo '```'
	echo
	echo "### 3. Time from attach to the first correct finding (demo workload)"
	echo
	echo "\`$build/slowburn demo --json -d 6 --slow-rank R\`, R = 0..3 in turn, $demo_runs runs:"
	echo
	first_findings -d 6
	echo
	echo "### 3b. Time from attach to the first correct finding (PyTorch DDP on gloo)"
	echo
	echo "\`$build/slowburn demo --workload pytorch --json -d 10 --slow-rank R\`, R = 0..3 in turn, $demo_runs runs"
	echo "(4 ranks launched with the torchrun environment, one sleeping 8 ms a step in its data path):"
	echo
	first_findings --workload pytorch -d 10
	echo
	echo "### 4. Cost per kernel log line of the printk:console Xid filter"
	echo
	echo "\`$build/bench/kmsg_cost 7 20000\`: bursts of ordinary lines to /dev/kmsg, with and without the filter, alternating:"
	echo
	"$build/bench/kmsg_cost" 7 20000
	echo
	echo "### 5. Per-hit cost of the nccl.ib.test probe (NCCL's polling loop)"
	echo
	echo "\`$build/bench/ib_cost poll $build/bench/ib_poll_loop $rounds $calls\`: a loop polls a hidden"
	echo "\`ncclIbTest(void*, int*, int*)\` that answers not-done; the probe pair the catalog attaches"
	echo "against an empty uprobe pair on the same function (perf links both), alternating, $rounds rounds:"
	echo
	"$build/bench/ib_cost" poll "$build/bench/ib_poll_loop" "$rounds" "$calls"
	echo
	echo "### 5b. Per-round cost of the verbs data path probes (verbs.qp_completions)"
	echo
	echo "\`$build/bench/ib_cost qp $build/bench/qp_loop $rounds $calls\`: a provider's post_send and poll_cq"
	echo "(the real signatures, called through the context's ops), a post_send uprobe and a poll_cq uprobe"
	echo "pair against empty uprobe pairs on both functions (perf links all), alternating, $rounds rounds:"
	"$build/bench/ib_cost" qp "$build/bench/qp_loop" "$rounds" "$calls"
	echo
	echo "### 6. Symbol resolution in libnccl.so.2"
	echo
	nccl=${NCCL:-/usr/local/cuda/lib64/libnccl.so.2}
	if [ -r "$nccl" ]; then
		echo "\`$build/bench/ib_cost symbols $nccl 7\`:"
		echo
		"$build/bench/ib_cost" symbols "$nccl" 7
	else
		echo "($nccl absent: skipped)"
	fi
	echo
	echo "### 7. Peak RSS of \`slowburn trace\` over a ${rss_seconds} s session"
	echo
	echo "The demo workload under mpirun (4 ranks, rank 2 slowed), traced by"
	echo "\`$build/slowburn trace --probe 'mpi.*' -d $rss_seconds\`; VmHWM read from /proc every second:"
	echo
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 "$build/libexec/slowburn-mpi-workload" \
		--slow-rank 2 --slowdown 1.5 --seconds $((rss_seconds + 30)) >/dev/null 2>&1 &
	job=$!
	sleep 2
	"$build/slowburn" trace --probe 'mpi.*' -d "$rss_seconds" >"$build/bench/rss-trace.out" 2>&1 &
	tracer=$!
	peak=0
	while kill -0 $tracer 2>/dev/null; do
		hwm=$(awk '/VmHWM/ {print $2}' /proc/$tracer/status 2>/dev/null || echo 0)
		[ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
		sleep 1
	done
	wait $tracer || true
	kill -TERM $job 2>/dev/null || true
	wait $job 2>/dev/null || true
	calls_traced=$(sed -n 's/^Traced \([0-9.]* s: [0-9]* calls\).*/\1/p' "$build/bench/rss-trace.out")
	verdict=$(grep -A1 '^Verdict' "$build/bench/rss-trace.out" | tail -1 | cut -c1-80)
	echo "- peak RSS: $((peak / 1024)) MiB ($peak KiB); traced $calls_traced"
	echo "- verdict: $verdict"
	echo
	echo "## Reading the ranks' TCP sockets (tcp_cost: sock_diag against /proc/net/tcp)"
	"$build/bench/tcp_cost"
	echo
	echo "## The slow burn's sensitivity (bench/sensitivity.sh)"
	# Every table of RESULTS.md sections 24 and 26, the 512-rank ramps and
	# the healthy day included (~25 min of the bench).
	bench/sensitivity.sh "$build" 300 constant,ramp,healthy,rates,ramp512,day
} | tee "$out"
echo
echo "bench: results in $out (copy them into bench/RESULTS.md)"
