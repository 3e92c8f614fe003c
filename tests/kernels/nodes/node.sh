# One node of `make test-nodes` (tests/kernels/nodes.sh): the script a QEMU
# guest's /init runs (tests/kernels/init.c). Two guests, node-a and node-b,
# each its own kernel and clocks, share an Ethernet segment (a QEMU socket
# netdev: the e1000e at 0000:00:1e.0, 10.77.0.1 and 10.77.0.2). node-a runs
# mpirun for one Open MPI job of 4 ranks over TCP, ranks 0-1 on node-a and
# 2-3 on node-b (its daemon started through rsh.py, the guests' ssh); each
# node runs `slowburn trace --record` on its own ranks. The host lets a job
# step only when both tracers are up (PHASE.go) and analyzes the recordings.
#
# Phases, each one job:
#   slow  rank 3 (node-b) computes 3x: named, with its node;
#   hang  rank 2 (node-b) stops itself inside a collective: the hang of the
#         whole job, named from both recordings;
#   lost  as slow, but node-b's tracer is killed (SIGKILL) mid-run.
# Files on the host (this guest's /run/sb/out): PHASE/ (the recording, made
# in the guest's /tmp and copied once its tracer ended: SQLite's WAL needs a
# shared mmap, which the uncached 9p share refuses), PHASE.trace.jsonl,
# PHASE.job.log; handshakes PHASE.tracing (this node's tracer is up),
# PHASE.go (the host: both are), hang.frozen (node-b: rank 2 has been
# stopped 8 s), hang.stop (the host: end the tracers), hang.traced (this
# node's tracer ended), hang.kill (the host: both did; end the job).
here=$(dirname "$0")
. "$here/../guest/lib.sh"
me=${sb_node:?sb_node=a or b on the kernel command line}
case $me in
a) addr=10.77.0.1 ;;
b) addr=10.77.0.2 ;;
*)
	fail nodes "sb_node=$me: want a or b"
	exit 0
	;;
esac
echo "SB-SUITE start $(uname -r) node-$me"
ip link set lo up
hostname "node-$me"
printf '127.0.0.1 localhost\n10.77.0.1 node-a\n10.77.0.2 node-b\n' >/tmp/hosts
mount --bind /tmp/hosts /etc/hosts
modprobe -d /run/sb/kernel e1000e
if ! wait_for 30 ls /sys/bus/pci/devices/0000:00:1e.0/net >/dev/null; then
	fail "nodes.net.$me" "no netdev for the fabric NIC (0000:00:1e.0) in 30 s"
	exit 0
fi
dev=$(ls /sys/bus/pci/devices/0000:00:1e.0/net)
ip addr add "$addr/24" dev "$dev"
ip link set "$dev" up
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SB_RSH_PORT=7722
python3 "$here/rsh.py" serve "$addr" 7722 >"$OUT/rsh.log" 2>&1 &
peer_up() { python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], 7722), timeout=1)' "$1"; }
peer=node-b
[ $me = b ] && peer=node-a
if wait_for 120 peer_up $peer; then
	pass "nodes.net.$me" "$peer reached over the fabric ($dev, $addr) at $(cut -d' ' -f1 /proc/uptime) s"
else
	fail "nodes.net.$me" "$peer:7722 not reachable in 120 s over $dev"
	exit 0
fi

w=$sb_build/libexec/slowburn-mpi-workload
ranks() { pgrep -x slowburn-mpi-wo; } # comm is cut at 15 characters
two_ranks() { [ "$(ranks | wc -l)" -ge 2 ]; }
no_ranks() { ! ranks >/dev/null; }

