#!/bin/bash
# Re-analyzes kept recordings of the busy-loops scenario (four one-rank
# nodes, skews node-b -2.5 s, node-c +30 ms, node-d +1.5 s; kept with
# SLOWBURN_TEST_KEEP_RECORDINGS=DIR build/tests/scenario_tests
# --gtest_filter=AnalyzeAcrossNodes.FourNodesBesideTwoBusyLoops*) with a
# slowburn binary, and prints each node's error against its true skew in
# microseconds: b = placed inside causality's bounds, p = on prompt
# releases, s = by the spreads, OUT = left out. Run it with two binaries
# to compare a change on the same recordings.
#
#   bench/clock_placements.sh SLOWBURN DIR...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: clock_placements.sh SLOWBURN DIR..." >&2; exit 1; }
bin=$1
shift
find "$@" -name node-c.sbr -printf '%h\n' | sort -u | while read -r d; do
	"$bin" analyze "$d" --json 2>/dev/null | python3 -c '
import json, sys
truth = {"node-b": -2.5e9, "node-c": 30e6, "node-d": 1.5e9}
out = []
for line in sys.stdin:
    o = json.loads(line)
    if o.get("kind") != "node" or o["host"] not in truth:
        continue
    off = o.get("clock_offset_ns")
    how = "b" if o.get("clock_offset_bound_ns") else ("p" if o.get("prompt_matched") else "s")
    out.append("%s:%s" % (o["host"][-1], "OUT" if off is None else "%.0f%s" % ((off - truth[o["host"]]) / 1e3, how)))
print(" ".join(out))' | sed "s|^|$(basename "$d") |"
done
