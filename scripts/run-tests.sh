#!/usr/bin/env bash
# Runs the three test layers in order: unit (no root), BPF integration and
# scenarios (root: real programs on real hooks; they skip with the reason
# when not root). Stops at the first layer that fails.
set -uo pipefail
build=${1:-build}

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: not root: the BPF and scenario tests will skip (they load BPF programs)" >&2
fi

# Each suite's results, with every test's time, in $build/test-results/
# (gtest JSON): where the time of `make test` goes.
mkdir -p "$build/test-results"
status=0
for suite in unit_tests bpf_tests scenario_tests; do
	echo "=== $suite"
	if ! "$build/tests/$suite" --gtest_brief=1 --gtest_color=no --gtest_output="json:$build/test-results/$suite.json"; then
		echo "=== $suite FAILED" >&2
		status=1
		break
	fi
done
# The slowest tests, for the 25-minute rule.
python3 - "$build/test-results" <<'PY' || true
import json, pathlib, sys
tests = []
for f in pathlib.Path(sys.argv[1]).glob("*.json"):
    for suite in json.loads(f.read_text()).get("testsuites", []):
        for t in suite.get("testsuite", []):
            tests.append((float(t.get("time", "0s").rstrip("s")), f"{suite['name']}.{t['name']}"))
tests.sort(reverse=True)
print("=== slowest: " + ", ".join(f"{name} {secs:.0f} s" for secs, name in tests[:8]))
PY
[ $status -eq 0 ] && echo "=== all tests passed"
exit $status
