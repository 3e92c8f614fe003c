#!/usr/bin/env python3
"""Assert `slowburn analyze` on the recordings of `make test-nodes`
(tests/kernels/nodes.sh): OUT/{a,b}/PHASE/ the two guests' recordings,
OUT/PHASE.analyze.jsonl what analyze printed. SB-RESULT lines on stdout and
in OUT/results; exit 1 when one failed.

The clocks' truth: node-b's RTC started 90 s ahead of node-a's (QEMU -rtc
base=), less the time between the two QEMU starts (OUT/X/qemu_started), and
each guest's kernel set its CLOCK_REALTIME from its RTC at boot (to the
second). analyze's offset is what to add to node-b's wall times for
node-a's (docs/json-lines.md, `node`): minus that skew, within the RTC's 1 s
resolution; trusting the wall clocks would give 0."""
import argparse
import datetime
import json
import os
import pathlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "guest")]
from doc_section import NODES_HEADER, put_section  # noqa: E402
import results  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--doc", help="write the results' section of docs/kernel-support.md here")
ap.add_argument("--kernel", default="", help="the guests' kernel release, for the doc")
ap.add_argument("--elapsed", type=float, default=0)
args = ap.parse_args()
out = args.out
RTC_A, RTC_B = "2026-01-01T00:00:00", "2026-01-01T00:01:30"
failed = False
rows = []


def result(status, name, detail):
    global failed
    failed |= status == "FAIL"
    rows.append((name, status.lower(), detail))
    results.result(out, status, name, detail)


def lines(phase, kind):
    try:
        return [j for j in map(json.loads, open("%s/%s.analyze.jsonl" % (out, phase)))
                if j.get("kind") == kind]
    except (OSError, ValueError):
        return []


def analyzed(phase):
    """(verdict, {host: node line}, rc, stderr) or a FAIL result and None."""
    rc = open("%s/%s.analyze.rc" % (out, phase)).read().strip()
    err = open("%s/%s.analyze.err" % (out, phase)).read().strip()
    verdicts = lines(phase, "verdict")
    if not verdicts:
        result("FAIL", "nodes.%s.analyze" % phase, "no verdict (exit %s): %s" % (rc, err[-300:]))
        return None
    return verdicts[-1], {n["host"]: n for n in lines(phase, "node")}, rc, err


def true_offset_ns():
    started = [float(open("%s/%s/qemu_started" % (out, n)).read()) for n in "ab"]
    rtc = [datetime.datetime.fromisoformat(t).timestamp() for t in (RTC_A, RTC_B)]
    return -((rtc[1] - rtc[0]) - (started[1] - started[0])) * 1e9


def placed(phase, nodes):
    """node-b placed on the true offset (not the wall clocks'): a result."""
    b = nodes.get("node-b")
    if not b or b.get("clock_offset_ns") is None:
        result("FAIL", "nodes.%s.clocks" % phase, "node-b not placed: %s" % json.dumps(b))
        return
    truth = true_offset_ns()
    got = b["clock_offset_ns"]
    detail = ("node-b offset %.6f s (spread %.1f us, drift %s ppm, %s matched), the clocks' truth %.3f s "
              "(+-1 s: the RTC's resolution, and the kernel's read of it); the wall clocks alone would say 0" %
              (got / 1e9, b.get("clock_offset_spread_ns", 0) / 1e3, b.get("clock_drift_ppm"), b.get("matched"),
               truth / 1e9))
    result("PASS" if abs(got - truth) < 2.5e9 else "FAIL",
           "nodes.%s.clocks" % phase, detail)


slow = analyzed("slow")
if slow:
    verdict, nodes, rc, _ = slow
    named = [(s.get("rank"), s.get("node")) for s in verdict["stragglers"]]
    result("PASS" if named == [(3, "node-b")] else "FAIL", "nodes.slow.named",
           "stragglers %s (want rank 3 on node-b alone), exit %s; %s" %
           (named, rc, (verdict["stragglers"][0]["summary"][:200] if named else verdict.get("reason"))))
    placed("slow", nodes)

hang = analyzed("hang")
if hang:
    verdict, nodes, rc, _ = hang
    hangs = verdict.get("hangs", [])
    if [(h.get("rank"), h.get("node")) for h in hangs] == [(2, "node-b")]:
        peers = sorted(set(hangs[0]["evidence"].get("waiting_ranks", []) + hangs[0]["evidence"].get("blocked_behind", [])))
        state = (hangs[0]["evidence"].get("process") or {}).get("state")
        result("PASS" if peers == [0, 1, 3] else "FAIL", "nodes.hang.named",
               "rank 2 on node-b, peers waiting or blocked %s (want [0, 1, 3]), its process %s: %s" %
               (peers, state, hangs[0]["summary"][:200]))
    else:
        result("FAIL", "nodes.hang.named", "hangs %s (want rank 2 on node-b alone); verdict %s" %
               ([(h.get("rank"), h.get("node")) for h in hangs], json.dumps(verdict)[:400]))
    placed("hang", nodes)

lost = analyzed("lost")
if lost:
    verdict, nodes, rc, err = lost
    named = [(s.get("rank"), s.get("node")) for s in verdict["stragglers"]]
    result("PASS" if verdict.get("judged") and named == [(3, "node-b")] else "FAIL", "nodes.lost.judged",
           "node-b's tracer killed mid-run: judged %s, stragglers %s (want rank 3 on node-b alone), exit %s" %
           (verdict.get("judged"), named, rc))
    closed = {host: n.get("closed") for host, n in nodes.items()}
    notes = [s["message"] for s in lines("lost", "status")
             if s.get("event") == "note" and "node-b's recording was not closed" in s.get("message", "")]
    result("PASS" if closed == {"node-a": True, "node-b": False} and notes else "FAIL", "nodes.lost.said",
           "closed %s; %s" % (closed, notes[0] if notes else "no note on node-b's recording"))

# The guests' own results (network, tracing each phase) before analyze's.
guest_rows = []
for node in "ab":
    try:
        for line in open("%s/%s/results" % (out, node)):
            words = line.split(" ", 3)
            if len(words) == 4 and words[0] == "SB-RESULT":
                guest_rows.append((words[2], words[1].lower(), words[3].lstrip("- ").strip()))
    except OSError:
        guest_rows.append(("nodes.guest.%s" % node, "fail", "no results: the guest did not run its script"))
        failed = True
failed |= any(status == "fail" for _, status, _ in guest_rows)

if args.doc:
    doc = pathlib.Path(args.doc)
    body = [NODES_HEADER, "",
            "One Open MPI job (4 ranks, TCP) across two QEMU guests booting %s, each a node with its own" % args.kernel,
            "kernel and clocks (wall clocks started 90 s apart), `slowburn trace --record` in each and `slowburn",
            "analyze` on this machine (tests/kernels/nodes.sh; %.0f s). Written by `make test-nodes`." % args.elapsed,
            "", "| check | result | detail |", "|---|---|---|"]
    for name, status, detail in guest_rows + rows:
        body.append("| %s | %s | %s |" % (name, status, detail.replace("|", "/")))
    text = doc.read_text() if doc.exists() else ""
    doc.write_text(put_section(text, NODES_HEADER, "\n".join(body)))

sys.exit(1 if failed else 0)
