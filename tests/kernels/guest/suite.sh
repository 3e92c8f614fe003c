# The guest suite (run by tests/kernels/init.c as the guest's only program,
# or on the host by tests/kernels/matrix.sh with SB_OUT and sb_build set):
# each test is a file here, run in this order; the host reads $SB_OUT/results.
here=$(dirname "$0")
. "$here/lib.sh"
echo "SB-SUITE start $(uname -r)"
if [ "${SB_GUEST:-}" = 1 ]; then
	ip link set lo up             # mpirun's own connections
	hostname sb-guest             # OpenMPI refuses the kernel's "(none)"
fi
for t in $(echo "${sb_tests:-check,formats,kernel_log,aer,kprobe,mpi,ucx,hotplug,rxe}" | tr , " "); do
	start=$(cut -d' ' -f1 /proc/uptime)
	( . "$here/$t.sh" ) >"$OUT/$t.log" 2>&1 || fail "$t" "the test script exited $? (log: $t.log)"
	grep '^SB-RESULT' "$OUT/$t.log" >/dev/null || fail "$t" "no result (log: $t.log)"
	echo "SB-TIME $t $start $(cut -d' ' -f1 /proc/uptime)" >>"$OUT/times"
done
cat "$OUT/results"
echo "SB-SUITE end"
