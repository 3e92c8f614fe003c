# Helpers for the guest tests (sourced): results, monitor requests, waits.
# Every result is one line "SB-RESULT PASS|FAIL|SKIP name - detail" on the
# console and in $SB_OUT/results, which the host parses.
SB=$sb_build/slowburn
OUT=$SB_OUT

result() { # STATUS NAME DETAIL
	echo "SB-RESULT $1 $2 - $3" | tee -a "$OUT/results"
}
pass() { result PASS "$1" "$2"; }
fail() { result FAIL "$1" "$2"; }
skip() { result SKIP "$1" "$2"; }

# qmon COMMAND: run COMMAND on the host's QEMU monitor (tests/kernels/boot.py
# serves OUT/mon/N.req), print its reply.
# The sequence number lives in a file: qmon runs in subshells ($(qmon ...)).
qmon() {
	seq=$(($(cat "$OUT/mon/seq" 2>/dev/null || echo 0) + 1))
	echo $seq >"$OUT/mon/seq"
	printf '%s\n' "$1" >"$OUT/mon/$seq.new"
	mv "$OUT/mon/$seq.new" "$OUT/mon/$seq.req"
	i=0
	while [ ! -f "$OUT/mon/$seq.ack" ]; do
		i=$((i + 1))
		[ $i -gt 300 ] && { echo "no monitor reply to '$1' in 30 s" >&2; return 1; }
		sleep 0.1
	done
	cat "$OUT/mon/$seq.ack"
}

# wait_for SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds.
wait_for() {
	limit=$(($1 * 5))
	shift
	i=0
	until "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $limit ] && return 1
		sleep 0.2
	done
}
