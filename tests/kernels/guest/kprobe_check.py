"""Assert `slowburn gpuirq --isr-symbol vring_interrupt --json`: the kprobe
pair attached and timed calls of the handler on the same IRQs the irq
tracepoints counted. Never more calls than interrupts (vring_interrupt is
each virtqueue vector's handler); fewer by a few percent under TCG on 6.1
(a kprobe program is skipped, not queued, when another BPF program is
running on that CPU), so at least 80% of them."""
import json
import sys

from results import result

out = sys.argv[1]
lines = [json.loads(l) for l in open(out + "/kprobe.jsonl") if l.startswith("{")]
status = [l for l in lines if l.get("kind") == "status" and l.get("probe") == "nvidia.isr"]
hists = [l for l in lines if l.get("kind") == "hist"]
kprobe = sum(h["count"] for h in hists if "kprobe:vring_interrupt" in h["probe"])
tracepoint = sum(h["count"] for h in hists if "irq-tracepoint" in h["probe"])
if not status or status[0].get("state") != "attached":
    result(out, "FAIL", "kprobe.count", "kprobe pair not attached to vring_interrupt: %s" % status)
elif kprobe == 0 or tracepoint == 0:
    result(out, "FAIL", "kprobe.count", "kprobe:vring_interrupt counted %d, irq tracepoints %d (want both > 0)" % (kprobe, tracepoint))
elif not (0.8 * tracepoint <= kprobe <= tracepoint):
    result(out, "FAIL", "kprobe.count", "kprobe:vring_interrupt counted %d, the irq tracepoints %d virtio interrupts (want 80-100%%)" % (kprobe, tracepoint))
else:
    result(out, "PASS", "kprobe.count", "kprobe/kretprobe vring_interrupt attached: %d calls timed, %.0f%% of the %d virtio interrupts the irq tracepoints counted" % (kprobe, 100.0 * kprobe / tracepoint, tracepoint))
