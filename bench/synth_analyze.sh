# Sourced by bench/record.sh (section 13) and bench/scale.sh (13b): one
# synthetic merge written and judged.
# synth_analyze BUILD TMP RANKS PER_NODE SECONDS SLOW_RANK: writes the
# recordings (bench/synth_recordings, 50 ms steps), runs `slowburn analyze`
# on them and sets secs, kib (its time and peak RSS), calls, named (whom the
# verdict names, "rank R on NODE", comma-separated) and clocks (agree,
# disagree or "no check"); the recordings are removed.
synth_analyze() {
	local build=$1 tmp=$2 ranks=$3 per_node=$4 seconds=$5 slow=$6
	local dir="$tmp/synth-$ranks-$per_node-$seconds"
	"$build/bench/synth_recordings" "$dir" "$ranks" "$per_node" "$seconds" 50 "$slow" >/dev/null
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$build/slowburn" analyze "$dir" >"$tmp/analyze.out" 2>&1 || true
	read -r secs kib <"$tmp/time"
	calls=$(for f in "$dir"/*.sbr; do sqlite3 "$f" 'select count(*) from calls'; done | paste -sd+ | bc)
	named=$(sed -n 's/^  straggler: \(rank [0-9]*\) (pid [0-9]* on \([^)]*\)).*/\1 on \2/p' "$tmp/analyze.out" | paste -sd, -)
	clocks=$(sed -n 's/^  clocks: \(clock-free blame agrees\|clocks and waits disagree\).*/\1/p' "$tmp/analyze.out")
	case "$clocks" in "clock-free blame agrees") clocks=agree ;; "clocks and waits disagree") clocks=disagree ;; *) clocks="no check" ;; esac
	rm -rf "$dir"
}
