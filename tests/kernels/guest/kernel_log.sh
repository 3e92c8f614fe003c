# The tests that write fake NVIDIA Xid lines into the kernel log (the
# printk:console filter, a burst of 10,000, the xid tool), and the AER and
# link tracepoints' attach path: here, in a guest whose kernel log no
# monitor reads, never on a node (tests/support/test_support.h,
# SKIP_UNLESS_KERNEL_MATRIX_GUEST).
if [ "${SB_GUEST:-}" != 1 ]; then
	skip kernel_log "the host's own kernel: its log is every monitor's; these run in the guests"
	return 0
fi
for run in "bpf_tests GuestKernelLog.*:TpRecord.*" "scenario_tests GuestKernelLog.*"; do
	set -- $run
	name=kernel_log.${1%_tests}
	out=$("$sb_build/tests/$1" --gtest_filter="$2" --gtest_brief=1 --gtest_color=no 2>&1)
	rc=$?
	echo "$out"
	passed=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p')
	skipped=$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p')
	if [ $rc -ne 0 ]; then
		fail "$name" "$(echo "$out" | grep -m3 -E 'FAILED|Failure' | tr '\n' ' ')"
	elif [ "${skipped:-0}" -gt 0 ]; then
		fail "$name" "$skipped test(s) skipped in the guest: $(echo "$out" | grep -A1 -m2 'Skipped' | tr '\n' ' ')"
	elif [ "${passed:-0}" -gt 0 ]; then
		pass "$name" "$passed test(s) ($2)"
	else
		fail "$name" "no test ran ($2)"
	fi
done
