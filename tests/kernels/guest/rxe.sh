# Soft-RoCE: rdma_rxe on both ends of a veth pair (rxe0 on sbveth0, rxe1 on
# sbveth1) is a real RDMA fabric; real faults are made on it and `slowburn
# fabric` must report each: retransmissions under packet loss (netem), the
# survivor's endless retries when its peer is killed, a link flap when the
# netdev goes down.
if [ "${SB_GUEST:-}" != 1 ]; then
	skip rxe "not in a QEMU guest: Soft-RoCE is set up only inside the guests"
	return 0
fi
if ! rxe_modules veth; then
	fail rxe "cannot load veth, rdma_rxe and sch_netem from the kernel's own modules"
	return 0
fi
ip link add sbveth0 type veth peer name sbveth1
if ! rxe_pair rxe0 sbveth0 10.99.0.1 rxe1 sbveth1 10.99.0.2 100 2>"$OUT/rxe.setup.err"; then
	fail rxe "Soft-RoCE on the veth pair: $(cat "$OUT/rxe.setup.err")"
	return 0
fi
port=/sys/class/infiniband/rxe0/ports/1
cat $port/state
"$SB" fabric --json -d 2 --nic rxe0 >"$OUT/rxe.fabric.jsonl" 2>"$OUT/rxe.fabric.err"
cut -c1-400 "$OUT/rxe.fabric.jsonl"
rates=$(grep '"kind":"rates"' "$OUT/rxe.fabric.jsonl" | grep '"nic":"rxe0"' | tail -1)
if echo "$rates" | grep -q '"netdev":"sbveth0"'; then
	pass rxe.fabric "rxe0 port 1 (ACTIVE) read by slowburn fabric with its netdev sbveth0 (from ports/1/gid_attrs/ndevs)"
else
	fail rxe.fabric "slowburn fabric did not name rxe0's netdev sbveth0: $(echo "$rates" | cut -c1-300) $(tail -2 "$OUT/rxe.fabric.err")"
fi

g0=$(gid_index rxe0 10.99.0.1)
g1=$(gid_index rxe1 10.99.0.2)
counter() { cat /sys/class/infiniband/$1/ports/1/hw_counters/$2; }
# Traffic flows: rxe1 received 200 more packets than it had (ARG).
streaming() { [ "$(counter rxe1 rcvd_pkts)" -gt $(($1 + 200)) ]; }
# A verbs tool's server is up once its out-of-band TCP port listens.
listening() { ss -ltn "sport = :$1" | grep -q LISTEN; }
summary() { echo "$1" | sed -n 's/.*"summary":"\([^"]*\)".*/\1/p' | cut -c1-200; }
# The out-of-band exchange of QP numbers goes over lo (127.0.0.1); the RoCE
# traffic over the veth pair.
timeout 60 ibv_rc_pingpong -p 18515 -d rxe1 -g "$g1" -n 100 -s 4096 >"$OUT/rxe.pp.server" 2>&1 &
wait_for 20 listening 18515
if timeout 30 ibv_rc_pingpong -p 18515 -d rxe0 -g "$g0" -n 100 -s 4096 127.0.0.1 >"$OUT/rxe.pp.client" 2>&1; then
	pass rxe.traffic "ibv_rc_pingpong rxe0 -> rxe1 over sbveth0 (GID index $g0): $(grep iters "$OUT/rxe.pp.client")"
else
	fail rxe.traffic "ibv_rc_pingpong did not complete in 30 s: $(tail -2 "$OUT/rxe.pp.client" | tr '\n' ' ')"
fi
wait

# (a) 20% loss on sbveth0 while ib_send_bw streams rxe0 -> rxe1: rxe0's
# requester retries (completer_retry_err) on the NAKs (rcvd_seq_err) of
# rxe1's responder, which sees the gaps (out_of_seq_request).
tc qdisc add dev sbveth0 root netem loss 20%
retries_before=$(counter rxe0 completer_retry_err)
"$SB" fabric --json -i 1 -d 120 --nic rxe0 --nic rxe1 >"$OUT/rxe.loss.jsonl" 2>"$OUT/rxe.loss.err" &
fabric=$!
timeout 60 ib_send_bw -p 18516 -d rxe1 -x "$g1" -D 4 -s 4096 -F >"$OUT/rxe.bw.server" 2>&1 &
wait_for 20 listening 18516
timeout 60 ib_send_bw -p 18516 -d rxe0 -x "$g0" -D 4 -s 4096 -F 127.0.0.1 >"$OUT/rxe.bw.client" 2>&1
sleep 1.5 # one more reading
kill -INT $fabric
wait
tc -s qdisc show dev sbveth0 | tee "$OUT/rxe.netem"
tc qdisc del dev sbveth0 root
dropped=$(grep -o 'dropped [0-9]*' "$OUT/rxe.netem" | cut -d' ' -f2)
retries=$(($(counter rxe0 completer_retry_err) - retries_before))
event=$(grep '"type":"rdma.retrans"' "$OUT/rxe.loss.jsonl" | grep '"nic":"rxe0"' | head -1)
if [ -n "$event" ] && [ "$retries" -gt 0 ]; then
	pass rxe.loss "netem dropped ${dropped:-?} packets on sbveth0; rxe0 completer_retry_err +$retries; slowburn fabric: $(summary "$event")"
else
	fail rxe.loss "netem dropped ${dropped:-?}, rxe0 completer_retry_err +$retries, no rdma.retrans event for rxe0: $(grep '"kind":"event"' "$OUT/rxe.loss.jsonl" | cut -c1-200 | head -2) $(tail -2 "$OUT/rxe.loss.err")"
