"""Assert tcp_delay.sh's verdict: with 50 ms of netem delay on nic1 (rank
0's interface) and no compute slowdown, `slowburn trace --json` names rank
0 and neither rank 1 nor 2 (in the verdict, nor in a live `finding`
line), and its TCP connections' round trips (a
host.tcp_rtt event for rank 0) are what names it: its evidence.transport,
or among its likely causes.

  tcp_delay_check.py OUT JOB_EXIT"""
import sys

from results import brief, job_failed, result, trace_lines

out, job_rc = sys.argv[1], int(sys.argv[2])
lines = trace_lines(out + "/tcp_delay.trace.jsonl")
events = [l for l in lines if l.get("kind") == "event"]
verdicts = [l for l in lines if l.get("kind") == "verdict"]
named = verdicts[-1]["stragglers"] if verdicts else []
rtt = [e for e in events if e["type"] == "host.tcp_rtt"]


problems = []
if job_failed(out, "tcp_delay", job_rc):
    problems.append(job_failed(out, "tcp_delay", job_rc))
if not rtt or any(e.get("ranks") != [0] for e in rtt):
    problems.append("host.tcp_rtt events: %s (want ranks [0] only)" % (
        "; ".join("ranks %s: %s" % (e.get("ranks"), e.get("summary")) for e in rtt) if rtt else "none"))
live = [l for l in lines if l.get("kind") == "finding"]
rank0 = [f for f in named if f.get("rank") == 0]
others = [f for f in named if f.get("rank") in (1, 2)]
if others:
    problems.append("a rank without the delay named: %s" % "; ".join(brief(f) for f in others))
live_others = [f for f in live if f.get("rank") in (1, 2)]
if live_others:
    problems.append("a rank without the delay named live: %s" % "; ".join(brief(f) for f in live_others))
if not rank0:
    problems.append("rank 0 not named: %s" % ("; ".join(brief(f) for f in named) or "nobody named"))
else:
    f = rank0[0]
    transport = f.get("evidence", {}).get("transport") or ""
    causes = f.get("likely_causes", [])
    if "TCP connections" not in transport and not any(c.startswith("host.tcp_rtt") for c in causes):
        problems.append("rank 0 named, but not by its TCP connections' round trips: %s" % brief(f))
if problems:
    result(out, "FAIL", "tcp.delay", "; ".join(problems)[:700])
else:
    f = rank0[0]
    result(out, "PASS", "tcp.delay", ("rank 0 named (%s, where %s): %s" % (
        f["evidence"].get("detector"), f["evidence"].get("where"), f.get("summary", "")))[:700])
