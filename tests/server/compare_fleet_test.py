#!/usr/bin/env python3
"""Comparisons through blklabd, on one server and fanned out over a fleet.

Three blklabd processes on loopback share a token; the first is given the
other two as its --fleet. A 12-cell comparison (two variants x three queue
depths x two samples) submitted to it with `blklab --server ... compare`:
  - prints byte for byte what the in-process `blklab compare` prints (JSON
    and the table), and the Python client fetches the same text;
  - ran cells on all three servers (Comparison.cells[].server);
  - with one fleet server killed (SIGKILL) while it runs a cell of a longer
    comparison, still completes every cell (the lost cell is taken again),
    with the same bytes as in-process.
Also: a server without a fleet runs a comparison alone; errors name the
argument as in-process; cancel, delete, list; no token -> UNAUTHENTICATED.
And against a fake fleet server (Python, in this script):
  - one answering RunComparisonCell with NaN, infinite, negative or
    out-of-range figures: with no other server the cell fails after its
    fleet attempts with an error naming the field and the server, the
    coordinator stays up and GetComparisonOutput(json) answers (not a
    crash); with a local worker the cells run there instead and the JSON is
    the in-process one;
  - one that accepts the cell and never answers: the coordinator cancels
    the call after its silence limit (30 s) and the cell runs elsewhere;
  - a real server sends a message every few seconds while its cell runs
    (what tells the two apart).

usage: compare_fleet_test.py BLKLABD BLKLAB SOURCE_DIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent import futures

BLKLABD, BLKLAB, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
from blklab_client import Client, job_pb2, service_pb2, service_pb2_grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402
import grpc  # noqa: E402

TOKEN = "fleet-secret-token"
TMP = tempfile.mkdtemp(prefix="blklab-fleet-")
H = Harness(BLKLABD, TMP)
check = H.check

JOB = ["--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randrw", "--bs=4k", "--iodepth=8",
       "--time_based=1"]
CMP = ["--host=nvme-8cpu", "--seed=7", "--samples=2", "--variant", "before:",
       "--variant", "none:devices.nvme0n1.queue.scheduler=none", "--matrix", "fio.iodepth=1,4,8"]


def blklab(args, server=None, token=TOKEN, timeout=600):
    env = dict(os.environ)
    env.pop("BLKLAB_SERVER", None)
    env.pop("BLKLAB_HOST", None)
    if token:
        env["BLKLAB_TOKEN"] = token
    cmd = [BLKLAB] + (["--server", server] if server else []) + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def compare_args(runtime, fmt=None):
    return CMP + (["--format=" + fmt] if fmt else []) + ["--"] + JOB + ["--runtime=" + runtime]


# What the fake fleet server breaks in its reply, by the caller's comparison
# id, and what the coordinator's error must then say.
BAD_FIGURES = {
    "nan-iops": (lambda r: setattr(r, "iops", float("nan")), "result.iops is NaN"),
    "inf-series": (lambda r: r.log_series[0].value.__setitem__(1, float("inf")),
                   "result.log_series[0].value[1] is +inf"),
    "negative-job": (lambda r: setattr(r.jobs[0], "iops", -5.0), "result.jobs[0].iops is -5: negative"),
    "huge-pct": (lambda r: setattr(r, "usr_pct", 1e300), "result.usr_pct is 1e+300: out of range"),
    "negative-ns": (lambda r: setattr(r.clat_percentiles[0], "value_ns", -1),
                    "result.clat_percentiles[0].value_ns is -1: negative"),
}


class FakeFleetServer(service_pb2_grpc.ComparisonServiceServicer):
    """RunComparisonCell as a broken or hostile fleet server answers it: a
    comparison id starting with "silent" gets no message ever (until the
    caller cancels); any other gets a result whose figures BAD_FIGURES[id]
    (or a NaN IOPS) spoils."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}
        self.cancelled = 0

    def RunComparisonCell(self, request, context):
        cid = request.comparison.split("/")[-1]
        with self.lock:
            self.calls[cid] = self.calls.get(cid, 0) + 1
        if cid.startswith("silent"):
            while context.is_active():
                time.sleep(0.1)
            with self.lock:
                self.cancelled += 1
            return
        yield service_pb2.RunComparisonCellResponse(started=True, job="jobs/fake")
        r = job_pb2.ComparisonCellResult(iops=1000.0, dir_iops=[1000.0, 0.0, 0.0], usr_pct=10.0, sys_pct=20.0,
                                          ios=20)
        r.jobs.add(name="t", iops=1000.0)
        r.clat_percentiles.add(percentile=50.0, value_ns=1000)
        r.log_series.add(kind="iops", time_ms=[5, 10], value=[1.0, 2.0])
        BAD_FIGURES.get(cid, BAD_FIGURES["nan-iops"])[0](r)
        yield service_pb2.RunComparisonCellResponse(started=True, job="jobs/fake", result=r)


