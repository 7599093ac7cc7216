#!/usr/bin/python3
"""End-to-end test of blklabd driven by the Python client (ctest server.integration).

    integration_test.py BLKLABD BLKLAB SOURCE_DIR

Starts real blklabd processes on free 127.0.0.1 ports with temporary data
directories and checks, each wait bounded in time:
  - health (per service) and reflection (v1alpha) answer;
  - host -> job -> watch: the result's fio JSON equals the embedded
    `blklab fio ... --output-format=json` of the same job and host, byte for
    byte once the wall-clock fields are masked;
  - CancelJob stops a long running job (unpaced or REALTIME-paced) within one
    slice of virtual time of the cancel, and the job keeps the partial result
    of what ran (fio's texts, the typed figures);
  - ListJobs paging and filters; idempotent CreateJob by request_id;
  - a table of bad inputs, each with its status code, the server still serving;
  - bearer-token auth: missing / wrong token -> UNAUTHENTICATED;
  - kill -9 with jobs queued and running, restart: every job SUCCEEDED with the
    same result.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BLKLABD, BLKLAB, SRC = sys.argv[1:4]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-it.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2, host_pb2, health_pb2  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness, code_of  # noqa: E402
import grpc  # noqa: E402

ENV = dict(os.environ, SOURCE_DATE_EPOCH="1700000000", TZ="UTC")
DEMO = open(os.path.join(SRC, "examples", "jobs", "demo.fio")).read()
HOST_YAML = open(os.path.join(SRC, "examples", "hosts", "default.yaml")).read()
H = Harness(BLKLABD, TMP, ENV)
failures = H.failures
procs = H.procs
check = H.check
stop = H.stop


def start_server(data_dir, *extra):
    return H.start(data_dir, *extra)


def mask(text):
    return re.sub(r'"(timestamp|timestamp_ms|time)" : [^,\n]*', r'"\1" : MASKED', text)


# A run's slice of virtual time (the job manager checks for a cancel between
# slices): 100 ms for jobs without a shorter --status-interval.
SLICE_S = 0.1


def seconds(d):
    return d.seconds + d.nanos * 1e-9


def wait_progress(c, name, timeout):
    """Waits (bounded) until a RUNNING job has simulated some virtual time."""
    deadline = time.time() + timeout
    j = c.get_job(name)
    while time.time() < deadline and not (j.state == job_pb2.Job.RUNNING and seconds(j.progress_virtual_time) > 0):
        time.sleep(0.01)
        j = c.get_job(name)
    return j


def wait_state(c, name, states, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = c.get_job(name, full=False)
        if j.state in states:
            return j
        time.sleep(0.01)
    return c.get_job(name, full=False)


def demo_files():
    return {"demo.fio": DEMO}


def main():
    # The reference: the embedded CLI with the same host and job.
    host_file = os.path.join(TMP, "host.yaml")
    open(host_file, "w").write(HOST_YAML)
    shutil.copy(os.path.join(SRC, "examples", "jobs", "demo.fio"), os.path.join(TMP, "demo.fio"))
    ref = subprocess.run([BLKLAB, "fio", "--host=" + host_file, "demo.fio", "--output-format=json"],
                         cwd=TMP, env=ENV, capture_output=True, text=True, timeout=120)
    check(ref.returncode == 0, "embedded reference run (%s)" % ref.stderr.strip()[:200])
    reference = ref.stdout

    data = os.path.join(TMP, "data")
    server, addr = start_server(data, "--workers=2", "--max_queued_jobs=50")
    c = Client(addr)

    # Health and reflection.
    for svc in ("", "blklab.v1.JobService", "blklab.v1.HostService"):
        check(c.health_check(svc) == health_pb2.HealthCheckResponse.SERVING, "health SERVING for %r" % svc)
    services = c.reflection_services()
    check("blklab.v1.JobService" in services and "blklab.v1.HostService" in services,
          "reflection lists the services (%s)" % services)

    # Host -> job -> watch -> result equals the embedded run.
    h = c.create_host("h1", spec_text=HOST_YAML)
    check(h.name == "hosts/h1" and h.spec.devices[0].name == "nullb0", "CreateHost from YAML")
    check(c.get_host("hosts/h1").etag == h.etag, "GetHost")
    check(len(c.list_presets()) >= 1 and c.list_presets()[0].name == "default", "ListPresets, default first")
    job = c.create_job_from_files(demo_files(), ["--output-format=json", "demo.fio"], host="hosts/h1")
    check(job.state == job_pb2.Job.QUEUED, "CreateJob returns QUEUED")
    snaps = list(c.watch(job.name, timeout=120))
    final = snaps[-1].final_job if snaps and snaps[-1].HasField("final_job") else None
    check(final is not None and final.state == job_pb2.Job.SUCCEEDED,
          "WatchJob ends with SUCCEEDED (%d snapshots)" % len(snaps))
    check(len(snaps) > 2 and snaps[0].read.iops > 0, "WatchJob streams interval snapshots with IOPS")
    seqs = [s.sequence for s in snaps]
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "snapshot sequence numbers increase")
    if final is not None:
        check(final.result.fio_json == reference, "fio JSON byte for byte equal to the embedded run")
        check(mask(final.result.fio_json) == mask(reference), "fio JSON equal with timestamps masked")
        check(final.result.jobs[0].read.total_ios > 0 and final.result.jobs[0].read.clat.percentiles,
              "typed result figures are set")
        check(len(final.result.profile) > 0, "profile rows present")
        check(any(t.task.startswith("fio/") and t.switches > 0 and t.runtime_ns > 0 for t in final.result.sched),
              "perf sched latency rows present (the job's thread)")
        btt = {(b.device, b.stage): b for b in final.result.btt}
        check([s for d, s in btt if d == "nullb0"] == ["Q2G", "G2D", "D2C", "Q2C"]
              and btt["nullb0", "Q2C"].n > 0
              and btt["nullb0", "Q2C"].min_ns <= btt["nullb0", "Q2C"].avg_ns <= btt["nullb0", "Q2C"].max_ns
              and abs(btt["nullb0", "Q2C"].avg_ns - sum(btt["nullb0", s].avg_ns for s in ("Q2G", "G2D", "D2C")))
              < 0.01 * btt["nullb0", "Q2C"].avg_ns,
              "btt rows present, in btt's order, Q2C the sum of its stages")
        check("randread-qd32" in final.result.fio_normal, "fio normal output present")
    # Watching a finished job yields its final snapshot only.
    again = list(c.watch(job.name, timeout=30))
    check(len(again) == 1 and again[0].final_job.state == job_pb2.Job.SUCCEEDED, "watch of a finished job")

    # Cancel a long job: it stops within one slice of virtual time of the
    # cancel, however slow the machine is (the wall time is only reported).
    long_job = DEMO.replace("runtime=2", "runtime=3000")
    lj = c.create_job_from_files({"long.fio": long_job}, ["long.fio"], preset="default")
    running = wait_progress(c, lj.name, 60)
    check(running.state == job_pb2.Job.RUNNING and seconds(running.progress_virtual_time) > 0,
          "long job RUNNING, with progress")
    t0 = time.time()
    at_cancel = c.cancel_job(lj.name)
    done = wait_state(c, lj.name, (job_pb2.Job.CANCELLED,), 60)
    latency = time.time() - t0
    check(done.state == job_pb2.Job.CANCELLED and done.error.code == 1, "cancelled job ends CANCELLED, code 1")
    after = seconds(done.progress_virtual_time) - seconds(at_cancel.progress_virtual_time)
    check(at_cancel.state == job_pb2.Job.RUNNING and 0 <= after <= SLICE_S + 1e-9,
          "cancel: %.3f s of virtual time simulated after CancelJob (at most one slice, %.1f s); "
          "%.3f s of wall time" % (after, SLICE_S, latency))
    # The cancelled job keeps the partial result of what ran (as the CLI's
    # report at Ctrl-C): fio's texts and the typed figures.
    full = c.get_job(lj.name)
    r = full.result
    check(full.HasField("result") and "randread-qd32" in r.fio_normal and "Run status group 0" in r.fio_normal
          and '"jobname" : "randread-qd32"' in r.fio_json and r.fio_terse.startswith("3;")
          and len(r.jobs) == 1 and r.jobs[0].read.total_ios > 0 and seconds(r.virtual_time) > 0
          and seconds(r.virtual_time) <= seconds(full.progress_virtual_time) + SLICE_S + 1e-9,
          "a cancelled job keeps the partial result of what ran (%d ios, %.3f s)"
          % (r.jobs[0].read.total_ios if r.jobs else 0, seconds(r.virtual_time)))
    check(full.error.message == "cancelled by CancelJob", "cancelled job's message (%s)" % full.error.message)
    check(code_of(lambda: c.cancel_job(lj.name))[0] == grpc.StatusCode.OK, "CancelJob idempotent on CANCELLED")
    check(code_of(lambda: c.cancel_job(job.name))[0] == grpc.StatusCode.FAILED_PRECONDITION,
          "CancelJob on SUCCEEDED is FAILED_PRECONDITION")
    # Cancel while queued (pace REALTIME keeps a worker busy).
    blockers = [c.create_job_from_files({"long.fio": long_job}, ["long.fio"], pace=job_pb2.Job.REALTIME)
                for _ in range(2)]
    q = c.create_job_from_files(demo_files(), ["demo.fio"])
    check(c.get_job(q.name).state == job_pb2.Job.QUEUED, "job QUEUED behind busy workers")
    check(c.cancel_job(q.name).state == job_pb2.Job.CANCELLED, "cancel a QUEUED job")
    check(not c.get_job(q.name).HasField("result"), "a job cancelled while QUEUED has no result")
    at_cancel = {b.name: c.cancel_job(b.name) for b in blockers}
    for b in blockers:
        # A paced job sleeps between slices and wakes for the cancel: it, too,
        # simulates at most one more slice.
        done = wait_state(c, b.name, (job_pb2.Job.CANCELLED,), 60)
        after = seconds(done.progress_virtual_time) - seconds(at_cancel[b.name].progress_virtual_time)
        check(done.state == job_pb2.Job.CANCELLED and after <= SLICE_S + 1e-9,
              "REALTIME job cancelled within one slice (%.3f s of virtual time after CancelJob)" % after)

    # Idempotent creation.
    a1 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-42")
    a2 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-42")
    check(a1.name == a2.name, "same request_id returns the same job")
    c.wait(a1.name, timeout=120)

    # Listing and paging.
    all_names, token, pages = [], "", 0
    while pages < 100:
        r = c.list_jobs(page_size=2, page_token=token)
        all_names += [j.name for j in r.jobs]
        pages += 1
        token = r.next_page_token
        if not token:
            break
    check(len(all_names) == len(set(all_names)) == 6, "paging visits every job once (%d)" % len(all_names))
    check(all_names[0] == a1.name, "ListJobs newest first")
    succeeded = c.list_jobs(filter="state = SUCCEEDED").jobs
    check({j.name for j in succeeded} == {job.name, a1.name}, "filter state = SUCCEEDED")
    check(len(c.list_jobs(filter='host = "hosts/h1"').jobs) == 1, "filter by host")
    check(code_of(lambda: c.list_jobs(filter="colour = red"))[0] == grpc.StatusCode.INVALID_ARGUMENT,
          "bad filter is INVALID_ARGUMENT")
    check(code_of(lambda: c.delete_job(job.name))[0] == grpc.StatusCode.OK, "DeleteJob of a finished job")
    check(code_of(lambda: c.get_job(job.name))[0] == grpc.StatusCode.NOT_FOUND, "deleted job is NOT_FOUND")

    # A job stopped by a limit keeps its partial result (job.proto).
    lim = job_pb2.JobLimits(max_simulated_ios=300000)
    lj2 = c.create_job_from_files({"a.fio": DEMO.replace("runtime=2", "runtime=60")}, ["a.fio", "--output-format=json"],
                                  limits=lim)
    done = wait_state(c, lj2.name, (job_pb2.Job.FAILED, job_pb2.Job.SUCCEEDED), 60)
    full = c.get_job(lj2.name)
    ios = 0
    if full.result.fio_json:
        ios = json.loads(full.result.fio_json)["jobs"][0]["read"]["total_ios"]
    check(done.state == job_pb2.Job.FAILED and full.error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
          and "simulated-IO limit of 300000" in full.error.message and ios >= 300000,
          "a job stopped by its IO limit is FAILED with the limit named and keeps %d IOs of results" % ios)

    # Bad inputs: each gives its code and the server keeps serving.
    big = host_pb2.HostSpec(name="big")
    big.cpus.count = 60000
    d = big.devices.add(name="nullb0")
    d.null_blk.SetInParent()
    IA, RE = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED
    table = [
        ("malformed job file", IA, lambda: c.create_job_from_files({"a.fio": "[j\nrw=read\n"}, ["a.fio"]), "a.fio"),
        ("unknown option", IA, lambda: c.create_job_from_files(
            {"a.fio": "[j]\nrw=read\nfrobnicate=3\n"}, ["a.fio"]), "a.fio"),
        ("unknown device", IA, lambda: c.create_job_from_files(
            {"a.fio": "[j]\nrw=read\nfilename=/dev/sdz\nsize=1m\n"}, ["a.fio"]), "sdz"),
        ("oversized topology", RE, lambda: c.create_job_from_files(demo_files(), ["demo.fio"], host_spec=big), "cpu"),
        ("absurd runtime", RE, lambda: c.create_job_from_files(
            {"a.fio": DEMO.replace("runtime=2", "runtime=100000000")}, ["a.fio"]), "limit"),
        ("include of a server path", IA, lambda: c.create_job_from_files(
            {"a.fio": DEMO.replace("[global]\n", "[global]\ninclude /etc/passwd\n")}, ["a.fio"]), "/etc/passwd"),
        ("${HOME} reference", IA, lambda: c.create_job_from_files(
            {"a.fio": DEMO.replace("filename=/dev/nullb0", "filename=${HOME}/x")}, ["a.fio"]), ""),
        ("--output=FILE", IA, lambda: c.create_job_from_files(demo_files(), ["--output=/tmp/x", "demo.fio"]), ""),
        ("unknown preset", IA, lambda: c.create_job_from_files(demo_files(), ["demo.fio"], preset="nope"), ""),
        ("unknown host", grpc.StatusCode.NOT_FOUND, lambda: c.create_job_from_files(
            demo_files(), ["demo.fio"], host="hosts/nope"), ""),
        ("bad host field", IA, lambda: c.create_host("h2", spec_text="name: x\ncpus: {count: 0}\n"
                                                    "devices: [{name: nullb0, null_blk: {}}]\n"), "cpus.count"),
        ("duplicate host", grpc.StatusCode.ALREADY_EXISTS, lambda: c.create_host("h1", spec_text=HOST_YAML), ""),
        ("bad job name", IA, lambda: c.get_job("jobs/UPPER"), ""),
    ]
    for what, want, fn, needle in table:
        got, msg = code_of(fn)
        check(got == want and needle in msg, "%s -> %s (%s: %s)" % (what, want.name, got.name, msg[:120]))
        check(c.health_check() == health_pb2.HealthCheckResponse.SERVING, "still serving after " + what)

    c.close()
    check(stop(server) == 0, "SIGTERM: graceful exit 0")

    # Auth: missing or wrong token -> UNAUTHENTICATED.
    token_file = os.path.join(TMP, "token")
    open(token_file, "w").write("s3cret-token-0123456789\n")
    server, addr = start_server(os.path.join(TMP, "data-auth"), "--auth_token_file=" + token_file)
    for label, tok, want in (("missing token", None, grpc.StatusCode.UNAUTHENTICATED),
                             ("wrong token", "nope", grpc.StatusCode.UNAUTHENTICATED),
                             ("right token", "s3cret-token-0123456789", grpc.StatusCode.OK)):
        ca = Client(addr, token=tok)
        check(code_of(lambda: ca.list_jobs())[0] == want, "auth: %s -> %s" % (label, want.name))
        check(code_of(lambda: list(ca.watch("jobs/x", timeout=5)))[0] in (want, grpc.StatusCode.NOT_FOUND)
              and (want == grpc.StatusCode.OK or code_of(lambda: list(ca.watch("jobs/x", timeout=5)))[0] == want),
              "auth on WatchJob: %s" % label)
        ca.close()
    stop(server)
    rc = subprocess.run([BLKLABD, "--listen=0.0.0.0:0", "--data_dir=" + os.path.join(TMP, "d3")],
                        capture_output=True, timeout=20).returncode
    check(rc != 0, "non-loopback listen without a token is refused")
    # A name that only starts like a loopback address is resolved, not
    # prefix-matched (.invalid never resolves, RFC 2606: it is refused).
    rc = subprocess.run([BLKLABD, "--listen=127.0.0.1.invalid:0", "--data_dir=" + os.path.join(TMP, "d4")],
                        capture_output=True, timeout=20).returncode
    check(rc != 0, "a look-alike loopback name without a token is refused")

    # Crash and restart: kill -9 with jobs queued and running.
    data_r = os.path.join(TMP, "data-restart")
    server, addr = start_server(data_r, "--workers=1")
    c = Client(addr)
    names = [c.create_job_from_files(demo_files(), ["--output-format=json", "demo.fio"],
                                     host_spec=c.create_host("hr", spec_text=HOST_YAML).spec if i == 0 else None,
                                     preset="default").name for i in range(3)]
    r0 = wait_state(c, names[0], (job_pb2.Job.RUNNING,), 20)
    check(r0.state == job_pb2.Job.RUNNING and c.get_job(names[2]).state == job_pb2.Job.QUEUED,
          "one job running, others queued before the crash")
    c.close()
    server.kill()
    server.wait(10)
    server, addr = start_server(data_r, "--workers=1")
    c = Client(addr)
    for n in names:
        f = c.wait(n, timeout=120)
        check(f.state == job_pb2.Job.SUCCEEDED and mask(f.result.fio_json) == mask(reference),
              "after kill -9 and restart %s SUCCEEDED with the same result" % n)
    c.close()
    stop(server)

    # A taken port is an error, not a shared port (gRPC's SO_REUSEPORT is off).
    server, addr = start_server(os.path.join(TMP, "data-port"))
    second = subprocess.run([BLKLABD, "--listen=" + addr, "--metrics_listen=127.0.0.1:0",
                             "--data_dir=" + os.path.join(TMP, "data-port2")],
                            capture_output=True, text=True, timeout=20)
    check(second.returncode != 0 and "port taken" in second.stderr,
          "a second blklabd on a taken port exits with a message (%s)" % second.stderr.strip()[-160:])
    stop(server)

    # A request_id answers with its job only for --request_id_ttl (24 h by
    # default, as service.proto promises); after that it creates a new job.
    server, addr = start_server(os.path.join(TMP, "data-rid"), "--request_id_ttl=1s")
    c = Client(addr)
    r1 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-ttl")
    r2 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-ttl")
    time.sleep(1.2)
    r3 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-ttl")
    r4 = c.create_job_from_files(demo_files(), ["demo.fio"], request_id="req-ttl")
    check(r1.name == r2.name and r3.name != r1.name and r4.name == r3.name,
          "request_id: the same job within --request_id_ttl, a new one after it")
    for n in (r1.name, r3.name):
        c.wait(n, timeout=120)
    c.close()
    stop(server)


H.run_main(main)