fi

# (c) The peer killed mid-transfer: its QP is destroyed and rxe1 drops what
# arrives for it without a NAK, so rxe0 times out and retries. The verbs
# tools ask for retry_cnt 7, which rxe treats as "retry forever"
# (rxe_comp.c never decrements 7: ib_send_bw's survivor retried in RTS for
# as long as it ran), and their rdma_cm mode, where --retry_count applies,
# cannot connect two local addresses (the CM checks the request's route
# against the netdev, and it is lo). rc_peer (tests/targets) sets
# retry_cnt 1 with a 1 s ACK timeout (-t 18: 67 ms ran out under TCG with
# the peer alive): its retries run out, rxe fails the send
# (retry_exceeded_err), and rc_peer moves its QP to ERR as an application does.
rc_peer=$sb_build/tests/targets/rc_peer
"$SB" qp --lib /usr/lib/x86_64-linux-gnu/libibverbs.so.1 --json >"$OUT/rxe.qp.jsonl" 2>"$OUT/rxe.qp.err" &
tracer=$!
"$SB" fabric --json -i 1 --nic rxe0 >"$OUT/rxe.kill.jsonl" 2>"$OUT/rxe.kill.err" &
fabric=$!
# Both are ready at their "tracing" status line, written and flushed once
# qp's 4 uprobes are attached (perf-event links before 6.10) and once
# fabric has read its baseline: no fixed sleep, which a loaded machine outruns.
for tool in qp kill; do
	wait_for 60 grep -q '"event":"tracing"' "$OUT/rxe.$tool.jsonl" ||
		echo "rxe.$tool.jsonl: no \"tracing\" status in 60 s: $(tail -2 "$OUT/rxe.$tool.err")"
done
echo "qp tracer up at $(cut -d' ' -f1 /proc/uptime)"
"$rc_peer" -d rxe1 -g "$g1" -p 18520 -s 60 >"$OUT/rxe.kill.server" 2>&1 &
server=$!
wait_for 20 listening 18520
"$rc_peer" -d rxe0 -g "$g0" -p 18520 -r 1 -t 18 -s 60 127.0.0.1 >"$OUT/rxe.kill.client" 2>&1 &
client=$!
wait_for 20 streaming "$(counter rxe1 rcvd_pkts)"
exceeded_before=$(counter rxe0 retry_exceeded_err)
echo "streaming at $(cut -d' ' -f1 /proc/uptime)"
kill -0 $client 2>/dev/null && alive=yes || alive=no
kill -9 $server
client_done() { ! kill -0 $client; }
wait_for 30 client_done || kill $client
wait $client
client_rc=$?
echo "client exited $client_rc at $(cut -d' ' -f1 /proc/uptime)"
sleep 2 # one more fabric reading
kill -INT $fabric $tracer
wait $fabric $tracer
echo "tracers done at $(cut -d' ' -f1 /proc/uptime)"
exceeded=$(($(counter rxe0 retry_exceeded_err) - exceeded_before))
cat "$OUT/rxe.kill.client"
event=$(grep '"type":"rdma.retrans"' "$OUT/rxe.kill.jsonl" | grep '"retry_exceeded_err"' | head -1)
if [ $alive = yes ] && [ $client_rc -eq 3 ] && [ "$exceeded" -gt 0 ] && [ -n "$event" ]; then
	pass rxe.peer_killed "peer killed: rxe0 retry_exceeded_err +$exceeded, rc_peer: $(grep -o 'completion error.*' "$OUT/rxe.kill.client"); slowburn fabric: $(summary "$event")"
else
	fail rxe.peer_killed "peer killed (client running then: $alive): rc_peer exit $client_rc ($(tail -1 "$OUT/rxe.kill.client")), retry_exceeded_err +$exceeded, rdma.retrans with retry_exceeded_err: '$(summary "$event")' $(tail -2 "$OUT/rxe.kill.err")"
fi
event=$(grep '"type":"qp.error"' "$OUT/rxe.qp.jsonl" | grep "\"pid\":$client," | head -1)
if [ -n "$event" ]; then
	pass rxe.qp_error "slowburn qp: $(summary "$event")"
else
	fail rxe.qp_error "no qp.error for rc_peer (pid $client) in slowburn qp: $(grep '"kind":"event"' "$OUT/rxe.qp.jsonl" | cut -c1-200 | head -3) $(tail -2 "$OUT/rxe.qp.err")"
fi

# (b) The netdev down: rxe's port goes DOWN and counts link_downed.
"$SB" fabric --json -i 1 -d 4 --nic rxe0 >"$OUT/rxe.down.jsonl" 2>"$OUT/rxe.down.err" &
fabric=$!
sleep 1.5
ip link set sbveth0 down
wait_for 5 grep -q DOWN $port/state
state=$(cat $port/state)
wait $fabric
ip link set sbveth0 up
event=$(grep '"type":"link.flap"' "$OUT/rxe.down.jsonl" | head -1)
if [ "$state" = "1: DOWN" ] && [ -n "$event" ]; then
	pass rxe.link_down "ip link set sbveth0 down: rxe0 port 1 state '$state', link_downed $(counter rxe0 link_downed); slowburn fabric: $(summary "$event")"
else
	fail rxe.link_down "sbveth0 down: rxe0 port state '$state', link.flap event: '$(echo "$event" | cut -c1-200)' $(tail -2 "$OUT/rxe.down.err")"
fi
