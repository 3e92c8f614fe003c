# The faults of mpi.sh's job (sourced while the job runs and trace watches
# it): 20% netem loss on nic1's netdev while ib_send_bw streams rxe_nic1 ->
# rxe_nic2, then a non-fatal AER error (POISON_TLP) in rp1 (above rank 1's
# NIC) and in rp2 (above ranks 0 and 2's). Each fault that landed is a line
# of OUT/mpi.faults, which cause_check.py reads.
counter() { cat /sys/class/infiniband/rxe_nic1/ports/1/hw_counters/$1; }
listening() { ss -ltn "sport = :$1" | grep -q LISTEN; }
g1=$(gid_index rxe_nic1 10.98.0.1)
g2=$(gid_index rxe_nic2 10.98.0.2)
retries_before=$(counter completer_retry_err)
tc qdisc add dev "$nic1_dev" root netem loss 20%
timeout 60 ib_send_bw -p 18530 -d rxe_nic2 -x "$g2" -D 4 -s 4096 -F >"$OUT/mpi.bw.server" 2>&1 &
bw_server=$!
wait_for 20 listening 18530
timeout 60 ib_send_bw -p 18530 -d rxe_nic1 -x "$g1" -D 4 -s 4096 -F 127.0.0.1 >"$OUT/mpi.bw.client" 2>&1
wait $bw_server
sleep 1.5 # one more of trace's NIC counter readings (every second)
tc -s qdisc show dev "$nic1_dev" >"$OUT/mpi.netem"
tc qdisc del dev "$nic1_dev" root
retries=$(($(counter completer_retry_err) - retries_before))
echo "netem on $nic1_dev: $(grep -o 'dropped [0-9]*' "$OUT/mpi.netem"); rxe_nic1 completer_retry_err +$retries at $(cut -d' ' -f1 /proc/uptime)"
[ "$retries" -gt 0 ] && echo "retrans rxe_nic1 $retries" >>"$OUT/mpi.faults"

aer_total() { awk '/^TOTAL_ERR/ {print $2}' /sys/bus/pci/devices/$1/aer_dev_nonfatal; }
aer_moved() { [ "$(aer_total $1)" -gt "$2" ]; }
recovered() { dmesg | grep -q "$1: AER: device recovery"; }
for port in rp1=0000:00:03.0 rp2=0000:00:04.0; do
	id=${port%%=*} bdf=${port#*=}
	before=$(aer_total $bdf)
	qmon "pcie_aer_inject_error $id POISON_TLP" >>"$OUT/mpi.qmp"
	if wait_for 30 aer_moved $bdf "$before"; then
		echo "aer $bdf" >>"$OUT/mpi.faults"
	else
		echo "AER into $id: $bdf aer_dev_nonfatal still $before after 30 s"
	fi
	# The kernel recovers the e1000e below (its error handlers reset it,
	# and its link goes down and up): the next test needs it back.
	wait_for 30 recovered $bdf || echo "AER into $id: no 'device recovery' for $bdf in dmesg after 30 s"
done
for rxe in rxe_nic1 rxe_nic2; do
	wait_for 30 grep -q ACTIVE /sys/class/infiniband/$rxe/ports/1/state ||
		echo "$rxe: port 1 $(cat /sys/class/infiniband/$rxe/ports/1/state) 30 s after the AER errors"
done
dmesg | grep -e AER -e e1000e | tail -12
