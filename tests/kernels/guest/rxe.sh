# Soft-RoCE: rdma_rxe on a veth pair is a real RDMA device; `slowburn fabric`
# must read its port counters and find its netdev (rxe has no device link:
# the netdev is named in ports/1/gid_attrs/ndevs/).
if [ "${SB_GUEST:-}" != 1 ]; then
	skip rxe "not in a QEMU guest: Soft-RoCE is set up only inside the guests"
	return 0
fi
# crc32_generic: rxe asks the crypto API for crc32 at link time, which would
# request_module() through a modprobe that cannot see this kernel's modules.
if ! modprobe -d /run/sb/kernel -a veth crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe; then
	fail rxe "cannot load veth and rdma_rxe from the kernel's own modules"
	return 0
fi
ip link add sbveth0 type veth peer name sbveth1
ip addr add 10.99.0.1/24 dev sbveth0
ip addr add 10.99.0.2/24 dev sbveth1
ip link set sbveth0 up
ip link set sbveth1 up
if ! rdma link add rxe0 type rxe netdev sbveth0; then
	fail rxe "rdma link add rxe0 type rxe netdev sbveth0 failed"
	return 0
fi
wait_for 20 grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state
cat /sys/class/infiniband/rxe0/ports/1/state
ls /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/ | head -3
"$SB" fabric --json -d 2 --nic rxe0 >"$OUT/rxe.fabric.jsonl" 2>"$OUT/rxe.fabric.err"
cat "$OUT/rxe.fabric.jsonl" | cut -c1-400
rates=$(grep '"kind":"rates"' "$OUT/rxe.fabric.jsonl" | grep '"nic":"rxe0"' | tail -1)
if echo "$rates" | grep -q '"netdev":"sbveth0"'; then
	pass rxe.fabric "rxe0 port 1 (ACTIVE) read by slowburn fabric with its netdev sbveth0 (from ports/1/gid_attrs/ndevs)"
else
	fail rxe.fabric "slowburn fabric did not name rxe0's netdev sbveth0: $(echo "$rates" | cut -c1-300) $(tail -2 "$OUT/rxe.fabric.err")"
fi
