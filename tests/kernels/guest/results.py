"""SB-RESULT lines from the guest's Python checks (to stdout and OUT/results),
and what the checks of a trace's JSON lines share."""
import json


def result(out, status, name, detail):
    line = "SB-RESULT %s %s - %s" % (status, name, detail)
    print(line)
    with open(out + "/results", "a") as f:
        f.write(line + "\n")


def trace_lines(path):
    """The JSON lines of `slowburn trace --json` (its other output left out)."""
    return [json.loads(l) for l in open(path) if l.startswith("{")]


def job_failed(out, name, job_rc):
    """The problem of an mpirun that exited non-zero, with its log's tail; None if it did not."""
    if job_rc == 0:
        return None
    tail = open("%s/%s.job.log" % (out, name), errors="replace").read().splitlines()[-3:]
    return "mpirun exited %d: %s" % (job_rc, " | ".join(tail))


def brief(f):
    """A finding in one line: rank, detector, where, transport, likely causes."""
    e = f.get("evidence", {})
    return "rank %s %s where %s transport %s causes %s" % (
        f.get("rank"), e.get("detector"), e.get("where"), e.get("transport"), f.get("likely_causes"))
