#!/usr/bin/env bash
# Runs the three test layers in order: unit (no root), BPF integration and
# scenarios (root: real programs on real hooks; they skip with the reason
# when not root). Stops at the first layer that fails.
set -uo pipefail
build=${1:-build}

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: not root: the BPF and scenario tests will skip (they load BPF programs)" >&2
fi

status=0
for suite in unit_tests bpf_tests scenario_tests; do
	echo "=== $suite"
	if ! "$build/tests/$suite" --gtest_brief=1 --gtest_color=no; then
		echo "=== $suite FAILED" >&2
		status=1
		break
	fi
done
[ $status -eq 0 ] && echo "=== all tests passed"
exit $status
