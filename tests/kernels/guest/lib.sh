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

# Soft-RoCE between two netdevs of this one guest.
# rxe_pair RXE0 NETDEV0 ADDR0 RXE1 NETDEV1 ADDR1 TABLE: RXE0 on NETDEV0
# (ADDR0/24), RXE1 on NETDEV1, both ports ACTIVE; 1 with a message on stderr
# otherwise. Both ends live in this one namespace (6.1's rxe opens its UDP
# socket in the initial namespace only), so each address is local: RoCE
# packets would be routed through lo, where rxe finds no rxe device and drops
# them. Policy routing sends what this host originates to the other end over
# the link (tables TABLE and TABLE+1, consulted before the local table),
# static neighbours skip ARP between local addresses, and accept_local lets
# each end take the packets in.
rxe_pair() {
	ip addr add "$3/24" dev "$2" && ip addr add "$6/24" dev "$5" || return 1
	ip link set "$2" up && ip link set "$5" up || return 1
	for i in all default "$2" "$5"; do
		sysctl -qw net.ipv4.conf.$i.rp_filter=0 net.ipv4.conf.$i.accept_local=1
	done
	ip route add "$6" dev "$2" src "$3" table "$7"
	ip route add "$3" dev "$5" src "$6" table $(($7 + 1))
	ip rule add pref $(($7 - 90)) iif lo to "$6" lookup "$7"
	ip rule add pref $(($7 - 89)) iif lo to "$3" lookup $(($7 + 1))
	if ip rule show pref 0 | grep -q .; then
		ip rule add pref 50 lookup local && ip rule del pref 0
	fi
	ip neigh replace "$6" lladdr "$(cat /sys/class/net/$5/address)" dev "$2" nud permanent
	ip neigh replace "$3" lladdr "$(cat /sys/class/net/$2/address)" dev "$5" nud permanent
	for pair in "$1:$2" "$4:$5"; do
		rdma link add "${pair%:*}" type rxe netdev "${pair#*:}" || {
			echo "rdma link add ${pair%:*} type rxe netdev ${pair#*:} failed" >&2
			return 1
		}
	done
	for dev in "$1" "$4"; do
		wait_for 20 grep -q ACTIVE /sys/class/infiniband/$dev/ports/1/state || {
			echo "$dev port 1 not ACTIVE in 20 s: $(cat /sys/class/infiniband/$dev/ports/1/state)" >&2
			return 1
		}
	done
}

# rxe_modules [MORE...]: the kernel's own modules Soft-RoCE needs. crc32_generic:
# rxe asks the crypto API for crc32 at link time, which would request_module()
# through a modprobe that cannot see this kernel's modules.
rxe_modules() {
	modprobe -d /run/sb/kernel -a crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe sch_netem "$@"
}

# gid_index RXE ADDR: the RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d):
# without -g/-x the verbs tools use no GID at all, and a RoCE QP without a
# GRH never connects.
gid_index() {
	want=$(echo "$2" | awk -F. '{printf "ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
	for g in 0 1 2 3 4 5 6 7; do
		case $(cat /sys/class/infiniband/$1/ports/1/gids/$g 2>/dev/null) in *$want) echo $g && return ;; esac
	done
}

# ucx_rank NIC ARGS...: mpirun's app context for one rank of the workload
# on UCX over Soft-RoCE NIC (ucx.sh says why each setting); env execs the
# workload, so the rank's pid is the workload's.
ucx_rank() {
	nic=$1
	shift
	echo "-np 1 env UCX_TLS=rc,self UCX_UD_ETH_DGID_CHECK=n UCX_NET_DEVICES=$nic:1 LD_PRELOAD=libibverbs.so.1" \
		"$sb_build/libexec/slowburn-mpi-workload $*"
}

# The RDMA NICs on PCIe: nic1 (0000:01:00.0, below root port rp1
# 0000:00:03.0) and nic2 (0000:02:00.0, below rp2 0000:00:04.0) share one
# Ethernet segment (boot.py's QEMU hub); rxe_nic1 and rxe_nic2 are
# Soft-RoCE on their netdevs, set up once per guest. Sets nic1_dev and
# nic2_dev (the netdevs); 1 with a message on stderr when they cannot be
# brought up.
pci_rxe_up() {
	if [ -e /sys/class/infiniband/rxe_nic1 ] && [ -e /sys/class/infiniband/rxe_nic2 ]; then
		nic1_dev=$(ls /sys/bus/pci/devices/0000:01:00.0/net) nic2_dev=$(ls /sys/bus/pci/devices/0000:02:00.0/net)
		for dev in rxe_nic1 rxe_nic2; do # a test before may have reset a NIC
			wait_for 30 grep -q ACTIVE /sys/class/infiniband/$dev/ports/1/state || {
				echo "$dev port 1 not ACTIVE in 30 s: $(cat /sys/class/infiniband/$dev/ports/1/state)" >&2
				return 1
			}
		done
		return 0
	fi
	rxe_modules e1000e || { echo "cannot load e1000e and rdma_rxe from the kernel's own modules" >&2 && return 1; }
	wait_for 20 ls /sys/bus/pci/devices/0000:01:00.0/net /sys/bus/pci/devices/0000:02:00.0/net >/dev/null || {
		echo "no netdev for nic1 (0000:01:00.0) or nic2 (0000:02:00.0) in 20 s" >&2 && return 1
	}
	nic1_dev=$(ls /sys/bus/pci/devices/0000:01:00.0/net) nic2_dev=$(ls /sys/bus/pci/devices/0000:02:00.0/net)
	rxe_pair rxe_nic1 "$nic1_dev" 10.98.0.1 rxe_nic2 "$nic2_dev" 10.98.0.2 102
}
