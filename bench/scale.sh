#!/usr/bin/env bash
# Section 13b: analyze on synthetic merges of 4,096 ranks (issue 34): the
# fleet's scale on one machine. Per shape: the recordings' calls, analyze's
# time and peak RSS, whom the verdict names, and whether the clock-free
# blame agrees with the merged clocks. The same 4,096 ranks as 512 nodes of
# 8 and as 64 nodes of 64 tell what a node costs from what a rank costs.
# Each shape takes ~2 minutes to write (synth_recordings) and ~1 to judge.
set -euo pipefail
build=${1:-build}
source "$(dirname "$0")/synth_analyze.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo
echo "### 13b. analyze at 4,096 ranks (bench/scale.sh), run of $(date -u '+%Y-%m-%d %H:%M') UTC on $(uname -r), $(nproc) CPUs"
echo
echo "\`$build/bench/synth_recordings DIR 4096 PER_NODE 60 50 RANK\` (as section 13: one all-reduce per 50 ms"
echo "step, rank RANK 1.5x slower, clocks skewed up to +-100 ms), then \`slowburn analyze DIR\`."
echo
echo "| ranks | nodes | job seconds | slowed rank | calls | analyze s | us a call | peak RSS KiB | verdict names | clocks |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for spec in "4096 8 60 2049" "4096 64 60 2049" "4096 8 60 -1"; do
	read -r ranks per_node seconds slow <<<"$spec"
	synth_analyze "$build" "$tmp" "$ranks" "$per_node" "$seconds" "$slow"
	echo "| $ranks | $((ranks / per_node)) | $seconds | $([ "$slow" -ge 0 ] && echo "$slow" || echo none) | $calls | $secs | $(echo "$secs * 1000000 / $calls" | bc -l | cut -c1-4) | $kib | ${named:-nobody} | $clocks |"
done
