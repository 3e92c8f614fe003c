#!/usr/bin/env bash
# Runs the three test layers in order: unit (no root), BPF integration and
# scenarios (root: real programs on real hooks; they skip with the reason
# when not root). Stops at the first layer that fails. Ends with every
# skipped test and why, counted by reason: a green run says what it did not
# prove.
#
# GuestKernelLog.* write fake NVIDIA Xid lines into the kernel log, which a
# node's monitors read: never run here, they run in the kernel matrix's
# guests (make test-kernels-ci; tests/kernels/guest/kernel_log.sh).
set -uo pipefail
build=${1:-build}

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: not root: the BPF and scenario tests will skip (they load BPF programs)" >&2
fi

# Each suite's results, with every test's time and every skip's reason, in
# $build/test-results/ (gtest XML): where the time of `make test` goes.
mkdir -p "$build/test-results"
rm -f "$build"/test-results/*.xml
# The node's CPU ticks before the tests (/proc/stat): the scenario tests run
# real jobs on 2 CPUs, and a run that fails on timing is read beside the
# hypervisor's steal and the idle share over the run (printed at the end).
cpu_before=$(head -1 /proc/stat)
status=0
for suite in unit_tests bpf_tests scenario_tests; do
	echo "=== $suite"
	if ! "$build/tests/$suite" --gtest_brief=1 --gtest_color=no --gtest_filter='-GuestKernelLog.*' \
		--gtest_output="xml:$build/test-results/$suite.xml"; then
		echo "=== $suite FAILED" >&2
		status=1
		break
	fi
done
# The fuzz targets (make fuzz runs them for long) on their saved corpora, the
# inputs that found bugs included: a parser change that breaks a harness or
# reopens a found crash fails here, in seconds.
if [ $status -eq 0 ]; then
	echo "=== fuzz corpora"
	for fuzzer in "$build"/fuzz/*_fuzz; do
		[ -x "$fuzzer" ] || continue
		name=$(basename "$fuzzer" _fuzz)
		if ! out=$("$fuzzer" -runs=0 "tests/fuzz/corpus/$name" 2>&1); then
			echo "$out" | tail -20
			echo "=== fuzz corpus $name FAILED" >&2
			status=1
			break
		fi
		echo "$name: $(ls "tests/fuzz/corpus/$name" | wc -l) inputs, $(echo "$out" | sed -n 's/^Done \([0-9]*\) runs.*/\1/p') runs"
	done
fi
python3 - "$build/test-results" "$cpu_before" "$(head -1 /proc/stat)" <<'PY' || true
import collections, pathlib, sys, xml.etree.ElementTree as ET
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal ...
before, after = ([int(x) for x in line.split()[1:9]] for line in sys.argv[2:4])
delta = [a - b for a, b in zip(after, before)]
if sum(delta) > 0:
    print(f"=== node over the tests: {100 * delta[7] / sum(delta):.1f}% of CPU time stolen by the hypervisor, "
          f"{100 * (delta[3] + delta[4]) / sum(delta):.0f}% idle")
busy, failed = {}, set()
times, skips = [], collections.defaultdict(list)
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.xml")):
    for case in ET.parse(f).getroot().iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        times.append((float(case.get("time", "0")), name))
        for prop in case.iter("property"):
            if prop.get("name") == "others_cpu_share":
                busy[name] = prop.get("value")
        if case.find("failure") is not None:
            failed.add(name)
        skipped = case.find("skipped")
        if skipped is not None:
            # "file:line\nreason": the reason is what a reader acts on.
            reason = skipped.get("message", "").split("\n", 1)[-1].strip() or "(no reason given)"
            skips[reason].append(f"{f.stem}: {name}")
known = sorted(float(v) for v in busy.values() if v != "unknown")
if known:
    # The share of the node's CPU that went to other processes or steal
    # while a scenario test traced its job (tests/support, trace()); no max:
    # the CPU-contention tests start busy processes beside their jobs.
    print(f"=== others' CPU share while {len(known)} tests traced: median {known[len(known) // 2]:.3f}")
for name in sorted(failed & busy.keys()):
    print(f"  failed: {name}, others' CPU share {busy[name]}")
times.sort(reverse=True)
print("=== slowest: " + ", ".join(f"{name} {secs:.0f} s" for secs, name in times[:8]))
total = sum(len(v) for v in skips.values())
print(f"=== skipped: {total} test(s), {len(skips)} reason(s)")
for reason, tests in sorted(skips.items(), key=lambda kv: -len(kv[1])):
    print(f"  {len(tests)} x {reason}")
    for t in tests:
        print(f"      {t}")
PY
[ $status -eq 0 ] && echo "=== all tests passed"
exit $status
