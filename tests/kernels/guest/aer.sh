# Real AER: errors injected into the root port rp1 (0000:00:03.0) and into
# the endpoint rng1 (0000:03:00.0, behind rp3) with QEMU's
# pcie_aer_inject_error over the host's QMP socket are decoded by
# `slowburn aer --json` from the ras:aer_event tracepoint, and the sysfs AER
# counters agree (aer_check.py asserts both).
rp=0000:00:03.0
sysdev=/sys/bus/pci/devices/$rp
ep=0000:03:00.0 # rng1 (virtio-rng-pci,aer=on) behind rp3 (0000:00:05.0)
epdev=/sys/bus/pci/devices/$ep
nic=/sys/bus/pci/devices/0000:01:00.0 # nic1, the e1000e behind rp1
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
total() { awk '/^TOTAL_ERR/ {print $2}' "$dev/$1"; }
# inject SEVERITY QEMU-ARGUMENTS COUNTER-FILE [DEVICE-DIR PREFIX]: wait
# until the device's counter moves; the injection is listed in OUT/PREFIX.injected.
inject() {
	dev=${4:-$sysdev}
	before=$(total "$3")
	echo "inject $1: $2 ($dev/$3 total $before)"
	qmon "pcie_aer_inject_error $2" >>"$OUT/aer.qmp"
	moved() { [ "$(total "$1")" -gt "$2" ]; }
	if ! wait_for 30 moved "$3" "$before"; then
		echo "inject $1: $3 still $before after 30 s"
	fi
	echo "$1 $2" >>"$OUT/${5:-aer}.injected"
}
# The Correctable Error Status of a function's AER capability (the
# extended capability with ID 1, found by walking the list from 0x100).
cor_status() {
	python3 -c 'import struct, sys
c = open(sys.argv[1] + "/config", "rb").read()
off = 0x100
while off and len(c) >= off + 4:
    hdr = struct.unpack_from("<I", c, off)[0]
    if hdr & 0xFFFF == 1:
        print("%08x" % struct.unpack_from("<I", c, off + 0x10)[0]); break
    off = hdr >> 20' "$1"
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
inject nonfatal "rp1 POISON_TLP" aer_dev_nonfatal
# An endpoint: QEMU forwards an error from a function only with SERR# in
# Command and its Device Control reporting bits set, which Linux leaves to
# drivers on 6.1 (pci_enable_errors.py sets them as a driver would). The
# e1000e cannot: QEMU 7.2's e1000e makes those Device Control bits read-only
# zero (it never calls pcie_cap_deverr_init), so its errors go nowhere; the
# endpoint injected is rng1 (virtio-pci with aer=on), behind rp3.
python3 "$(dirname "$0")/pci_enable_errors.py" "$nic" | tee "$OUT/aer.e1000e.enable"
if grep -q 'Device Control (cap 0x[0-9a-f]*) 0x0000 -> 0x0000' "$OUT/aer.e1000e.enable"; then
	result GAP aer.e1000e "QEMU $qemu_version's e1000e (0000:01:00.0) keeps Device Control's error-reporting enables read-only zero (no pcie_cap_deverr_init in its realize): pcie_aer_inject_error nic1 is accepted, but QEMU sends no message without those enables (pcie_aer_msg_alldev) and the kernel sees nothing; endpoint errors are asserted on rng1 (virtio-pci aer=on) instead"
fi
if [ -e "$epdev/aer_dev_nonfatal" ]; then
	python3 "$(dirname "$0")/pci_enable_errors.py" "$epdev" | tee "$OUT/aer.endpoint.enable"
	for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
		cp "$epdev/$f" "$OUT/aer.endpoint.before.$f"
	done
	dev=$epdev # total() reads the endpoint's counters
	case $qemu_version in
	[1-7].*)
		# Same QEMU limit as the root port's (pcie_aer_msg_alldev passes only
		# uncorrectable errors): the bit latches, no ERR_COR is sent.
		qmon "pcie_aer_inject_error -c rng1 INTERNAL" >>"$OUT/aer.qmp"
		sleep 1
		cor=$(cor_status "$epdev")
		if [ $((0x${cor:-0} & 0x4000)) -ne 0 ] && [ "$(total aer_dev_correctable)" = "$(awk '/^TOTAL_ERR/ {print $2}' "$OUT/aer.endpoint.before.aer_dev_correctable")" ]; then
			skip aer.endpoint.correctable "QEMU $qemu_version does not route ERR_COR (fixed in QEMU 8.0): Corrected Internal Error latched in $ep's Correctable Error Status (0x$cor), no message to the kernel"
		else
			fail aer.endpoint.correctable "INTERNAL injected into $ep: Correctable Error Status 0x$cor, sysfs aer_dev_correctable $(total aer_dev_correctable)"
		fi
		;;
	*) inject correctable "-c rng1 INTERNAL" aer_dev_correctable "$epdev" aer.endpoint ;;
	esac
	inject nonfatal "rng1 POISON_TLP" aer_dev_nonfatal "$epdev" aer.endpoint
	for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
		cp "$epdev/$f" "$OUT/aer.endpoint.after.$f"
	done
else
	fail aer.endpoint "no AER counters for the endpoint $ep (rng1 behind rp3)"
fi
# Fatal last: the kernel resets the link below the port on a fatal error.
inject fatal "rp1 MALF_TLP" aer_dev_fatal
sleep 2 # one more sysfs poll and the last ring-buffer records
kill -INT $pid
wait $pid
for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
	cp "$sysdev/$f" "$OUT/aer.after.$f"
done
dmesg | grep -i aer >"$OUT/aer.dmesg"
python3 "$(dirname "$0")/aer_check.py" "$OUT" "$rp" root-port
[ -f "$OUT/aer.endpoint.injected" ] && python3 "$(dirname "$0")/aer_check.py" "$OUT" "$ep" other aer.endpoint
