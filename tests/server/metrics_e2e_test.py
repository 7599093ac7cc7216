#!/usr/bin/python3
"""blklabd's Prometheus exposition scraped by a real Prometheus (ctest server.metrics_e2e).

    metrics_e2e_test.py BLKLABD SOURCE_DIR

Starts a blklabd (exposition on a free port, 5 s retention) and Debian's
prometheus scraping it every second, then checks, each wait bounded in time:
  - while two REALTIME-paced jobs and some unpaced ones run, `promtool check
    metrics` is clean on /metrics;
  - Prometheus's HTTP API returns the paced job's IOPS, latency quantiles,
    contention and per-lock series while it runs, and once it has finished
    their values agree with the job's own result (IO counters exactly, lock
    counters exactly, IOPS and median latency within 15 %);
  - after 500 more jobs have finished, the number of series returns to the
    bound (no per-job or per-host series left) once the retention has passed.
Skips (exit 77) when prometheus or promtool is not installed.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

BLKLABD, SRC = sys.argv[1:3]
if shutil.which("prometheus") is None or shutil.which("promtool") is None:
    print("SKIP: prometheus/promtool not installed")
    sys.exit(77)
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-metrics.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import CONTENDED_HOST, Harness  # noqa: E402

H = Harness(BLKLABD, TMP)
check = H.check

PACED = """[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=32
numjobs=2
runtime=%ds
time_based=1

[contended]
filename=/dev/nullb0
"""
QUICK = """[q]
ioengine=io_uring
direct=1
rw=randrw
bs=4k
iodepth=8
runtime=%s
time_based=1
"""


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(addr):
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        return r.read().decode()


def series(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


class Prom:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def query(self, q):
        url = self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except OSError:
            return []
        return body["data"]["result"] if body.get("status") == "success" else []

    def wait_for(self, q, what, timeout=45):
        deadline = time.time() + timeout
        while time.time() < deadline:
            res = self.query(q)
            if res:
                return res
            time.sleep(0.5)
        check(False, "Prometheus never returned %s (%s)" % (what, q))
        return []


def start_prometheus(metrics_addr):
    d = os.path.join(TMP, "prom")
    os.makedirs(d)
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "scrape_configs:\n"
                "  - job_name: blklabd\n"
                "    static_configs: [{targets: ['%s']}]\n" % metrics_addr)
    r = subprocess.run(["promtool", "check", "config", cfg], capture_output=True, text=True)
    check(r.returncode == 0, "promtool check config: " + r.stdout + r.stderr)
    port = free_port()
    log = open(os.path.join(TMP, "prometheus.log"), "w")
    p = subprocess.Popen(["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(d, "data"),
                          "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                         stdout=log, stderr=log)
    H.procs.append(p)
    return Prom(port)


def value(res):
    return float(res[0]["value"][1]) if res else float("nan")


def main():
    server, addr = H.start(os.path.join(TMP, "data"), "--workers=2", "--metrics_retention=5s")
    maddr = server.metrics_addr
    check(maddr is not None, "the listening line carries metrics_port")
    c = Client(addr)
    baseline = len(series(scrape(maddr)))
    prom = start_prometheus(maddr)
    c.create_host("contended", spec_text=CONTENDED_HOST)

    # Two paced jobs hold both workers; quick unpaced jobs queue behind them.
    paced = c.create_job_from_files({"p.fio": PACED % 15}, ["p.fio"], host="hosts/contended",
                                    pace=job_pb2.Job.REALTIME, job_id="paced")
    other = c.create_job_from_files({"p.fio": PACED % 12}, ["p.fio"], host="hosts/contended",
                                    pace=job_pb2.Job.REALTIME, job_id="paced2")
    quick = [c.create_job_from_files({"q.fio": QUICK % "200ms"}, ["q.fio"], preset="null-1cpu").name
             for _ in range(3)]
    jid = paced.name.split("/", 1)[1]

    # The series appear in Prometheus while the job runs.
    sel = 'job_id="%s"' % jid
    prom.wait_for('blklab_job_running{%s} == 1' % sel, "running")
    iops = prom.wait_for('blklab_job_iops{%s,direction="read"} > 0' % sel, "read IOPS")
    prom.wait_for('blklab_job_clat_seconds{%s,direction="read",quantile="0.99"} > 0' % sel, "clat p99")
    prom.wait_for('blklab_job_contention_ratio{%s} > 0' % sel, "contention")
    locks = prom.wait_for('blklab_job_lock_spin_ratio{%s} > 0' % sel, "per-lock spin")
    check(any(r["metric"].get("lock") == "dd->lock" and r["metric"].get("device") == "nullb0" for r in locks),
          "a spinning lock is nullb0's dd->lock: %s" % [r["metric"] for r in locks])
    check(value(iops) > 0, "IOPS value %s" % iops)
    check(prom.wait_for('blklab_job_running{job_id="paced2"}', "the second paced job") != [],
          "the second paced job is scraped too")

    # promtool lints the exposition while several jobs run.
    text = scrape(maddr)
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check(r.returncode == 0, "promtool check metrics during the run: " + (r.stdout + r.stderr)[-2000:])
    check(len(re.findall(r'^blklab_job_running\{', text, re.M)) >= 2, "several jobs exported")

    final = c.wait(paced.name, timeout=120)
    check(final.state == job_pb2.Job.SUCCEEDED, "paced job SUCCEEDED: %s" % final.error.message)
    res = final.result
    fio = json.loads(res.fio_json)
    job = fio["jobs"][0]
    reads = sum(j["read"]["total_ios"] for j in fio["jobs"])
    # Let a scrape after the job's end see the final counters (the last
    # snapshot's counters come a moment before the job is marked ended).
    deadline = time.time() + 15
    while time.time() < deadline and (value(prom.query('sum(blklab_job_ios_total{%s})' % sel)) != reads or
                                      value(prom.query('blklab_job_running{%s}' % sel)) != 0):
        time.sleep(0.5)
    check(value(prom.query('sum(blklab_job_ios_total{%s,direction="read"})' % sel)) == reads,
          "ios_total %s == the result's %d" % (prom.query('sum(blklab_job_ios_total{%s})' % sel), reads))
    check(value(prom.query('blklab_job_running{%s}' % sel)) == 0, "running drops to 0")
    for lk in res.locks:
        dev, name = lk.name.split(":", 1)
        q = 'blklab_job_lock_acquisitions_total{%s,device="%s",lock="%s"}' % (sel, dev, name)
        check(value(prom.query(q)) == lk.acquisitions, "%s acquisitions %s == %d" % (lk.name, prom.query(q), lk.acquisitions))
        q = 'blklab_job_lock_spin_seconds_total{%s,device="%s",lock="%s"}' % (sel, dev, name)
        got = value(prom.query(q))
        check(abs(got - lk.wait_ns / 1e9) <= 1e-6 * max(1.0, got), "%s spin seconds %s == %g" % (lk.name, got, lk.wait_ns / 1e9))
    # Interval gauges over the run agree with the whole run's figures.
    samples = prom.query('blklab_job_iops{%s,direction="read"}[60s]' % sel)
    vals = [float(v[1]) for v in samples[0]["values"]] if samples else []
    med = statistics.median(vals) if vals else 0
    want = sum(j["read"]["iops"] for j in fio["jobs"])
    check(vals and abs(med - want) <= 0.15 * want, "median interval IOPS %.0f vs result %.0f" % (med, want))
    lat = prom.query('blklab_job_clat_seconds{%s,direction="read",quantile="0.5"}[60s]' % sel)
    lvals = [float(v[1]) for v in lat[0]["values"]] if lat else []
    want_p50 = job["read"]["clat_ns"]["percentile"]["50.000000"] / 1e9
    check(lvals and abs(statistics.median(lvals) - want_p50) <= 0.15 * want_p50,
          "median interval clat p50 %s vs result %g" % (lvals and statistics.median(lvals), want_p50))
    cont = value(prom.query('max_over_time(blklab_job_contention_ratio{%s}[60s])' % sel))
    check(cont > 0 and res.contention_pct > 0, "contention in Prometheus %.4f and in the result %.2f%%"
          % (cont, res.contention_pct))
    # The aggregate histogram counts every measured read of the host's jobs.
    for n in [other.name] + quick:
        c.wait(n, timeout=120)
    hist = value(prom.query('sum(blklab_clat_seconds_count{host="contended",direction="read"})'))
    check(hist >= reads, "blklab_clat_seconds_count %s >= the paced job's reads %d" % (hist, reads))

    # 500 finished jobs: series grow, then return to the bound after the
    # retention time (5 s).
    names = [c.create_job_from_files({"q.fio": QUICK % "1ms"}, ["q.fio"], preset="null-1cpu").name
             for _ in range(500)]
    for n in names:
        c.wait(n, timeout=300)
    peak = series(scrape(maddr))
    check(sum('job_id="' in s for s in peak) >= 500 * 5, "peak: %d series, %d with a job label"
          % (len(peak), sum('job_id="' in s for s in peak)))
    deadline = time.time() + 30
    after = peak
    while time.time() < deadline:
        after = series(scrape(maddr))
        if not any('job_id="' in s or s.startswith("blklab_clat_seconds") for s in after):
            break
        time.sleep(0.5)
    check(not any('job_id="' in s for s in after), "no per-job series after the retention")
    check(not any(s.startswith("blklab_clat_seconds") for s in after), "no per-host histogram after the retention")
    # The bound: what the idle server exported, plus gRPC series per method
    # and code used (bounded by the services' methods).
    grpc = sum(s.startswith("grpc_server_") for s in after)
    check(len(after) - grpc <= baseline, "series back to %d (+%d gRPC) from %d at the peak (baseline %d)"
          % (len(after) - grpc, grpc, len(peak), baseline))
    print("series: baseline %d, peak %d, after retention %d (%d gRPC)" % (baseline, len(peak), len(after), grpc))


H.run_main(main)
