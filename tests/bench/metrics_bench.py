#!/usr/bin/python3
"""/metrics scrape time and size with 100 running jobs (scripts/bench).

    metrics_bench.py BLKLABD SOURCE_DIR [--jobs=100] [--scrapes=50]

Starts a blklabd with one worker per job, submits JOBS REALTIME-paced jobs
(rate-limited fio jobs on a two-CPU host with lock contention, so every job
exports IOPS, latency, CPU, profile and per-lock series), waits until every
job has closed a status interval, then scrapes /metrics SCRAPES times in a
row and prints the wall time per scrape (p50, p99, max), the body size and
the number of series. Target: p99 under 50 ms.
"""
import os
import shutil
import sys
import tempfile
import time
import urllib.request

BLKLABD, SRC = sys.argv[1:3]
opts = dict(a[2:].split("=", 1) for a in sys.argv[3:] if a.startswith("--") and "=" in a)
JOBS = int(opts.get("jobs", 100))
SCRAPES = int(opts.get("scrapes", 50))
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklab-metrics-bench.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2  # noqa: E402
sys.path.insert(0, os.path.join(SRC, "tests", "server"))
from blklabd_harness import CONTENDED_HOST, Harness  # noqa: E402

JOB = """[global]
ioengine=libaio
rw=randrw
bs=4k
iodepth=8
numjobs=2
rate_iops=500
runtime=600s
time_based=1

[bench]
filename=/dev/nullb0
"""


def main():
    H = Harness(BLKLABD, TMP)
    server, addr = H.start(os.path.join(TMP, "data"), "--workers=%d" % JOBS)
    url = "http://%s/metrics" % server.metrics_addr
    c = Client(addr)
    c.create_host("contended", spec_text=CONTENDED_HOST)
    names = [c.create_job_from_files({"b.fio": JOB}, ["b.fio"], host="hosts/contended",
                                     pace=job_pb2.Job.REALTIME).name for _ in range(JOBS)]
    # Every job running and past its first status interval (1 s).
    deadline = time.time() + 60
    body = b""
    while time.time() < deadline:
        body = urllib.request.urlopen(url, timeout=30).read()
        text = body.decode()
        running = text.count("\nblklab_job_running{")
        with_iops = len({line.split('job_id="')[1].split('"')[0] for line in text.splitlines()
                         if line.startswith("blklab_job_iops{")})
        if running >= JOBS and with_iops >= JOBS:
            break
        time.sleep(0.5)
    times = []
    for _ in range(SCRAPES):
        t0 = time.perf_counter()
        body = urllib.request.urlopen(url, timeout=30).read()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    p50, p99 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]
    print("metrics_bench: %d running jobs (%d with interval series): /metrics %d bytes, %d series"
          % (running, with_iops, len(body), series))
    print("  scrape wall time ms over %d scrapes: p50 %.1f  p99 %.1f  max %.1f" % (SCRAPES, p50, p99, times[-1]))
    print("target /metrics scrape < 50 ms with 100 running jobs: %s (p99 %.1f ms)"
          % ("MET" if p99 < 50 and running >= 100 else "NOT MET", p99))
    for n in names:
        c.cancel_job(n)
    H.stop(server)
    H.stop_all()
    shutil.rmtree(TMP, ignore_errors=True)


main()
