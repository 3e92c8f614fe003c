"""Assert `slowburn gpuirq --isr-symbol vring_interrupt --json`: the kprobe
pair attached and timed calls of the handler on the same IRQs the irq
tracepoints counted. The counts agree but for the window edges (the
programs attach one after the other and keep running while the report reads
their maps: a few calls either way, seen: 2630 vs 2628 on 6.12) and for
kprobe hits the kernel skips (a kprobe program does not run while another
BPF program runs on that CPU: seen 94% under TCG on 6.1): between 80% of the
interrupts and a few more than them."""
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
elif not (0.8 * tracepoint <= kprobe <= tracepoint + max(5, tracepoint // 100)):
    result(out, "FAIL", "kprobe.count", "kprobe:vring_interrupt counted %d, the irq tracepoints %d virtio interrupts (want 80%% to 101%%)" % (kprobe, tracepoint))
else:
    result(out, "PASS", "kprobe.count", "kprobe/kretprobe vring_interrupt attached: %d calls timed, %.0f%% of the %d virtio interrupts the irq tracepoints counted" % (kprobe, 100.0 * kprobe / tracepoint, tracepoint))
