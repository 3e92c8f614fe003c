"""Assert ucx.sh's job and `slowburn trace --json` of it: the job ran over
UCX on Soft-RoCE (exit 0, rxe_nic1 sent packets), trace counted STEPS
MPI_Allreduce and MPI_Allgather calls per rank, and its verbs probes saw each
rank's QPs created, moved to RTR and RTS, and destroyed (trace's
"rank R pid P libibverbs: ..." lines).

  ucx_check.py OUT STEPS JOB_EXIT RXE_NIC1_SENT_PACKETS"""
import json
import re
import sys

from results import result

out, steps, job_rc, sent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if job_rc != 0:
    tail = open(out + "/ucx.job.log", errors="replace").read().splitlines()[-4:]
    result(out, "FAIL", "ucx.job", "mpirun (pml ucx over rxe_nic1/rxe_nic2) exited %d: %s" % (job_rc, " | ".join(tail)[:500]))
else:
    result(out, "PASS", "ucx.job", "OpenMPI pml ucx (UCX_TLS=rc) over Soft-RoCE on nic1/nic2: %d steps; rxe_nic1 sent %d packets" % (steps, sent))

lines = [json.loads(l) for l in open(out + "/ucx.trace.jsonl") if l.startswith("{")]
hists = {}
for h in (l for l in lines if l.get("kind") == "hist"):
    hists[(h.get("rank"), h["probe"])] = h["count"]
problems = []
for rank in range(2):
    for probe in ("mpi.allreduce", "mpi.allgather"):
        if hists.get((rank, probe)) != steps:
            problems.append("rank %d %s: %s calls (want %d)" % (rank, probe, hists.get((rank, probe)), steps))
result(out, "FAIL" if problems else "PASS", "ucx.trace.mpi",
       "; ".join(problems) if problems else "%d MPI_Allreduce and %d MPI_Allgather calls on each of 2 ranks" % (steps, steps))

# "rank 0 pid 123 libibverbs: 3 QP(s) created; moved to INIT 3, RTR 3, RTS 3; 3 destroyed"
seen = {}
for l in lines:
    m = re.match(r"rank (\d+) pid \d+ libibverbs: (\d+) QP\(s\) created(?:; moved to ([^;]*))?; (\d+) destroyed", l.get("message", ""))
    if l.get("event") == "note" and m:
        moves = dict((s.split()[0], int(s.split()[1])) for s in (m.group(3) or "").split(", ") if s)
        seen[int(m.group(1))] = (int(m.group(2)), moves, int(m.group(4)), m.group(0))
problems = []
for rank in range(2):
    if rank not in seen:
        attached = [l for l in lines if l.get("event") == "probe" and l.get("probe", "").startswith("verbs.") and l.get("rank") == rank]
        problems.append("rank %d: no libibverbs lifecycle line (verbs probes: %s)" % (
            rank, ", ".join("%s %s" % (l["probe"], l["state"]) for l in attached) or "none"))
        continue
    created, moves, destroyed, text = seen[rank]
    if created < 1 or moves.get("RTR", 0) < 1 or moves.get("RTS", 0) < 1 or destroyed < 1:
        problems.append("rank %d: %s" % (rank, text))
if problems:
    result(out, "FAIL", "ucx.trace.qp", "; ".join(problems)[:600])
else:
    result(out, "PASS", "ucx.trace.qp", "; ".join(seen[r][3] for r in range(2)))