def fake_fleet_checks(auth, b_addr):
    """Section 7: figures no blklabd sends, a silent fleet server, heartbeats."""
    fake = FakeFleetServer()
    pool = futures.ThreadPoolExecutor(max_workers=8)
    grpc_server = grpc.server(pool)
    service_pb2_grpc.add_ComparisonServiceServicer_to_server(fake, grpc_server)
    fake_port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    fake_addr = "127.0.0.1:%d" % fake_port
    one_cell = ["--host=nvme-8cpu", "--"] + JOB + ["--runtime=20ms"]
    try:
        # No other server: each cell fails after its fleet attempts, naming
        # the field and the server; the coordinator stays up.
        _, x_addr = H.start(os.path.join(TMP, "x"), auth, "--compare_workers=0", "--fleet=" + fake_addr,
                            "--fleet_cells_per_server=1")
        cx = Client(x_addr, token=TOKEN)
        for cid, (_, expected) in BAD_FIGURES.items():
            made = cx.create_comparison(one_cell, comparison_id=cid)
            last = cx.wait_comparison(made.name, timeout=60)
            check(last is not None and last.state == service_pb2.Comparison.FAILED and expected in last.error
                  and fake_addr in last.error and last.cells[0].attempts == 4,
                  "%s: the cell fails after 4 fleet attempts naming the field and the server (%s)"
                  % (cid, last.error if last else None))
            try:
                cx.comparison_output(made.name, "json")
                check(False, "%s: GetComparisonOutput(json) of the failed comparison is refused" % cid)
            except grpc.RpcError as e:
                check(e.code() == grpc.StatusCode.FAILED_PRECONDITION and expected in e.details(),
                      "%s: GetComparisonOutput(json) is FAILED_PRECONDITION with the error (%s)" % (cid, e.details()))
        check(cx.health_check() == 1 and len(cx.list_comparisons().comparisons) == len(BAD_FIGURES),
              "the coordinator is still up after every bad reply")

        # A local worker: the cells the fake spoils run here instead, and the
        # JSON is the in-process one.
        _, y_addr = H.start(os.path.join(TMP, "y"), auth, "--compare_workers=1", "--fleet=" + fake_addr,
                            "--fleet_cells_per_server=1")
        cy = Client(y_addr, token=TOKEN)
        four = ["--host=nvme-8cpu", "--samples=4", "--"] + JOB + ["--runtime=20ms"]
        made = cy.create_comparison(four, comparison_id="nan-recovered")
        last = cy.wait_comparison(made.name, timeout=120)
        local = blklab(["compare", "--format=json"] + four)
        try:
            out = cy.comparison_output(made.name, "json")
            json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except (grpc.RpcError, ValueError) as e:
            out = "error: %r" % e
        check(last is not None and last.state == service_pb2.Comparison.SUCCEEDED
              and all(c.server == "local" for c in last.cells) and fake.calls.get("nan-recovered", 0) >= 1,
              "spoiled figures: the cells ran on the local worker instead (%s; fake calls %d)"
              % (last.error if last else None, fake.calls.get("nan-recovered", 0)))
        check(local.returncode == 0 and out == local.stdout,
              "spoiled figures: the JSON is finite and the in-process bytes (%s)" % out[:200])

        # A fleet server that takes a cell and never answers loses it after
        # the silence limit; the local worker runs it.
        two = ["--host=nvme-8cpu", "--samples=2", "--"] + JOB + ["--runtime=20ms"]
        t0 = time.time()
        made = cy.create_comparison(two, comparison_id="silent")
        last = cy.wait_comparison(made.name, timeout=110)
        took = time.time() - t0
        local = blklab(["compare", "--format=json"] + two)
        check(last is not None and last.state == service_pb2.Comparison.SUCCEEDED
              and fake.calls.get("silent", 0) >= 1 and 25 <= took <= 110,
              "a silent fleet server loses its cell in %.0f s, and the comparison succeeds (%s; calls %d)"
              % (took, last.error if last else None, fake.calls.get("silent", 0)))
        check(wait_until(lambda: fake.cancelled >= 1, 10), "the silent call was cancelled by the coordinator")
        check(any(c.attempts >= 2 for c in last.cells) if last else False, "the silent server's cell ran again")
        check(local.returncode == 0 and cy.comparison_output(made.name, "json") == local.stdout,
              "after a silent server: the in-process JSON")
    finally:
        grpc_server.stop(0)
        pool.shutdown(wait=False)

    # A real server sends a message every few seconds while its cell runs.
    cb = Client(b_addr, token=TOKEN)
    bundle = job_pb2.ComparisonBundle(args=["--host=nvme-8cpu", "--"] + JOB + ["--runtime=3000s"])
    call = cb.comparisons.RunComparisonCell(
        service_pb2.RunComparisonCellRequest(bundle=bundle, cell=0, comparison="comparisons/heartbeat"),
        metadata=cb.metadata, timeout=30)
    t0 = time.time()
    times = []
    try:
        for msg in call:
            times.append(time.time() - t0)
            if msg.HasField("result") or len(times) >= 3:
                break
    except grpc.RpcError:
        pass  # the deadline: too few messages
    finally:
        call.cancel()
    check(len(times) == 3 and 8 <= times[-1] <= 16,
          "a running cell's server sends a message every 5 s (%s)" % ["%.1f" % t for t in times])


