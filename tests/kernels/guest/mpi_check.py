"""Assert `slowburn trace --json` of the 3-rank job: the slowed rank named as
the straggler, exactly STEPS MPI_Allreduce and MPI_Allgather calls per rank,
and which uprobe links carried them (perf-event links before 6.10)."""
import json
import sys

from results import result

out, slow_rank, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(out + "/mpi.trace.jsonl") if l.startswith("{")]
verdicts = [l for l in lines if l.get("kind") == "verdict"]
hists = {}
for h in (l for l in lines if l.get("kind") == "hist"):
    hists[(h.get("rank"), h["probe"])] = h["count"]  # the last report is cumulative
# How the uprobes attached: slowburn check's row for multi-uprobe links.
mode = "unknown link type"
try:
    for row in map(json.loads, open(out + "/check.jsonl")):
        if row["check"] == "bpf.uprobe_multi":
            mode = "multi-uprobe links" if row["ok"] else "perf-event links (no multi-uprobe links here)"
except OSError:
    pass

problems = []
for rank in range(3):
    for probe in ("mpi.allreduce", "mpi.allgather"):
        got = hists.get((rank, probe))
        if got != steps:
            problems.append("rank %d %s: %s calls (want %d)" % (rank, probe, got, steps))
if not verdicts:
    problems.append("no verdict")
else:
    named = [s.get("rank") for s in verdicts[-1]["stragglers"]]
    if named[:1] != [slow_rank]:
        problems.append("stragglers named %s (want rank %d first); verdict: %s" % (named, slow_rank, json.dumps(verdicts[-1])[:400]))
if problems:
    result(out, "FAIL", "mpi.trace", "; ".join(problems))
else:
    result(out, "PASS", "mpi.trace", "rank %d named; %d MPI_Allreduce and %d MPI_Allgather calls on each of 3 ranks; %s" % (slow_rank, steps, steps, mode))
