# OpenMPI over real RDMA, traced end to end: a 2-rank job (the workload) on
# UCX (pml ucx; UCX_TLS=rc: RC QPs, UD QPs for their wire-up, no shared
# memory) over Soft-RoCE on the PCIe NICs: rank 0 on rxe_nic1, rank 1 on
# rxe_nic2, so every message crosses nic1 -> QEMU hub -> nic2. `slowburn
# trace` must count each rank's MPI calls exactly and see, through its verbs
# probes in the libibverbs UCX loaded, each rank's QPs created, moved to RTR
# and RTS, and destroyed at MPI_Finalize.
# Open MPI's UCX connects the ranks of one node in MPI_Init (their QPs are
# created and brought to RTS there), so the ranks wait before MPI_Init
# (--init-wait-file OUT/ucx.go, written once trace is attached), with
# libibverbs preloaded: UCX would load it only in MPI_Init, and trace attaches
# its verbs probes to the ranks that map it when it starts.
# UCX_UD_ETH_DGID_CHECK=n: with UCX's check of each received UD packet's
# destination GID on (its default), rxe's UD packets were never acknowledged
# and UCX aborted the rank ("UD endpoint ...: unhandled timeout error"); see
# tests/kernels/README.md.
if [ "${SB_GUEST:-}" != 1 ]; then
	skip ucx "not in a QEMU guest: no RDMA device (Soft-RoCE is set up only inside the guests)"
	return 0
fi
if ! pci_rxe_up 2>"$OUT/ucx.rxe.err"; then
	fail ucx "Soft-RoCE on nic1/nic2: $(cat "$OUT/ucx.rxe.err")"
	return 0
fi
steps=30
# One app context per rank (MPMD) for its own NIC.
rank_cmd() { ucx_rank "$1" --compute-us 5000 --steps $steps --seconds 600 --init-wait-file "$OUT/ucx.go"; }
rm -f "$OUT/ucx.go"
sent_before=$(cat /sys/class/infiniband/rxe_nic1/ports/1/hw_counters/sent_pkts)
mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ucx --mca btl ^openib,ofi \
	$(rank_cmd rxe_nic1) : $(rank_cmd rxe_nic2) >"$OUT/ucx.job.log" 2>&1 &
job=$!
ranks_up() { [ "$(pgrep -P $job -f slowburn-mpi-workload | wc -l)" -ge 2 ]; }
if ! wait_for 60 ranks_up; then
	fail ucx "the 2 ranks did not start in 60 s: $(tail -5 "$OUT/ucx.job.log")"
	kill $job
	return 0
fi
pids=$(pgrep -P $job -f slowburn-mpi-workload | sed 's/^/--pid /')
"$SB" trace --probe 'mpi.*' $pids --json -d 150 >"$OUT/ucx.trace.jsonl" 2>"$OUT/ucx.trace.err" &
tracer=$!
wait_for 60 grep -q '"event":"tracing"' "$OUT/ucx.trace.jsonl" ||
	echo "slowburn trace printed no \"tracing\" status in 60 s: $(tail -3 "$OUT/ucx.trace.err")"
echo "trace up at $(cut -d' ' -f1 /proc/uptime)"
touch "$OUT/ucx.go"
wait $job
job_rc=$?
echo "job exited $job_rc at $(cut -d' ' -f1 /proc/uptime)"
kill -INT $tracer 2>/dev/null
wait $tracer
echo "tracer exited $?"
sent=$(($(cat /sys/class/infiniband/rxe_nic1/ports/1/hw_counters/sent_pkts) - sent_before))
python3 "$(dirname "$0")/ucx_check.py" "$OUT" $steps $job_rc $sent
