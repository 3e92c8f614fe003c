# Real AER: errors injected into the root port rp1 (0000:00:03.0, QEMU's
# pcie_aer_inject_error over the host's QMP socket) are decoded by
# `slowburn aer --json` from the ras:aer_event tracepoint, and the sysfs AER
# counters agree (aer_check.py asserts both).
rp=0000:00:03.0
sysdev=/sys/bus/pci/devices/$rp
if [ ! -d /sys/kernel/tracing/events/ras/aer_event ]; then
	skip aer "no ras:aer_event tracepoint (kernel without CONFIG_PCIEAER)"
	return 0
fi
# The NIC's driver: its error handlers let the kernel recover (and clear the
# port's status) after a non-fatal error, as on a real node.
modprobe -d /run/sb/kernel e1000e 2>/dev/null
for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
	cp "$sysdev/$f" "$OUT/aer.before.$f"
done
"$SB" aer --json -i 0.5 >"$OUT/aer.jsonl" 2>"$OUT/aer.err" &
pid=$!
if ! wait_for 60 grep -q '"probe":"pcie.aer","sites":\[\],"state":"attached"' "$OUT/aer.jsonl"; then
	kill $pid
	fail aer "slowburn aer did not attach ras:aer_event in 60 s: $(tail -3 "$OUT/aer.err")"
	return 0
fi
total() { awk '/^TOTAL_ERR/ {print $2}' "$sysdev/$1"; }
# inject SEVERITY QEMU-ARGUMENTS COUNTER-FILE: wait until the counter moves.
inject() {
	before=$(total "$3")
	echo "inject $1: $2 ($3 total $before)"
	qmon "pcie_aer_inject_error $2" >>"$OUT/aer.qmp"
	moved() { [ "$(total "$1")" -gt "$2" ]; }
	if ! wait_for 30 moved "$3" "$before"; then
		echo "inject $1: $3 still $before after 30 s"
	fi
	echo "$1 $2" >>"$OUT/aer.injected"
}
# Correctable: QEMU before 8.0 latches the error in the port's Correctable
# Error Status but never sends ERR_COR (its pcie_aer_msg_alldev routes only
# uncorrectable errors with SERR#; QEMU 8.0's "hw/pci/aer: ... ERR_COR
# routing" fixed that), so on Debian 12's QEMU 7.2 no kernel can see it.
qemu_version=$(qmon "info version" | cut -d' ' -f1)
echo "QEMU $qemu_version"
case $qemu_version in
[1-7].*)
	od -A x -t x4 -j 256 -N 64 "$sysdev/config"
	qmon "pcie_aer_inject_error -c rp1 RCVR" >>"$OUT/aer.qmp"
	sleep 1
	od -A x -t x4 -j 256 -N 64 "$sysdev/config"
	# AER capability at 0x100 (QEMU's root port): Correctable Error Status at +0x10.
	cor=$(od -A n -t x4 -j 272 -N 4 "$sysdev/config" | tr -d ' ')
	if [ $((0x$cor & 1)) -eq 1 ]; then
		skip aer.correctable "QEMU $qemu_version does not route ERR_COR (fixed in QEMU 8.0): RxErr latched in the root port's Correctable Error Status (0x$cor), no message to the kernel"
	else
		fail aer.correctable "RxErr injected but the root port's Correctable Error Status reads 0x$cor"
	fi
	;;
*) inject correctable "-c rp1 RCVR" aer_dev_correctable ;;
esac
# Fatal last: the kernel resets the link below the port on a fatal error.
inject nonfatal "rp1 POISON_TLP" aer_dev_nonfatal
inject fatal "rp1 MALF_TLP" aer_dev_fatal
sleep 2 # one more sysfs poll and the last ring-buffer records
kill -INT $pid
wait $pid
for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
	cp "$sysdev/$f" "$OUT/aer.after.$f"
done
dmesg | grep -i aer >"$OUT/aer.dmesg"
python3 "$(dirname "$0")/aer_check.py" "$OUT" "$rp" root-port