def wait_until(fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.1)
    return fn()


def main():
    tokfile = os.path.join(TMP, "token")
    with open(tokfile, "w") as f:
        f.write(TOKEN + "\n")
    auth = "--auth_token_file=" + tokfile
    pb, b_addr = H.start(os.path.join(TMP, "b"), auth, "--compare_workers=1")
    pc, c_addr = H.start(os.path.join(TMP, "c"), auth, "--compare_workers=1")
    pa, a_addr = H.start(os.path.join(TMP, "a"), auth, "--compare_workers=1",
                        "--fleet=%s,%s" % (b_addr, c_addr), "--fleet_cells_per_server=1")

    # 1. Same bytes as in-process; cells on all three servers.
    local_json = None
    for fmt in ("json", "table"):
        local = blklab(["compare"] + compare_args("300ms", fmt))
        remote = blklab(["compare"] + compare_args("300ms", fmt), server=a_addr)
        check(local.returncode == 0 and remote.returncode == 0,
              "%s: in-process and remote compare succeed (%s)" % (fmt, (local.stderr + remote.stderr)[-300:]))
        check(local.stdout == remote.stdout and len(local.stdout) > 100,
              "%s: the remote comparison prints the in-process bytes" % fmt)
        if fmt == "json":
            local_json = local.stdout
            check(len(json.loads(remote.stdout)["cells"]) == 12, "12 cells")
    client = Client(a_addr, token=TOKEN)
    listed = client.list_comparisons().comparisons
    check(len(listed) == 2 and all(c.state == service_pb2.Comparison.SUCCEEDED for c in listed),
          "ListComparisons: both comparisons SUCCEEDED")
    servers = {}
    for cell in client.get_comparison(listed[-1].name).cells:
        servers[cell.server] = servers.get(cell.server, 0) + 1
    check(set(servers) == {"local", "ipv4:" + b_addr, "ipv4:" + c_addr},
          "the cells ran on all three servers: %s" % servers)
    check(client.comparison_output(listed[-1].name, "json") == local_json,
          "the Python client fetches the same JSON")
    # Each cell is an ordinary job of the server that ran it: GetJob there
    # names the comparison and the cell, and its per-job series carry the
    # comparison's name.
    addr_of = {"local": (a_addr, pa), "ipv4:" + b_addr: (b_addr, pb), "ipv4:" + c_addr: (c_addr, pc)}
    cells = client.get_comparison(listed[-1].name).cells
    jobs_ok = 0
    for i, cell in enumerate(cells):
        addr, _ = addr_of[cell.server]
        job = Client(addr, token=TOKEN).get_job(cell.job)
        if (job.state == job.SUCCEEDED and job.comparison_cell.comparison == listed[-1].name
                and job.comparison_cell.cell == i and job.comparison_cell.label == cell.label
                and job.result.comparison_cell.iops == cell.iops and '"jobs"' in job.result.fio_json):
            jobs_ok += 1
    check(jobs_ok == 12, "every cell is a SUCCEEDED job on its server, naming the comparison (%d of 12)" % jobs_ok)
    for name, (addr, proc) in addr_of.items():
        mtext = urllib.request.urlopen("http://%s/metrics" % proc.metrics_addr, timeout=10).read().decode()
        info = [l for l in mtext.splitlines() if l.startswith("blklab_job_info{")
                and 'comparison="%s"' % listed[-1].name in l and 'cell="cell ' in l]
        ran_here = sum(1 for c in cells if c.server == name)
        check(len(info) == ran_here, "%s /metrics: blklab_job_info of its %d cell jobs with the comparison label (%d)"
              % (name, ran_here, len(info)))
    # /metrics: the cells of a comparison, with its name as a label.
    text = urllib.request.urlopen("http://%s/metrics" % pa.metrics_addr, timeout=10).read().decode()
    series = [l for l in text.splitlines()
              if l.startswith("blklab_comparison_cell_iops{") and 'comparison="%s"' % listed[-1].name in l]
    check(len(series) == 12 and any('server="local"' in l for l in series),
          "/metrics: 12 blklab_comparison_cell_iops series of the comparison (%d)" % len(series))
    check('blklab_comparisons{state="succeeded"} 2' in text, "/metrics: blklab_comparisons by state")

    # Charts: --plot through the server writes the in-process files byte for
    # byte (flame graphs from the cells' stacks included); the Python client
    # fetches the same.
    plot_local, plot_remote = os.path.join(TMP, "plot-local"), os.path.join(TMP, "plot-remote")
    small = ["--host=nvme-8cpu", "--variant", "before:", "--variant", "none:devices.nvme0n1.queue.scheduler=none",
             "--matrix", "fio.iodepth=1,4", "--"] + JOB + ["--runtime=50ms", "--write_iops_log=l",
                                                           "--log_avg_msec=5"]
    lp = blklab(["compare", "--plot=" + plot_local] + small)
    rp = blklab(["compare", "--plot=" + plot_remote] + small, server=a_addr)
    names = sorted(os.listdir(plot_local)) if lp.returncode == 0 else []
    same = (rp.returncode == 0 and lp.stdout == rp.stdout and names == sorted(os.listdir(plot_remote))
            and all(open(os.path.join(plot_local, n), "rb").read() == open(os.path.join(plot_remote, n), "rb").read()
                    for n in names))
    check(same and "report.html" in names and "log-iops.svg" in names and "latency-histogram.svg" in names
          and any(n.startswith("flame-diff-") for n in names),
          "--plot through the server writes the in-process files byte for byte (%d files; %s)"
          % (len(names), (lp.stderr + rp.stderr)[-200:]))
    newest = client.list_comparisons().comparisons[0].name
    got = dict(client.comparison_charts(newest, os.path.join(TMP, "plot-python")))
    check(sorted(got) == names and all(got[n] == open(os.path.join(plot_local, n), "rb").read() for n in names),
          "the Python client fetches the same charts (%d files)" % len(got))

    # 2. Python client: create from a spec file bundle, watch, output.
    spec = ("host: nvme-8cpu\nfio: [job.fio]\nvariants:\n  before: {}\n"
            "  kyber: {devices.nvme0n1.queue.scheduler: kyber}\n")
    jobtext = "[t]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=${QD}\nruntime=20ms\ntime_based=1\n"
    made = client.create_comparison(["cmp/spec.yaml"], files={"cmp/spec.yaml": spec, "cmp/job.fio": jobtext},
                                    variables={"QD": "16"}, comparison_id="from-python")
    check(made.name == "comparisons/from-python" and made.cell_count == 2, "CreateComparison from a spec bundle")
    last = client.wait_comparison(made.name)
    check(last is not None and last.state == service_pb2.Comparison.SUCCEEDED and last.cells_done == 2,
          "WatchComparison ends SUCCEEDED with every cell done")
    d = os.path.join(TMP, "cmp")
    os.makedirs(d)
    open(os.path.join(d, "spec.yaml"), "w").write(spec)
    open(os.path.join(d, "job.fio"), "w").write(jobtext)
    env_local = subprocess.run([BLKLAB, "compare", os.path.join(d, "spec.yaml")], capture_output=True, text=True,
                               env=dict(os.environ, QD="16"), timeout=300)
    out = client.comparison_output(made.name, "table")
    # The header names the job files as given: cmp/job.fio in the bundle, the
    # temporary path in-process; the rest is the same.
    check(env_local.returncode == 0 and out.replace("cmp/job.fio", os.path.join(d, "job.fio")) == env_local.stdout,
          "the spec bundle's table equals the in-process run")

    # 3. Errors as in-process; a missing file names itself; no token.
    bad = ["compare", "--host=nvme-8cpu", "--variant", "x:devices.nvme9.queue.scheduler=none", "--", "--name=t"]
    lb, rb = blklab(bad), blklab(bad, server=a_addr)
    check(lb.returncode == 1 and rb.returncode == 1 and lb.stderr == rb.stderr and "variant x" in rb.stderr,
          "a bad variant fails the same way remotely (%r)" % rb.stderr.strip())
    try:
        client.create_comparison(["cmp/missing.yaml"])
        check(False, "a missing spec file is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.NOT_FOUND and "cmp/missing.yaml" in e.details(),
              "a missing spec file is NOT_FOUND naming it (%s)" % e.details())
    try:
        Client(a_addr).list_comparisons()
        check(False, "no token is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNAUTHENTICATED, "no token: UNAUTHENTICATED")

    # 4. Cancel a long comparison; delete refuses a running one.
    longc = client.create_comparison(compare_args("30s"), comparison_id="long")
    try:
        client.delete_comparison(longc.name)
        check(False, "delete of a running comparison is refused")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.FAILED_PRECONDITION, "delete of a running comparison: FAILED_PRECONDITION")
    t0 = time.time()
    cancelled = client.cancel_comparison(longc.name)
    check(cancelled.state == service_pb2.Comparison.CANCELLED, "CancelComparison: CANCELLED")
    client.delete_comparison(longc.name)
    check(time.time() - t0 < 20, "cancel stops the running cells (delete joined in %.1f s)" % (time.time() - t0))

    # 5. Kill a fleet server while it runs a cell: every cell still completes.
    args = compare_args("10s", "json")
    local = blklab(["compare"] + args)
    env = dict(os.environ, BLKLAB_TOKEN=TOKEN)
    env.pop("BLKLAB_HOST", None)
    proc = subprocess.Popen([BLKLAB, "--server", a_addr, "compare"] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    killed = False
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not killed:
        for c in client.list_comparisons().comparisons:
            if c.state != service_pb2.Comparison.RUNNING:
                continue
            full = client.get_comparison(c.name)
            if any(cell.state == cell.RUNNING and cell.server == "ipv4:" + c_addr for cell in full.cells):
                pc.send_signal(signal.SIGKILL)
                killed = True
                victim = c.name
                break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=600)
    check(killed, "a fleet server was killed while running a cell")
    check(proc.returncode == 0 and out == local.stdout,
          "after the kill every cell completed with the in-process bytes (rc %s, %s)" % (proc.returncode, err[-300:]))
    if killed:
        cells = client.get_comparison(victim).cells
        check(any(cell.attempts >= 2 for cell in cells), "the lost cell was run again elsewhere")
        check(all(cell.server != "ipv4:" + c_addr or cell.state != cell.RUNNING for cell in cells),
              "no cell is left on the killed server")

    # 6. A server without a fleet runs a comparison alone.
    _, solo = H.start(os.path.join(TMP, "solo"), auth, "--compare_workers=2")
    r = blklab(["compare"] + compare_args("20ms", "csv"), server=solo)
    l2 = blklab(["compare"] + compare_args("20ms", "csv"))
    check(r.returncode == 0 and r.stdout == l2.stdout, "a server without a fleet: same CSV as in-process")

    # 7. Fake fleet servers: spoiled figures, silence; a real one's heartbeats.
    fake_fleet_checks(auth, b_addr)


H.run_main(main)
