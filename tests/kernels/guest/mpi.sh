# The attach fallback: a 3-rank OpenMPI job (build/libexec/slowburn-mpi-workload)
# traced by `slowburn trace`; on kernels without multi-uprobe links (before
# 6.10) through one perf-event link per uprobe. Rank 1 is slowed: it must be
# named, and every rank's MPI_Allreduce calls counted exactly.
steps=80
w=$sb_build/libexec/slowburn-mpi-workload
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3 --mca btl self,vader \
	"$w" --slow-rank 1 --slowdown 3 --compute-us 15000 --steps $steps --seconds 600 --warmup-s 20 \
	>"$OUT/mpi.job.log" 2>&1 &
job=$!
# This job's ranks only (the host may run other jobs): mpirun's children.
ranks_up() { [ "$(pgrep -P $job -f slowburn-mpi-workload | wc -l)" -ge 3 ]; }
if ! wait_for 60 ranks_up; then
	fail mpi "the 3 ranks did not start in 60 s: $(tail -5 "$OUT/mpi.job.log")"
	kill $job
	return 0
fi
pids=$(pgrep -P $job -f slowburn-mpi-workload | sed 's/^/--pid /')
"$SB" trace --probe 'mpi.*' $pids --json -d 90 >"$OUT/mpi.trace.jsonl" 2>"$OUT/mpi.trace.err" &
tracer=$!
wait $job
echo "job exited $?"
kill -INT $tracer 2>/dev/null
wait $tracer
echo "tracer exited $?"
python3 "$(dirname "$0")/mpi_check.py" "$OUT" 1 $steps
