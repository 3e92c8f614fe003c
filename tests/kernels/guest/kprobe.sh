# kprobes: the gpuirq kprobe pair (bpf/gpuirq.bpf.c) says precisely why
# nvidia_isr cannot be probed here, and, pointed at a handler this kernel
# has (virtio's vring_interrupt, which serves the guest's 9p shares),
# attaches and counts the same interrupts as the irq tracepoints.
"$SB" gpuirq --json -d 1 >"$OUT/kprobe.missing.jsonl" 2>&1
# The reason this kernel must give: no kprobes at all, or no nvidia_isr.
if [ -e /sys/bus/event_source/devices/kprobe ] || [ -e /sys/kernel/tracing/kprobe_events ]; then
	want="nvidia_isr not in /proc/kallsyms (driver not loaded)"
else
	want="kernel lacks kprobes (no CONFIG_KPROBE_EVENTS: no kprobe PMU, no kprobe_events)"
fi
if grep -q "\"probe\":\"nvidia.isr\",\"reason\":\"$want\",\"state\":\"unavailable\"" "$OUT/kprobe.missing.jsonl"; then
	pass kprobe.missing "nvidia.isr unavailable: $want"
else
	fail kprobe.missing "want the reason '$want': $(grep nvidia.isr "$OUT/kprobe.missing.jsonl" | cut -c1-300)"
fi
if [ ! -e /sys/bus/event_source/devices/kprobe ]; then
	skip kprobe.count "no kprobe PMU (kernel without CONFIG_KPROBE_EVENTS)"
	return 0
fi
"$SB" gpuirq --json -d 6 --name-prefix virtio --isr-symbol vring_interrupt >"$OUT/kprobe.jsonl" 2>&1 &
pid=$!
sleep 3
# 9p traffic on the uncached share: virtio interrupts.
i=0
while [ $i -lt 200 ]; do echo $i >"$OUT/kprobe.traffic"; cat "$OUT/kprobe.traffic" >/dev/null; i=$((i + 1)); done
wait $pid
python3 "$(dirname "$0")/kprobe_check.py" "$OUT"