# start PHASE WORKLOAD-ARGS...: node-a launches the job; each node traces its
# two ranks once they exist, says so, and waits for the host's go.
start() {
	phase=$1
	shift
	if [ $me = a ]; then
		mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 --host node-a:2,node-b:2 \
			--mca plm_rsh_agent "$here/rsh.py" --mca btl self,vader,tcp \
			--mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
			"$w" "$@" --wait-file "/run/sb/out/$phase.go" >"$OUT/$phase.job.log" 2>&1 &
		job=$!
	fi
	if ! wait_for 180 two_ranks; then
		fail "nodes.$phase.$me" "this node's 2 ranks did not start in 180 s: $(tail -5 "$OUT/$phase.job.log" 2>/dev/null)"
		return 1
	fi
	pids=$(ranks | sed 's/^/--pid /')
	mkdir -p "/tmp/$phase"
	"$SB" trace --probe 'mpi.*' $pids --no-host --no-hardware --no-rdma --json --host "node-$me" \
		--record "/tmp/$phase/" -d 900 >"$OUT/$phase.trace.jsonl" 2>"$OUT/$phase.trace.err" &
	tracer=$!
	if ! wait_for 180 grep -q '"event":"tracing"' "$OUT/$phase.trace.jsonl"; then
		fail "nodes.$phase.$me" "slowburn trace printed no \"tracing\" status in 180 s: $(tail -3 "$OUT/$phase.trace.err")"
		abandon
		return 1
	fi
	touch "$OUT/$phase.tracing"
	if ! wait_for 180 test -e "$OUT/$phase.go"; then
		fail "nodes.$phase.$me" "the host did not let the job step in 180 s (the other node's tracer?)"
		abandon
		return 1
	fi
	echo "$phase: stepping at $(cut -d' ' -f1 /proc/uptime) s"
}

# A phase that cannot go on: nothing of it may reach the next (whose
# ranks are found by name).
abandon() {
	[ -n "${tracer:-}" ] && kill -KILL $tracer 2>/dev/null
	[ $me = a ] && kill $job 2>/dev/null
	pkill -KILL -x slowburn-mpi-wo
	wait_for 30 no_ranks
	tracer=
}

# keep PHASE: the recording to the host, once its tracer has ended.
keep() {
	mkdir -p "$OUT/$1"
	cp /tmp/$1/*.sbr* "$OUT/$1/" || fail "nodes.$1.$me" "no recording in /tmp/$1: $(tail -3 "$OUT/$1.trace.err")"
}

# finish PHASE: the job's end on this node, then the tracer's.
finish() {
	wait_for 600 no_ranks || fail "nodes.$1.$me" "ranks still running after 600 s"
	[ $me = a ] && wait $job
	kill -INT $tracer 2>/dev/null
	wait $tracer
	echo "$1: tracer exited $? at $(cut -d' ' -f1 /proc/uptime) s"
	keep "$1"
	pass "nodes.$1.$me" "traced and recorded"
}

# Rank 3 computes 3x: on node-b.
job_args="--compute-us 15000 --steps 150 --seconds 900"
if start slow --slow-rank 3 --slowdown 3 $job_args; then
	finish slow
fi

# Rank 2 stops itself inside its MPI_Allgather of step 20; node-b says when
# it has been stopped 8 s, the host ends both tracers together.
stopped() {
	for p in $(ranks); do
		grep -q '^State:.*T' /proc/$p/status 2>/dev/null && return 0
	done
	return 1
}
if start hang --freeze-inside 2:20 $job_args; then
	if [ $me = b ]; then
		if wait_for 300 stopped; then
			sleep 8
			touch "$OUT/hang.frozen"
		else
			fail nodes.hang.b "rank 2 did not stop in 300 s"
		fi
	fi
	wait_for 330 test -e "$OUT/hang.stop" || fail "nodes.hang.$me" "the host never ended the hang phase"
	kill -INT $tracer 2>/dev/null
	wait $tracer
	echo "hang: tracer exited $? at $(cut -d' ' -f1 /proc/uptime) s"
	keep hang
	# The job ends once both tracers have: a rank killed here would end the
	# other node's ranks while its tracer still records them.
	touch "$OUT/hang.traced"
	wait_for 120 test -e "$OUT/hang.kill" || fail "nodes.hang.$me" "the host never ended the hung job"
	pkill -KILL -x slowburn-mpi-wo
	wait_for 60 no_ranks || fail "nodes.hang.$me" "the hung job's ranks still here 60 s after SIGKILL"
	[ $me = a ] && wait $job
	pass "nodes.hang.$me" "traced and recorded"
fi

# As slow, but node-b's tracer is killed 5 s into the job.
if start lost --slow-rank 3 --slowdown 3 $job_args; then
	if [ $me = b ]; then
		sleep 5
		kill -KILL $tracer
		echo "lost: tracer killed at $(cut -d' ' -f1 /proc/uptime) s"
	fi
	finish lost
fi
echo "SB-SUITE end"
