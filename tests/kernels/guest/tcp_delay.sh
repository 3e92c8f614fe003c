# The straggler that arrives on time, over TCP (issue 29): an Open MPI job
# on its TCP transport (pml ob1, btl tcp), 3 ranks, no compute slowdown:
# rank 0 on nic1's address, ranks 1 and 2 on nic2's (boot.py's two NICs on
# one hub, lib.sh pci_rxe_up's addresses and routes). After a healthy
# stretch, netem adds 50 ms to every frame nic1 sends: each connection of
# rank 0's (its data out, its ACKs back) takes 50 ms more a round trip;
# ranks 1 and 2 also have their connection to each other, which stays
# fast. Every collective waits longer inside. 50 ms: under TCG a healthy
# connection's smoothed RTT is 5 to 13 ms here (the vCPUs are busy), where
# a node's is tens of microseconds. `slowburn trace` must name
# rank 0, never rank 1 or 2, by its TCP connections' round trips
# (host.tcp_rtt for rank 0: its evidence.transport, or a likely cause).
if [ "${SB_GUEST:-}" != 1 ]; then
	skip tcp.delay "not in a QEMU guest: netem (sch_netem) and the two NICs are set up only inside the guests"
	return 0
fi
if ! pci_rxe_up 2>"$OUT/tcp_delay.net.err"; then
	fail tcp.delay "nic1/nic2 addresses and routes: $(cat "$OUT/tcp_delay.net.err")"
	return 0
fi
# sock_diag, which slowburn reads the ranks' sockets by (modules on 6.1).
modprobe -d /run/sb/kernel -a inet_diag tcp_diag 2>/dev/null
# Ranks 1 and 2 share nic2's address: their connection stays on the host
# (pci_rxe_up's rules would send it out nic1 and through the delay). The
# rule and the delay go with this test, however it ends (it runs in its
# own subshell: suite.sh).
ip rule add pref 5 from 10.98.0.2 to 10.98.0.2 lookup local
trap 'tc qdisc del dev "$nic1_dev" root 2>/dev/null; ip rule del pref 5 2>/dev/null' EXIT
seconds=${SB_TCP_DELAY_SECONDS:-50}
rank_cmd() { # NETDEV
	echo "-np 1 env OMPI_MCA_btl_tcp_if_include=$1 $sb_build/libexec/slowburn-mpi-workload" \
		"--compute-us 3000 --gradient-bytes 65536 --seconds $seconds --init-wait-file $OUT/tcp_delay.go"
}
rm -f "$OUT/tcp_delay.go"
mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,tcp \
	$(rank_cmd "$nic1_dev") : $(rank_cmd "$nic2_dev") : $(rank_cmd "$nic2_dev") >"$OUT/tcp_delay.job.log" 2>&1 &
job=$!
ranks_up() { [ "$(pgrep -P $job -f slowburn-mpi-workload | wc -l)" -ge 3 ]; }
if ! wait_for 60 ranks_up; then
	fail tcp.delay "the 3 ranks did not start in 60 s: $(tail -5 "$OUT/tcp_delay.job.log")"
	kill $job
	wait $job
	return 0
fi
pids=$(pgrep -P $job -f slowburn-mpi-workload | sed 's/^/--pid /')
# 2 s windows: under the delay the job makes some 10 collectives a second,
# and the inside rule judges a window of 5 instances or more.
"$SB" trace --probe 'mpi.*' $pids --window-ms 2000 --json -d $((seconds + 60)) >"$OUT/tcp_delay.trace.jsonl" 2>"$OUT/tcp_delay.trace.err" &
tracer=$!
wait_for 60 grep -q '"event":"tracing"' "$OUT/tcp_delay.trace.jsonl" ||
	echo "slowburn trace printed no \"tracing\" status in 60 s: $(tail -3 "$OUT/tcp_delay.trace.err")"
touch "$OUT/tcp_delay.go"
echo "trace up, job released at $(cut -d' ' -f1 /proc/uptime)"
# A healthy stretch first: the collective's usual time, which the delay is
# judged against (docs/detector.md, "By its data path"), as 5 of trace's
# windows (3 ranks' lines each): a fixed sleep left 3 noisy windows in one
# run of 10, whose usual already held the delay's start.
healthy() { [ "$(grep -c '"kind":"window".*"probe":"mpi.allreduce"' "$OUT/tcp_delay.trace.jsonl")" -ge 15 ]; }
if ! wait_for 60 healthy; then
	fail tcp.delay "fewer than 5 windows of the all-reduce in 60 s: $(tail -2 "$OUT/tcp_delay.trace.err")"
	kill $job $tracer 2>/dev/null
	wait
	return 0
fi
ss -tni >"$OUT/tcp_delay.ss.before"
if ! tc qdisc add dev "$nic1_dev" root netem delay 50ms 2>"$OUT/tcp_delay.netem.err"; then
	fail tcp.delay "netem on $nic1_dev: $(cat "$OUT/tcp_delay.netem.err")"
	kill $job $tracer 2>/dev/null
	wait
	return 0
fi
echo "netem delay 50ms on $nic1_dev at $(cut -d' ' -f1 /proc/uptime)"
# Bounded, and the qdisc and the rule go before any test after this one.
(sleep $((seconds + 60)) && kill $job 2>/dev/null) &
watchdog=$!
sleep 10
ss -tni >"$OUT/tcp_delay.ss.after"
wait $job
job_rc=$?
pkill -P $watchdog sleep 2>/dev/null
kill $watchdog 2>/dev/null
echo "job exited $job_rc at $(cut -d' ' -f1 /proc/uptime)"
tc qdisc del dev "$nic1_dev" root
ip rule del pref 5
trap - EXIT
kill -INT $tracer 2>/dev/null
wait $tracer
echo "tracer exited $?"
python3 "$(dirname "$0")/tcp_delay_check.py" "$OUT" $job_rc
