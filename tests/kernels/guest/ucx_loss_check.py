"""Assert ucx_loss.sh's verdict: with netem loss on nic1 (rank 0's
rxe_nic1; 5% by default) and no compute slowdown, `slowburn trace --json`
names rank 0 and never rank 1, and rxe_nic1's retransmissions (an
rdma.retrans event for ranks [0], direction "tx": its own resends) are
what names it: its evidence.transport, or among its likely causes.
rxe_nic2's, if any, are "rx" (gaps in what it received).

  ucx_loss_check.py OUT JOB_EXIT RXE_NIC1_RETRIES"""
import sys

from results import brief, job_failed, result, trace_lines

out, job_rc, retries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = trace_lines(out + "/ucx_loss.trace.jsonl")
events = [l for l in lines if l.get("kind") == "event"]
verdicts = [l for l in lines if l.get("kind") == "verdict"]
named = verdicts[-1]["stragglers"] if verdicts else []
retrans = [e for e in events if e["type"] == "rdma.retrans" and e.get("nic") == "rxe_nic1"]


problems = []
if job_failed(out, "ucx_loss", job_rc):
    problems.append(job_failed(out, "ucx_loss", job_rc))
if retries <= 0:
    problems.append("netem loss on nic1 made no rxe_nic1 retransmissions (completer_retry_err did not move)")
if not retrans or retrans[0].get("ranks") != [0]:
    problems.append("rxe_nic1's rdma.retrans event: %s (want ranks [0])" % (
        "%s ranks %s" % (retrans[0]["type"], retrans[0].get("ranks")) if retrans else "none"))
if retrans and any(e.get("direction") != "tx" for e in retrans):
    problems.append("rxe_nic1's rdma.retrans not all tx (its own resends): %s" % sorted(
        {str(e.get("direction")) for e in retrans}))
gaps = [e for e in events if e["type"] == "rdma.retrans" and e.get("nic") == "rxe_nic2"]
if any(e.get("direction") != "rx" for e in gaps):
    problems.append("rxe_nic2's rdma.retrans not rx (gaps in what it received) %d time(s) of %d" % (
        sum(e.get("direction") != "rx" for e in gaps), len(gaps)))
rank0 = [f for f in named if f.get("rank") == 0]
if any(f.get("rank") == 1 for f in named):
    problems.append("rank 1 (rxe_nic2, no loss) named: %s" % "; ".join(brief(f) for f in named))
if not rank0:
    problems.append("rank 0 not named: %s" % ("; ".join(brief(f) for f in named) or "nobody named"))
else:
    f = rank0[0]
    transport = f.get("evidence", {}).get("transport") or ""
    causes = f.get("likely_causes", [])
    if "rxe_nic1" not in transport and not any(c.startswith("rdma.retrans") and "rxe_nic1" in c for c in causes):
        problems.append("rank 0 named, but not for rxe_nic1's retransmissions: %s" % brief(f))
if problems:
    result(out, "FAIL", "ucx.loss", "; ".join(problems)[:700])
else:
    f = rank0[0]
    result(out, "PASS", "ucx.loss", ("rank 0 named (%s, where %s), rxe_nic1 +%d retransmissions: %s" % (
        f["evidence"].get("detector"), f["evidence"].get("where"), retries, f.get("summary", "")))[:700])
