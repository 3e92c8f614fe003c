#!/usr/bin/python3
"""Time to the fleet alert: `slowburn probe` on the node, a real Prometheus
(Debian's) with the shipped rules, and demo jobs started one after another.

For each of RUNS jobs with rank i mod 4 computing SLOWDOWN x the others
(4 ranks, 3 ms compute a step): the seconds from the job's launch (mpirun
started) to the service's first finding in its event log, to the
`slowburn_straggler` series on its endpoint, and to Prometheus reporting the
`SlowburnStraggler` alert firing for that job (polled every 0.2 s). Then
RUNS healthy jobs of HEALTHY_S seconds each under the same service: every
straggler finding, and every alert, is false.

  bench/fleet_alert.py BUILD [--runs N] [--slowdown F] [--scrape-s S]
                       [--healthy-s S] [--service-args '...']

The service runs with its defaults (sampling, the 1% budget, hardware and
host sources) unless --service-args says otherwise. Prometheus scrapes and
evaluates every --scrape-s (default 1 s): a fleet that scrapes every 15 s
adds up to that much twice (a scrape, then an evaluation). Prints Markdown
for bench/RESULTS.md. Needs root, mpirun, prometheus.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        return urllib.request.urlopen(url, timeout=2).read().decode()
    except OSError:
        return None


def wait_for(url, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if get(url) is not None:
            return True
        time.sleep(0.1)
    return False


def log_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def firing_jobs(prom_port):
    body = get(f"http://127.0.0.1:{prom_port}/api/v1/alerts")
    if not body:
        return {}
    out = {}
    for a in json.loads(body)["data"]["alerts"]:
        if a["labels"].get("alertname") == "SlowburnStraggler" and a.get("state") == "firing":
            out.setdefault(a["labels"].get("job", ""), a["labels"])
    return out


def launch(build, slow_rank, slowdown, seconds):
    argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4",
            f"{build}/libexec/slowburn-mpi-workload", "--compute-us", "3000", "--seconds", str(seconds)]
    if slow_rank >= 0:
        argv += ["--slow-rank", str(slow_rank), "--slowdown", str(slowdown)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def quantile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--slowdown", type=float, default=1.3)
    ap.add_argument("--scrape-s", type=float, default=1.0)
    ap.add_argument("--healthy-s", type=float, default=15.0)
    ap.add_argument("--timeout-s", type=float, default=40.0)
    ap.add_argument("--service-args", default="")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (loads BPF programs)")
    if not shutil.which("prometheus"):
        sys.exit("bench: prometheus is not installed (make deps)")

    tmp = tempfile.mkdtemp(prefix="slowburn-fleet-")
    svc_port, prom_port = free_port(), free_port()
    with open(f"{tmp}/prometheus.yml", "w") as f:
        every = f"{round(a.scrape_s * 1000)}ms"  # Prometheus takes no "1.0s"
        f.write(f"global:\n  scrape_interval: {every}\n  evaluation_interval: {every}\n"
                f"rule_files:\n  - {SRC}/deploy/prometheus/slowburn.rules.yml\n"
                "scrape_configs:\n  - job_name: slowburn\n    honor_labels: true\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{svc_port}']\n")
    log = f"{tmp}/log/slowburn.jsonl"
    svc = subprocess.Popen([f"{a.build}/slowburn", "probe", "--listen", f"127.0.0.1:{svc_port}",
                            "--log-dir", f"{tmp}/log"] + a.service_args.split(),
                           stdout=open(f"{tmp}/service.out", "w"), stderr=subprocess.STDOUT)
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/tsdb", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/prometheus.out", "w"))
    try:
        if not wait_for(f"http://127.0.0.1:{svc_port}/metrics", 30):
            sys.exit("bench: slowburn probe never answered:\n" + open(f"{tmp}/service.out").read())
        if not wait_for(f"http://127.0.0.1:{prom_port}/-/ready", 30):
            sys.exit("bench: prometheus never became ready:\n" + open(f"{tmp}/prometheus.out").read()[-2000:])
        rows, seen_jobs = [], set(firing_jobs(prom_port))
        for i in range(a.runs):
            before = len(log_lines(log))
            job = launch(a.build, i % 4, a.slowdown, a.timeout_s + 5)
            t0 = time.monotonic()
            row = {"rank": i % 4, "finding": None, "metric": None, "alert": None, "named": None}
            while time.monotonic() - t0 < a.timeout_s and row["alert"] is None:
                el = time.monotonic() - t0
                if row["finding"] is None:
                    new = [l for l in log_lines(log)[before:] if l.get("kind") == "finding"]
                    if new:
                        row["finding"], row["named"] = el, new[0].get("rank")
                        row["detector"] = new[0].get("evidence", {}).get("detector")
                if row["metric"] is None and "\nslowburn_straggler{" in (get(f"http://127.0.0.1:{svc_port}/metrics") or ""):
                    row["metric"] = el
                fresh = {j: l for j, l in firing_jobs(prom_port).items() if j not in seen_jobs}
                if fresh:
                    row["alert"] = el
                    row["alert_rank"] = int(next(iter(fresh.values())).get("rank", -1))
                    seen_jobs.update(fresh)
                time.sleep(0.2)
            stop(job)
            rows.append(row)
            time.sleep(3)  # the ranks leave the service, the alert resolves
            seen_jobs.update(firing_jobs(prom_port))

        false_findings, false_runs, false_alerts = 0, 0, 0
        for i in range(a.runs):
            before = len(log_lines(log))
            job = launch(a.build, -1, 1.0, a.healthy_s + 5)
            t0, alerted = time.monotonic(), False
            while time.monotonic() - t0 < a.healthy_s:
                fresh = [j for j in firing_jobs(prom_port) if j not in seen_jobs]
                alerted = alerted or bool(fresh)
                seen_jobs.update(fresh)
                time.sleep(0.5)
            stop(job)
            n = sum(1 for l in log_lines(log)[before:] if l.get("kind") == "finding" and l.get("type") == "straggler")
            false_findings += n
            false_runs += n > 0
            false_alerts += alerted
            time.sleep(3)
    finally:
        svc.send_signal(signal.SIGTERM)
        prom.send_signal(signal.SIGTERM)
        svc.wait()
        prom.wait()

    def col(key):
        return [r[key] for r in rows if r[key] is not None]

    print(f"\n### Time to the fleet alert: `slowburn probe` {a.service_args or '(defaults)'}, "
          f"Prometheus scraping and evaluating every {a.scrape_s:g} s\n")
    print(f"`bench/fleet_alert.py {a.build} --runs {a.runs} --slowdown {a.slowdown:g} --scrape-s {a.scrape_s:g}"
          f" --healthy-s {a.healthy_s:g}`: {a.runs} demo jobs (4 ranks on 2 CPUs, 3 ms compute a step), rank i mod 4"
          f" at {a.slowdown:g}x, one after another under one service; seconds from the job's launch (mpirun started):\n")
    print("| to | runs | min | median | p90 | max |")
    print("|---|---|---|---|---|---|")
    for key, label in (("finding", "the service's finding (its log)"), ("metric", "`slowburn_straggler` exported"),
                       ("alert", "`SlowburnStraggler` firing in Prometheus")):
        v = col(key)
        if v:
            print(f"| {label} | {len(v)} of {a.runs} | {min(v):.2f} | {statistics.median(v):.2f} | "
                  f"{quantile(v, 0.9):.2f} | {max(v):.2f} |")
        else:
            print(f"| {label} | 0 of {a.runs} | - | - | - | - |")
    right = sum(1 for r in rows if r["named"] == r["rank"])
    right_alert = sum(1 for r in rows if r.get("alert_rank") == r["rank"])
    detectors = {}
    for r in rows:
        if r.get("detector"):
            detectors[r["detector"]] = detectors.get(r["detector"], 0) + 1
    print(f"\n- first finding named the injected rank in {right} of {a.runs}; the alert's rank was the injected one in"
          f" {right_alert}; first finding's detector: {', '.join(f'{k} {v}' for k, v in sorted(detectors.items()))}")
    print("- alert seconds, all runs: " + ",".join(f"{v:.2f}" for v in col("alert")))
    print(f"- healthy jobs ({a.runs} of {a.healthy_s:g} s): {false_findings} straggler finding(s) in {false_runs} runs;"
          f" a new SlowburnStraggler alert in {false_alerts} runs")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
