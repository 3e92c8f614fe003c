"""Assert what `slowburn aer --json` printed against what was injected
(OUT/aer.injected) and against the sysfs AER counters before and after."""
import json
import sys

from results import result

# PREFIX (default aer): OUT/PREFIX.injected, OUT/PREFIX.{before,after}.*,
# results named PREFIX.<severity>.
out, bdf, role = sys.argv[1], sys.argv[2], sys.argv[3]
prefix = sys.argv[4] if len(sys.argv) > 4 else "aer"
# QEMU error name -> (kernel severity, status bit, kernel's short bit name)
QEMU = {
    "RCVR": ("correctable", 0, "RxErr"),
    "BAD_TLP": ("correctable", 6, "BadTLP"),
    "POISON_TLP": ("nonfatal", 12, "TLP"),
    "MALF_TLP": ("fatal", 18, "MalfTLP"),
    "UNSUP": ("nonfatal", 20, "UnsupReq"),
}
FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}


def counters(when, severity):
    values = {}
    for line in open("%s/%s.%s.%s" % (out, prefix, when, FILES[severity])):
        name, _, value = line.rpartition(" ")
        values[name] = int(value)
    return values


events = [e for e in map(json.loads, open(out + "/aer.jsonl")) if e.get("kind") == "event" and e.get("type") == "aer"]
for line in open("%s/%s.injected" % (out, prefix)):
    severity_arg, args = line.split(" ", 1)
    qemu_name = args.split()[-1]
    severity, bit, short = QEMU[qemu_name]
    name = "%s.%s" % (prefix, severity)
    before, after = counters("before", severity), counters("after", severity)
    delta = after.get(short, 0) - before.get(short, 0)
    total_key = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}[severity]
    total_delta = after[total_key] - before[total_key]
    matching = [e for e in events if e.get("device") == bdf and e.get("severity") == severity]
    problems = []
    if delta != 1 or total_delta != 1:
        problems.append("sysfs %s: %s moved by %d, %s by %d (want 1 each)" % (FILES[severity], short, delta, total_key, total_delta))
    if len(matching) != 1:
        problems.append("%d %s event(s) for %s in slowburn aer --json (want 1)" % (len(matching), severity, bdf))
    else:
        e = matching[0]
        want = {"bits": [short], "role": role, "source": "tracepoint"}
        for key, value in want.items():
            if e.get(key) != value:
                problems.append("%s %r, want %r" % (key, e.get(key), value))
        if not e.get("status", 0) & (1 << bit):
            problems.append("status 0x%x lacks bit %d" % (e.get("status", 0), bit))
    if problems:
        result(out, "FAIL", name, "%s injected into %s: %s" % (qemu_name, bdf, "; ".join(problems)))
    else:
        e = matching[0]
        result(out, "PASS", name, "%s into %s: severity %s, bits %s, status 0x%x, role %s; sysfs %s %s +1" % (
            qemu_name, bdf, e["severity"], ",".join(e["bits"]), e["status"], e["role"], FILES[severity], short))
