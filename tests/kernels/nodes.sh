#!/usr/bin/env bash
# make test-nodes: one Open MPI job across two QEMU guests (Debian's 6.12
# kernel, as the kernel matrix boots it), each guest a node with its own
# kernel, scheduler and clocks: node-a's wall clock starts at 2026-01-01
# 00:00:00, node-b's 90 s later (QEMU -rtc base=), and each CLOCK_MONOTONIC
# counts from its own boot. They share one Ethernet segment (a QEMU socket
# netdev, on this host's loopback only; the addresses live in the guests).
# Each guest runs tests/kernels/nodes/node.sh: `slowburn trace --record` on
# its own two ranks; this script lets each job step once both tracers are
# up, then runs `slowburn analyze` on the two recordings of each phase and
# tests/kernels/nodes/check.py asserts the verdicts (the slowed rank named
# with its node, both nodes placed on the true offset and not on the wall
# clocks, the hang named across the guests, a killed tracer's node).
#   tests/kernels/nodes.sh [BUILD]     SB_NODES_KERNEL=bookworm for 6.1
# Exit 1 when a check failed or a guest hung. Output: build/kernels/nodes/.
set -uo pipefail
build=$(realpath "${1:-build}")
here=$(dirname "$(realpath "$0")")
src=$(realpath "$here/../..")
kdir=$build/kernels
out=$kdir/nodes
suite=${SB_NODES_KERNEL:-bookworm-backports}
timeout_s=${SB_GUEST_TIMEOUT:-900}
started=$(date +%s)

for tool in qemu-system-x86_64 /sbin/modprobe ss; do
	command -v "$tool" >/dev/null || {
		echo "nodes: $tool missing: make deps (qemu-system-x86, kmod, iproute2)" >&2
		exit 1
	}
done
mkdir -p "$kdir"
gcc -static -O2 -Wall -Wextra -Werror -o "$kdir/init" "$here/init.c" || exit 1
kernel=$("$here/fetch.sh" "$kdir" "$suite") || {
	echo "nodes: cannot fetch the $suite kernel" >&2
	exit 1
}
rm -rf "$out"
mkdir -p "$out"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# boot NODE RTC FABRIC MAC: one guest in the background.
boot() {
	python3 "$here/boot.py" --kernel "$kernel" --init "$kdir/init" --suite "$here/nodes/node.sh" \
		--out "$out/$1" --build "$build" --src "$src" --timeout "$timeout_s" \
		--append "sb_node=$1" --rtc-base "$2" --fabric "$3" --mac "$4" >"$out/$1.boot.log" 2>&1 &
}
boot a 2026-01-01T00:00:00 "listen:$port" 52:54:00:5b:00:0a
guest_a=$!
# node-b's netdev connects to node-a's: node-a's QEMU must listen first.
listening=no
for _ in $(seq 100); do
	ss -ltn "sport = :$port" | grep -q LISTEN && listening=yes && break
	sleep 0.1
done
if [ $listening = no ]; then
	echo "nodes: node-a's QEMU did not listen on 127.0.0.1:$port in 10 s: $(tail -5 "$out/a.boot.log" "$out/a/qemu.log" 2>/dev/null)" >&2
	kill $guest_a 2>/dev/null
	exit 1
fi
boot b 2026-01-01T00:01:30 "connect:$port" 52:54:00:5b:00:0b
guest_b=$!

# The handshakes of node.sh: a phase's job steps when both tracers are up;
# the hang phase ends on both nodes together once node-b has seen its rank
# stopped for 8 s.
while kill -0 $guest_a 2>/dev/null || kill -0 $guest_b 2>/dev/null; do
	for phase in slow hang lost; do
		if [ -e "$out/a/$phase.tracing" ] && [ -e "$out/b/$phase.tracing" ] && [ ! -e "$out/a/$phase.go" ]; then
			touch "$out/a/$phase.go" "$out/b/$phase.go"
			echo "nodes: $phase: both tracers up at +$(($(date +%s) - started)) s"
		fi
	done
	if [ -e "$out/b/hang.frozen" ] && [ ! -e "$out/a/hang.stop" ]; then
		touch "$out/a/hang.stop" "$out/b/hang.stop"
	fi
	if [ -e "$out/a/hang.traced" ] && [ -e "$out/b/hang.traced" ] && [ ! -e "$out/a/hang.kill" ]; then
		touch "$out/a/hang.kill" "$out/b/hang.kill"
	fi
	sleep 0.2
done
status=0
wait $guest_a || status=1
wait $guest_b || status=1
for node in a b; do
	cat "$out/$node.boot.log" >&2
	[ -f "$out/$node/results" ] && cat "$out/$node/results"
done

for phase in slow hang lost; do
	"$build/slowburn" analyze "$out/a/$phase" "$out/b/$phase" --json --hang-s 4 \
		>"$out/$phase.analyze.jsonl" 2>"$out/$phase.analyze.err"
	echo $? >"$out/$phase.analyze.rc"
done
# The committed doc only from the default kernel (SB_NODES_KERNEL is a knob).
doc=$kdir/kernel-support-nodes.md
[ -z "${SB_NODES_KERNEL:-}" ] && doc=$src/docs/kernel-support.md
python3 "$here/nodes/check.py" "$out" --doc "$doc" --kernel "$(basename "$kernel")" \
	--elapsed $(($(date +%s) - started)) || status=1
echo "nodes: $(($(date +%s) - started)) s in all; output in $out"
exit $status
