# PCIe hotplug: the e1000e behind the hotplug-capable root port rp2
# (0000:00:04.0) is removed (device_del: pciehp powers the slot off) and
# added back (device_add); `slowburn pcie --watch --json` must report the
# port's link going down and coming back.
if [ "${SB_GUEST:-}" != 1 ]; then
	skip hotplug "not in a QEMU guest: no hotplug slot to drive (device_del/device_add)"
	return 0
fi
rp=0000:00:04.0
ep=0000:02:00.0
if [ ! -e /sys/bus/pci/devices/$ep ]; then
	fail hotplug "no $ep behind rp2 to unplug"
	return 0
fi
"$SB" pcie --watch --json -i 0.5 >"$OUT/hotplug.jsonl" 2>"$OUT/hotplug.err" &
pid=$!
wait_for 60 grep -q '"kind":"status"' "$OUT/hotplug.jsonl" || {
	kill $pid
	fail hotplug "slowburn pcie --watch printed nothing in 60 s: $(tail -3 "$OUT/hotplug.err")"
	return 0
}
sleep 2
qmon "device_del nic2" >>"$OUT/hotplug.qmp"
# pciehp waits 5 s after the attention button before it powers the slot off.
if wait_for 40 test ! -e /sys/bus/pci/devices/$ep; then gone=yes; else gone=no; fi
sleep 2
# Back on its Ethernet segment (boot.py's hub port net2), so later tests
# can still use it; a QEMU that removed the hub port with the NIC gets a new one.
reply=$(qmon "device_add e1000e,bus=rp2,id=nic2,netdev=net2")
if echo "$reply" | grep -q "error.*net2"; then
	qmon "netdev_add hubport,id=net2,hubid=0" >>"$OUT/hotplug.qmp"
	reply=$(qmon "device_add e1000e,bus=rp2,id=nic2,netdev=net2")
fi
echo "$reply" >>"$OUT/hotplug.qmp"
if wait_for 40 test -e /sys/bus/pci/devices/$ep; then back=yes; else back=no; fi
sleep 3
kill -INT $pid
wait $pid
dmesg | grep -i -e pciehp -e "$ep" >"$OUT/hotplug.dmesg"
[ $gone = yes ] && [ $back = yes ] &&
	pass hotplug.kernel "device_del: $ep gone from sysfs (pciehp), device_add: back"
[ $gone = yes ] || fail hotplug.kernel "device_del nic2: $ep still in sysfs after 40 s: $(cat "$OUT/hotplug.qmp")"
[ $back = yes ] || fail hotplug.kernel "device_add nic2: $ep not back in sysfs after 40 s"
# What slowburn saw: the endpoint's link down when its sysfs directory
# vanished, and its recovery when it came back (the root port keeps its
# link speed/width in QEMU: the endpoint is where the unplug shows).
down=$(grep '"kind":"event"' "$OUT/hotplug.jsonl" | grep '"type":"link.down"' | grep "\"device\":\"$ep\"" | head -1)
up=$(grep '"kind":"event"' "$OUT/hotplug.jsonl" | grep '"type":"link.recovered"' | grep "\"device\":\"$ep\"" | head -1)
summary() { echo "$1" | sed -n 's/.*"summary":"\([^"]*\)".*/\1/p' | cut -c1-240; }
if [ -n "$down" ] && [ -n "$up" ]; then
	pass hotplug.watch "slowburn pcie --watch: $(summary "$down"); then $(summary "$up")"
else
	fail hotplug.watch "slowburn pcie --watch while $ep was unplugged and replugged: link.down '$(summary "$down")', link.recovered '$(summary "$up")'; events: $(grep '"kind":"event"' "$OUT/hotplug.jsonl" | grep -o '"type":"[a-z.]*"' | sort | uniq -c | tr -s ' \n' ' ')"
fi
