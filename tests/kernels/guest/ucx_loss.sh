# The straggler that arrives on time, for real (issue 29): an Open MPI job
# on UCX over Soft-RoCE (as ucx.sh runs it), 2 ranks, no compute slowdown:
# rank 0 on rxe_nic1 (nic1, below rp1), rank 1 on rxe_nic2, each naming its
# NIC by UCX_NET_DEVICES. After a healthy stretch, netem loss on nic1's
# netdev (5%, SB_UCX_LOSS_PERCENT): rank 0's frames are lost, rxe_nic1
# retransmits (its completer_retry_err moves), rxe_nic2 sees the gaps
# (out_of_seq_request), and every collective waits for rank 0's data.
# `slowburn trace` must name rank 0, never rank 1, with rxe_nic1's
# retransmissions (rdma.retrans, ranks [0]) as what its data path said.
if [ "${SB_GUEST:-}" != 1 ]; then
	skip ucx.loss "not in a QEMU guest: no RDMA device (Soft-RoCE is set up only inside the guests)"
	return 0
fi
if ! pci_rxe_up 2>"$OUT/ucx_loss.rxe.err"; then
	fail ucx.loss "Soft-RoCE on nic1/nic2: $(cat "$OUT/ucx_loss.rxe.err")"
	return 0
fi
seconds=${SB_UCX_LOSS_SECONDS:-110}
rank_cmd() {
	ucx_rank "$1" --compute-us 3000 --gradient-bytes 65536 --seconds $seconds --init-wait-file "$OUT/ucx_loss.go"
}
rm -f "$OUT/ucx_loss.go"
retries_before=$(cat /sys/class/infiniband/rxe_nic1/ports/1/hw_counters/completer_retry_err)
mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ucx --mca btl ^openib,ofi \
	$(rank_cmd rxe_nic1) : $(rank_cmd rxe_nic2) >"$OUT/ucx_loss.job.log" 2>&1 &
job=$!
ranks_up() { [ "$(pgrep -P $job -f slowburn-mpi-workload | wc -l)" -ge 2 ]; }
if ! wait_for 60 ranks_up; then
	fail ucx.loss "the 2 ranks did not start in 60 s: $(tail -5 "$OUT/ucx_loss.job.log")"
	kill $job
	return 0
fi
pids=$(pgrep -P $job -f slowburn-mpi-workload | sed 's/^/--pid /')
# 10 s windows: under the loss a step waits for retransmissions (3 to 8
# all-reduces in 5 s at 5% loss, against 80 to 95 before it; half of them
# the 64 KiB gradients'), and the inside rule judges a window with 5
# instances or more of one size.
"$SB" trace --probe 'mpi.*' $pids --window-ms 10000 --json -d $((seconds + 60)) >"$OUT/ucx_loss.trace.jsonl" 2>"$OUT/ucx_loss.trace.err" &
tracer=$!
wait_for 60 grep -q '"event":"tracing"' "$OUT/ucx_loss.trace.jsonl" ||
	echo "slowburn trace printed no \"tracing\" status in 60 s: $(tail -3 "$OUT/ucx_loss.trace.err")"
touch "$OUT/ucx_loss.go"
echo "trace up, job released at $(cut -d' ' -f1 /proc/uptime)"
# A healthy stretch first: the collective's usual time, which the loss is
# judged against (docs/detector.md, "By its data path"), as 4 of trace's
# windows (2 ranks' lines each; the baseline needs 3).
healthy() { [ "$(grep -c '"kind":"window".*"probe":"mpi.allreduce"' "$OUT/ucx_loss.trace.jsonl")" -ge 8 ]; }
wait_for 80 healthy || echo "fewer than 4 windows of the all-reduce in 80 s"
loss=${SB_UCX_LOSS_PERCENT:-5}
if ! tc qdisc add dev "$nic1_dev" root netem loss "$loss%" 2>"$OUT/ucx_loss.netem.err"; then
	fail ucx.loss "netem loss '$loss%' on $nic1_dev: $(cat "$OUT/ucx_loss.netem.err")"
	kill $job $tracer 2>/dev/null
	wait
	return 0
fi
echo "netem loss $loss% on $nic1_dev at $(cut -d' ' -f1 /proc/uptime)"
# Bounded: a rank stalled inside a collective under the loss never reaches
# its --seconds, and the netem qdisc must go before any test after this one.
(sleep $((seconds + 60)) && kill $job 2>/dev/null) &
watchdog=$!
wait $job
job_rc=$?
kill $watchdog 2>/dev/null
echo "job exited $job_rc at $(cut -d' ' -f1 /proc/uptime)"
tc -s qdisc show dev "$nic1_dev" >"$OUT/ucx_loss.netem"
tc qdisc del dev "$nic1_dev" root
kill -INT $tracer 2>/dev/null
wait $tracer
echo "tracer exited $?"
retries=$(($(cat /sys/class/infiniband/rxe_nic1/ports/1/hw_counters/completer_retry_err) - retries_before))
echo "netem on $nic1_dev: $(grep -o 'dropped [0-9]*' "$OUT/ucx_loss.netem"); rxe_nic1 completer_retry_err +$retries"
python3 "$(dirname "$0")/ucx_loss_check.py" "$OUT" $job_rc $retries
