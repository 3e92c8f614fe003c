#!/bin/sh
# The slow burn's sensitivity table (bench/RESULTS.md): synthetic jobs of
# R ranks (8 per node, 50 ms steps, 1% compute noise, node clocks skewed),
# one rank S times slower, recorded through the tracer's own Recorder and
# judged by `slowburn analyze`: who is named, by which test, at what cost.
#   bench/sensitivity.sh [BUILD] [SECONDS]
set -eu
BUILD=${1:-build}
SECONDS_TRACED=${2:-300}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '| ranks | slowdown | named | detector | severity | cost | last in |\n|---|---|---|---|---|---|---|\n'
for ranks in 8 64 512; do
  slow=$((ranks / 2 + 1))
  for s in 1.0 1.02 1.03 1.05 1.1 1.2 1.5; do
    dir="$out/$ranks-$s"
    "$BUILD/bench/synth_recordings" "$dir" "$ranks" 8 "$SECONDS_TRACED" 50 "$slow" "$s" 0.01 >/dev/null
    "$BUILD/slowburn" analyze --json "$dir" 2>/dev/null | python3 -c '
import json, sys
slow, s, ranks = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for line in sys.stdin:
    j = json.loads(line)
    if j.get("kind") != "verdict": continue
    named = j["stragglers"]
    if not named:
        print(f"| {ranks} | {s}x | nobody | - | - | - | - |")
    for f in named:
        e = f["evidence"]
        who = "rank %d%s" % (f["rank"], "" if f["rank"] == slow else " (WRONG)")
        print("| %s | %sx | %s | %s | %s | %.1f%% | %.0f%% |" % (ranks, s, who, e["detector"], f["severity"],
              100 * f["cost_share"], 100 * e["last_fraction"]))
' "$slow" "$s" "$ranks"
    rm -rf "$dir"
  done
done
