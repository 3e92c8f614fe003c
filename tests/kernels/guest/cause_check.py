"""Assert the likely causes of the straggler in `slowburn trace --json` of
mpi.sh's job, after the faults of mpi_faults.sh (listed in OUT/mpi.faults):
rank 1's NIC rxe_nic1 sits on nic1 (0000:01:00.0) below rp1 (0000:00:03.0);
ranks 0 and 2's rxe_nic2 on nic2 below rp2 (0000:00:04.0).

mpi.cause.aer: rp1's AER error names rank 1 only and is among rank 1's likely
causes; rp2's names ranks 0 and 2 and is not among them.
mpi.cause.rxe: rxe_nic1's retransmissions (rdma.retrans) name rank 1 and are
among its likely causes; no rxe_nic2 event is."""
import json
import sys

from results import result

out = sys.argv[1]
RP1, RP2, NIC1 = "0000:00:03.0", "0000:00:04.0", "0000:01:00.0"
lines = [json.loads(l) for l in open(out + "/mpi.trace.jsonl") if l.startswith("{")]
events = [l for l in lines if l.get("kind") == "event"]
verdicts = [l for l in lines if l.get("kind") == "verdict"]
try:
    faults = [l.split() for l in open(out + "/mpi.faults")]
except OSError:
    faults = []
landed = {(f[0], f[1]) for f in faults if len(f) >= 2}

finding = None
if verdicts and verdicts[-1]["stragglers"]:
    finding = verdicts[-1]["stragglers"][0]
named = finding.get("rank") if finding else None
causes = finding.get("likely_causes", []) if finding else []


def first(pred):
    return next((e for e in events if pred(e)), None)


def brief(e):
    return "%s %s ranks %s" % (e["type"], e.get("device"), e.get("ranks")) if e else "none"


def check_aer():
    if ("aer", RP1) not in landed or ("aer", RP2) not in landed:
        return "FAIL", "the AER errors did not land (sysfs aer_dev_nonfatal of %s and %s): %s" % (RP1, RP2, sorted(landed))
    aer1 = first(lambda e: e["type"] == "aer" and e.get("device") == RP1)
    aer2 = first(lambda e: e["type"] == "aer" and e.get("device") == RP2)
    problems = []
    if not aer1 or aer1.get("ranks") != [1]:
        problems.append("rp1's AER event: %s (want ranks [1])" % brief(aer1))
    if not aer2 or aer2.get("ranks") != [0, 2]:
        problems.append("rp2's AER event: %s (want ranks [0, 2])" % brief(aer2))
    if named != 1:
        problems.append("straggler named: %s (want rank 1)" % named)
    elif not any(c.startswith("AER") and RP1 in c for c in causes):
        problems.append("rank 1's likely causes do not name rp1's AER error: %s" % causes)
    if any(RP2 in c for c in causes):
        problems.append("rank 1's likely causes name rp2 (%s), above ranks 0 and 2 only: %s" % (RP2, causes))
    if problems:
        return "FAIL", "; ".join(problems)
    cause = next(c for c in causes if c.startswith("AER") and RP1 in c)
    return "PASS", "rank 1 named; likely cause %d of %d: %s; rp2's error (ranks 0, 2) not among them" % (
        causes.index(cause) + 1, len(causes), cause)


def check_rxe():
    if not any(f[0] == "retrans" for f in landed):
        return "FAIL", "netem loss on nic1 made no rxe_nic1 retransmissions (completer_retry_err did not move)"
    retrans = first(lambda e: e["type"] == "rdma.retrans" and e.get("nic") == "rxe_nic1")
    problems = []
    if not retrans or retrans.get("ranks") != [1] or retrans.get("device") != NIC1:
        problems.append("rxe_nic1's rdma.retrans event: %s (want device %s, ranks [1])" % (brief(retrans), NIC1))
    if named != 1:
        problems.append("straggler named: %s (want rank 1)" % named)
    elif not any(c.startswith("rdma.retrans") and "rxe_nic1" in c for c in causes):
        problems.append("rank 1's likely causes do not name rxe_nic1's retransmissions: %s" % causes)
    if any("rxe_nic2" in c for c in causes):
        problems.append("rank 1's likely causes name rxe_nic2 (ranks 0 and 2's NIC): %s" % causes)
    if problems:
        return "FAIL", "; ".join(problems)
    cause = next(c for c in causes if c.startswith("rdma.retrans") and "rxe_nic1" in c)
    return "PASS", "rank 1 named; likely cause %d of %d: %s" % (causes.index(cause) + 1, len(causes), cause)


for name, check in (("mpi.cause.aer", check_aer), ("mpi.cause.rxe", check_rxe)):
    status, detail = check()
    result(out, status, name, detail[:700])
