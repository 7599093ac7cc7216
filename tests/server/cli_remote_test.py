#!/usr/bin/python3
"""The C++ CLI against a real blklabd (ctest server.cli_remote).

    cli_remote_test.py BLKLABD BLKLAB SOURCE_DIR

Starts its own blklabd on a free 127.0.0.1 port with a temporary data
directory (each wait bounded) and checks:
  - `blklab --server ADDR fio examples/jobs/demo.fio --output-format=json`
    prints byte for byte what the in-process `blklab fio ...` prints
    (SOURCE_DATE_EPOCH set for client and server; the client's wins when
    they differ), also for normal output,
    with --output=FILE, and with a job file that includes another one;
  - `jobs list` shows the job, `jobs get` and `hosts` commands work;
  - `jobs get --fio=terse` prints the result's terse text;
  - `jobs cancel` stops a long job (its client exits CANCELLED, the error
    said once: "CANCELLED: cancelled by CancelJob"), and the job keeps the
    report of what ran (`jobs get --fio=normal|json|terse` print it, exit
    CANCELLED); Ctrl-C in the client cancels its job and, as fio and the
    in-process run, prints "fio: terminating on signal 2" and the report of
    what ran (the server's partial result), exit 128;
  - a bad option exits INVALID_ARGUMENT (3) naming the option;
  - a 1 s run with a latency log larger than a gRPC message writes the same
    files and prints the same bytes as the in-process run (ReadJobArtifacts);
    so do --folded and --flame (the call stacks);
  - log files: only names the command line's options give are written
    (a job file's absolute write_bw_log= path too, as in-process, with the
    report); never through a symbolic link; a fake server (Python, in this
    script) returning log names of its own ('.bashrc', '../x',
    'link/evil', ...) gets them refused with a warning each, nothing
    written, and the report still printed with the job's exit code;
  - a wrong token exits UNAUTHENTICATED (16), the right one works;
  - --tls_ca_file naming garbage, a missing file or a directory exits 2
    before connecting, naming the file and what is wrong;
  - ./scripts/demo with DEMO_NONINTERACTIVE=1 runs to completion.
"""
import json
import os
import signal
import select
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent import futures

BLKLABD, BLKLAB, SRC = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix="blklab-cli-remote.")
ENV = dict(os.environ, SOURCE_DATE_EPOCH="1700000000", TZ="UTC")
ENV.pop("BLKLAB_SERVER", None)
ENV.pop("BLKLAB_TOKEN", None)
DEMO = os.path.join(SRC, "examples", "jobs", "demo.fio")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
from blklab_client import job_pb2, service_pb2, service_pb2_grpc  # noqa: E402
import grpc  # noqa: E402


H = Harness(BLKLABD, TMP, ENV)
failures = H.failures
procs = H.procs
check = H.check
stop = H.stop


def start_server(data_dir, *extra):
    return H.start(data_dir, "--workers=2", *extra)


def run(args, timeout=120, env=None, cwd=None):
    return subprocess.run([BLKLAB] + args, env=env or ENV, cwd=cwd or TMP, capture_output=True, text=True,
                          timeout=timeout)


def remote(addr, args, **kw):
    return run(["--server", addr] + args, **kw)


def list_jobs(addr, *flags):
    r = remote(addr, ["jobs", "list", "--json"] + list(flags), timeout=30)
    return json.loads(r.stdout).get("jobs", []) if r.returncode == 0 else []


def wait_for(fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    return fn()


class HostileJobs(service_pb2_grpc.JobServiceServicer):
    """A server that answers any fio run with a SUCCEEDED job whose result
    lists log files it named itself, besides the one the command line asks
    for (ok_bw.1.log, from --write_bw_log=ok)."""
    LOGS = {"ok_bw.1.log": b"5, 100, 0, 0, 0\n", ".bashrc": b"evil\n", "../x": b"evil\n", "sub/evil": b"evil\n",
            "link/evil": b"evil\n", ".ssh/authorized_keys": b"evil\n", "ok_bw.1.log.sh": b"evil\n"}
    REPORT = "HOSTILE SERVER'S REPORT\n"

    def __init__(self):
        self.asked = []

    def CreateJob(self, request, context):
        return job_pb2.Job(name="jobs/hostile", state=job_pb2.Job.QUEUED)

    def WatchJob(self, request, context):
        result = job_pb2.JobResult(fio_json=self.REPORT, fio_normal=self.REPORT)
        for name, data in self.LOGS.items():
            result.logs.add(name=name, size_bytes=len(data))
        yield job_pb2.Snapshot(job="jobs/hostile", final_job=job_pb2.Job(
            name="jobs/hostile", state=job_pb2.Job.SUCCEEDED, result=result))

    def ReadJobArtifacts(self, request, context):
        for a in request.artifacts:
            self.asked.append(a)
            data = self.LOGS.get(a[len("logs/"):], b"")
            yield service_pb2.ArtifactChunk(artifact=a, offset=0, data=data, total_bytes=len(data))


def hostile_server_checks():
    """`blklab --server FAKE fio ...` against HostileJobs."""
    hostile = HostileJobs()
    pool = futures.ThreadPoolExecutor(max_workers=4)
    fake = grpc.server(pool)
    service_pb2_grpc.add_JobServiceServicer_to_server(hostile, fake)
    port = fake.add_insecure_port("127.0.0.1:0")
    fake.start()
    try:
        base = os.path.join(TMP, "hostile")
        cwd, outside = os.path.join(base, "cwd"), os.path.join(base, "outside")
        os.makedirs(os.path.join(cwd, "sub"))
        os.makedirs(outside)
        os.symlink(outside, os.path.join(cwd, "link"))
        r = run(["--server", "127.0.0.1:%d" % port, "fio", "--name=ok", "--ioengine=io_uring", "--direct=1",
                 "--rw=randread", "--runtime=200ms", "--time_based", "--write_bw_log=ok", "--output-format=json"],
                cwd=cwd)
        check(r.returncode == 0 and r.stdout == HostileJobs.REPORT,
              "a hostile server's log names: the report is printed, exit 0 as the job (%d: %s)"
              % (r.returncode, r.stderr.strip()[-300:]))
        check(sorted(os.listdir(cwd)) == ["link", "ok_bw.1.log", "sub"] and not os.listdir(outside)
              and not os.listdir(os.path.join(cwd, "sub")) and sorted(os.listdir(base)) == ["cwd", "outside"],
              "only the log the command line names is written (%s)" % sorted(os.listdir(cwd)))
        check(open(os.path.join(cwd, "ok_bw.1.log"), "rb").read() == HostileJobs.LOGS["ok_bw.1.log"],
              "the named log has the server's bytes")
        refused = [n for n in HostileJobs.LOGS if n != "ok_bw.1.log"]
        check(all('"%s"' % n in r.stderr for n in refused) and r.stderr.count("no write_*_log or write_iolog option") == len(refused),
              "a warning names each refused log (%s)" % r.stderr.strip()[-400:])
        check(hostile.asked == ["logs/ok_bw.1.log"], "refused logs are not even read (%s)" % hostile.asked)
    finally:
        fake.stop(0)
        pool.shutdown(wait=False)


def main():
    data = os.path.join(TMP, "data")
    server, addr = start_server(data)

    r = remote(addr, ["health"], timeout=30)
    check(r.returncode == 0 and r.stdout.strip() == "SERVING", "health SERVING (%s)" % r.stdout.strip())

    # Byte-for-byte equality with the in-process run.
    formats = ("json", "normal", "json,normal", "terse", "json+", "terse,json+,normal")
    for fmt in formats:
        local = run(["fio", DEMO, "--output-format=" + fmt])
        rem = remote(addr, ["fio", DEMO, "--output-format=" + fmt])
        check(local.returncode == 0 and rem.returncode == 0,
              "%s: both runs exit 0 (%s / %s)" % (fmt, local.stderr.strip()[:200], rem.stderr.strip()[:200]))
        check(rem.stdout == local.stdout and len(local.stdout) > 100,
              "%s: remote output equals the in-process output byte for byte" % fmt)

    # A job that fails its verify: the same messages, output and exit value.
    bad = ["fio", "--name=v", "--filename=/dev/nullb0", "--rw=read", "--bs=4k", "--size=64k", "--verify=md5",
           "--ioengine=libaio", "--iodepth=4", "--direct=1"]
    local = run(bad)
    rem = remote(addr, bad)
    check(local.returncode == 1 and rem.returncode == 1 and "err=84" in local.stdout
          and rem.stdout == local.stdout and rem.stderr == local.stderr
          and local.stderr.startswith("verify: bad magic header 0, wanted acca at file /dev/nullb0 offset 0"),
          "a failed verify: remote exit, stdout and stderr equal the in-process run (%d / %d, %s)"
          % (local.returncode, rem.returncode, rem.stderr[:200]))

    # The client's SOURCE_DATE_EPOCH travels with the job (Job.report_time):
    # a client pinned to another date than the server prints what it would
    # print in-process.
    env_1600 = dict(ENV, SOURCE_DATE_EPOCH="1600000000")
    local = run(["fio", DEMO, "--output-format=json"], env=env_1600)
    rem = remote(addr, ["fio", DEMO, "--output-format=json"], env=env_1600)
    check(rem.returncode == 0 and rem.stdout == local.stdout and '"timestamp" : 1600000000' in rem.stdout,
          "the client's SOURCE_DATE_EPOCH, not the server's, dates the remote report")

    # --output=FILE and --host=FILE (sent inline).
    host_file = os.path.join(SRC, "examples", "hosts", "default.yaml")
    local = run(["fio", "--host=" + host_file, DEMO, "--output-format=json", "--output=local.json"])
    rem = remote(addr, ["fio", "--host=" + host_file, DEMO, "--output-format=json", "--output=remote.json"])
    check(local.returncode == 0 and rem.returncode == 0 and rem.stdout == "",
          "--output and --host=FILE (%s)" % rem.stderr.strip()[:200])
    check(open(os.path.join(TMP, "local.json")).read() == open(os.path.join(TMP, "remote.json")).read(),
          "--output files equal")

    # --host=auto: the client builds the host from the job and sends it inline.
    auto_args = ["fio", "--host=auto", "--name=n", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1",
                 "--rw=randread", "--iodepth=8", "--runtime=20ms", "--time_based=1", "--output-format=json"]
    local = run(auto_args)
    rem = remote(addr, auto_args)
    check(local.returncode == 0 and rem.returncode == 0 and rem.stdout == local.stdout
          and '"name" : "nvme0n1"' in rem.stdout,
          "fio --host=auto: the remote report equals the in-process one (%s)" % rem.stderr.strip()[:200])
    rem = remote(addr, ["fio", "--host=auto", "--name=t", "--filename=/dev/vda", "--rw=read"])
    check(rem.returncode != 0 and "filename=/dev/vda: not a kind of block device" in rem.stderr,
          "fio --host=auto refuses a device kind it has no model for (%s)" % rem.stderr.strip()[:200])
    # A regular file: the host carries its filesystem to the server.
    fs_args = ["fio", "--host=auto", "--name=f", "--filename=data/f1", "--size=64m", "--direct=1",
               "--rw=randread", "--runtime=10ms", "--time_based=1", "--output-format=json"]
    local = run(fs_args)
    rem = remote(addr, fs_args)
    check(local.returncode == 0 and rem.returncode == 0 and rem.stdout == local.stdout
          and "iomap_dio_rw" in rem.stdout,
          "fio --host=auto on a file: the remote report equals the in-process one (%s)" % rem.stderr.strip()[:200])

    # A job file in another directory that includes a file next to it, and a ${VAR}.
    sub = os.path.join(TMP, "sub")
    os.makedirs(sub)
    open(os.path.join(sub, "common.inc"), "w").write("ioengine=io_uring\ndirect=1\nbs=${BS}\n")
    open(os.path.join(sub, "main.fio"), "w").write(
        "[global]\ninclude common.inc\nrw=randread\niodepth=8\nruntime=1\ntime_based=1\n\n[j]\nfilename=/dev/nullb0\n")
    env = dict(ENV, BS="8k")
    local = run(["fio", "sub/main.fio", "--output-format=json"], env=env)
    rem = remote(addr, ["fio", "sub/main.fio", "--output-format=json"], env=env)
    check(local.returncode == 0 and rem.returncode == 0 and rem.stdout == local.stdout and '"bs" : "8k"' in rem.stdout,
          "include and ${VAR} resolved locally into the bundle (%s)" % rem.stderr.strip()[:200])

    # Listing and getting.
    jobs = list_jobs(addr)
    # One job per format above, plus the failed verify, the SOURCE_DATE_EPOCH,
    # --output, two --host=auto and include runs (a job whose verify failed still
    # SUCCEEDED: the run completed, fio's error is in its result; the refused
    # auto host never reached the server).
    check(len(jobs) == len(formats) + 6 and all(j["state"] == "SUCCEEDED" for j in jobs),
          "jobs list --json shows the jobs")
    table = remote(addr, ["jobs", "list"]).stdout
    check(table.startswith("NAME") and jobs[0]["name"] in table and "SUCCEEDED" in table, "jobs list table")
    g = remote(addr, ["jobs", "get", jobs[-1]["name"], "--fio=json"])
    local = run(["fio", DEMO, "--output-format=json"])
    check(g.returncode == 0 and g.stdout == local.stdout, "jobs get --fio=json prints the result")
    g = remote(addr, ["jobs", "get", jobs[-1]["name"], "--fio=terse"])
    local_terse = run(["fio", DEMO, "--output-format=terse"])
    check(g.returncode == 0 and g.stdout == local_terse.stdout and g.stdout.startswith("3;"),
          "jobs get --fio=terse prints the terse result (%d: %s)" % (g.returncode, g.stderr.strip()[:200]))
    g = remote(addr, ["jobs", "get", jobs[-1]["name"], "--fio=xml"])
    check(g.returncode == 2, "jobs get --fio=xml is a usage error (%d)" % g.returncode)
    check(remote(addr, ["jobs", "get", jobs[0]["name"].split("/")[1]]).returncode == 0, "jobs get by id")
    check("SUCCEEDED" in remote(addr, ["jobs", "list", "--state=SUCCEEDED"]).stdout, "jobs list --state")
    check(remote(addr, ["jobs", "get", "nope"]).returncode == 5, "jobs get of an unknown job exits NOT_FOUND (5)")
    r = remote(addr, ["hosts", "create", "h1", host_file])
    check(r.returncode == 0 and "hosts/h1" in r.stdout, "hosts create (%s)" % r.stderr.strip()[:200])
    check("hosts/h1" in remote(addr, ["hosts", "list"]).stdout, "hosts list")
    check("default" in remote(addr, ["hosts", "presets"]).stdout, "hosts presets")
    rem = remote(addr, ["fio", "--host=hosts/h1", DEMO, "--output-format=json"])
    check(rem.returncode == 0 and rem.stdout == local.stdout, "fio --host=hosts/NAME")
    check(remote(addr, ["hosts", "delete", "h1"]).returncode == 0, "hosts delete")
    # --pace=realtime: one virtual second takes about one wall second; the
    # result is the unpaced one.
    paced_args = ["--name=p", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--iodepth=4", "--runtime=1500ms",
                  "--time_based", "--output-format=json"]
    t0 = time.time()
    rp = remote(addr, ["fio", "--pace=realtime"] + paced_args)
    took = time.time() - t0
    fast = remote(addr, ["fio", "--pace=fast"] + paced_args)
    check(rp.returncode == 0 and took >= 1.4 and json.loads(rp.stdout)["jobs"][0]["read"]["total_ios"]
          == json.loads(fast.stdout)["jobs"][0]["read"]["total_ios"],
          "--pace=realtime takes %.2f s of wall time for 1.5 s virtual, same IOs as --pace=fast" % took)
    check(remote(addr, ["fio", "--pace=slow"] + paced_args).returncode == 3, "--pace=slow is INVALID_ARGUMENT (3)")
    check(run(["fio", "--pace=realtime"] + paced_args).returncode != 0, "--pace without --server is refused")
    w = remote(addr, ["jobs", "watch", jobs[0]["name"]])
    check(w.returncode == 0 and "SUCCEEDED" in w.stdout, "jobs watch of a finished job")

    # Cancel a long job with `jobs cancel`; its client exits CANCELLED (1).
    long_fio = os.path.join(TMP, "long.fio")
    open(long_fio, "w").write(open(DEMO).read().replace("runtime=2", "runtime=3000"))
    client = subprocess.Popen([BLKLAB, "--server", addr, "fio", long_fio], env=ENV, cwd=TMP,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(client)
    running = wait_for(lambda: list_jobs(addr, "--state=RUNNING"), 20)
    check(len(running) == 1, "long job RUNNING")
    if running:
        name = running[0]["name"]
        # `jobs watch` of a running job, not on a terminal: a line of text per
        # interval; with --json the raw snapshots.
        def first_line(args):
            wp = subprocess.Popen([BLKLAB, "--server", addr] + args, env=ENV, cwd=TMP, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
            ready, _, _ = select.select([wp.stdout], [], [], 30)
            line = wp.stdout.readline().strip() if ready else ""
            wp.kill()  # SIGKILL: no Ctrl-C, so the job is not cancelled
            wp.wait()
            return line
        line = first_line(["jobs", "watch", name])
        check(line.startswith("t=") and " RUNNING " in line and "read: IOPS=" in line and "cpu: usr=" in line,
              "jobs watch prints a line of text per interval (%s)" % line[:160])
        line = first_line(["jobs", "watch", name, "--json"])
        try:
            state = json.loads(line).get("state")
        except ValueError:
            state = None
        check(state == "RUNNING", "jobs watch --json prints the snapshots as JSON (%s)" % line[:160])
        r = remote(addr, ["jobs", "cancel", name], timeout=30)
        check(r.returncode == 0, "jobs cancel exits 0 (%s)" % r.stderr.strip()[:200])
        try:
            out, err = client.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            client.kill()
            out, err = client.communicate()
        check(client.returncode == 1 and "CANCELLED" in err, "the job's client exits CANCELLED (%s: %s)"
              % (client.returncode, err.strip()[:200]))
        check("%s CANCELLED: cancelled by CancelJob" % name in err and "CANCELLED: CANCELLED" not in err,
              "the client says CANCELLED once (%s)" % err.strip()[:200])
        check(wait_for(lambda: [j for j in list_jobs(addr, "--state=CANCELLED") if j["name"] == name], 5),
              "jobs list shows it CANCELLED")
        # The cancelled job keeps the report of what ran until the cancel.
        g = remote(addr, ["jobs", "get", name, "--fio=normal"], timeout=30)
        check(g.returncode == 1 and "Run status group 0 (all jobs):" in g.stdout and "read: IOPS=" in g.stdout
              and "CANCELLED: cancelled by CancelJob" in g.stderr and "CANCELLED: CANCELLED" not in g.stderr,
              "jobs get --fio=normal of a cancelled job prints its partial report, exits CANCELLED (%d: %s / %s)"
              % (g.returncode, g.stdout[:200], g.stderr.strip()[:200]))
        g = remote(addr, ["jobs", "get", name, "--fio=json"], timeout=30)
        try:
            partial_ios = json.loads(g.stdout)["jobs"][0]["read"]["total_ios"]
        except (ValueError, KeyError, IndexError):
            partial_ios = 0
        check(g.returncode == 1 and partial_ios > 0,
              "jobs get --fio=json of a cancelled job: fio's JSON of what ran (%d: %s)"
              % (g.returncode, g.stdout[:200]))
        g = remote(addr, ["jobs", "get", name, "--fio=terse"], timeout=30)
        fields = g.stdout.split(";")
        check(g.returncode == 1 and len(fields) > 3 and fields[0] == "3" and fields[2] == "randread-qd32",
              "jobs get --fio=terse of a cancelled job: the terse line of what ran (%d: %s)"
              % (g.returncode, g.stdout[:200]))
        g = remote(addr, ["jobs", "get", name, "--json"], timeout=30)
        try:
            got = json.loads(g.stdout)
        except ValueError:
            got = {}
        check(got.get("state") == "CANCELLED" and got.get("error", {}).get("code") == 1
              and got.get("error", {}).get("message") == "cancelled by CancelJob"
              and "Run status group 0" in got.get("result", {}).get("fio_normal", ""),
              "the cancelled job is CANCELLED (code 1) with a result (%s)" % g.stdout[:200])

    # Ctrl-C in the client cancels its job; as fio and the in-process run,
    # the client says "fio: terminating on signal 2", prints the report of
    # what ran (the partial result the server kept) and exits 128.
    client = subprocess.Popen([BLKLAB, "--server", addr, "fio", long_fio], env=ENV, cwd=TMP,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(client)
    running = wait_for(lambda: list_jobs(addr, "--state=RUNNING"), 20)
    check(len(running) == 1, "second long job RUNNING")
    # Some virtual time run first, so that the partial report has figures.
    def virtual_s(j):
        try:
            return float(j.get("progress_virtual_time", "0s").rstrip("s"))
        except ValueError:
            return 0.0
    if running:
        wait_for(lambda: [j for j in list_jobs(addr, "--state=RUNNING") if virtual_s(j) >= 0.2], 20)
    client.send_signal(signal.SIGINT)
    try:
        out, err = client.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        client.kill()
        out, err = client.communicate()
    check(client.returncode == 128 and "cancelling" in err, "Ctrl-C: the client cancels and exits 128 (%s: %s)"
          % (client.returncode, err.strip()[:200]))
    check(out.startswith("\nfio: terminating on signal 2\n") and "Run status group 0 (all jobs):" in out
          and "read: IOPS=" in out and "randread-qd32: (groupid=0" in out,
          "Ctrl-C: fio's terminating line, then the partial report (%s)" % out[:300])
    check("CANCELLED:" not in err, "Ctrl-C: no CANCELLED error line (%s)" % err.strip()[:200])
    if running:
        name = running[0]["name"]
        check(wait_for(lambda: [j for j in list_jobs(addr, "--state=CANCELLED") if j["name"] == name],
                       5), "Ctrl-C: the job ends CANCELLED")
        g = remote(addr, ["jobs", "get", name, "--fio=normal"], timeout=30)
        check(g.returncode == 1 and g.stdout and out == "\nfio: terminating on signal 2\n" + g.stdout,
              "Ctrl-C: the report printed is the job's stored partial report (%d: %s)"
              % (g.returncode, g.stderr.strip()[:200]))

    # A bad option: INVALID_ARGUMENT, the option named.
    r = remote(addr, ["fio", "--name=t", "--frobnicate=3", "--runtime=1"])
    check(r.returncode == 3 and "frobnicate" in r.stderr and "INVALID_ARGUMENT" in r.stderr,
          "bad option exits 3 naming it (%d: %s)" % (r.returncode, r.stderr.strip()[:200]))
    open(os.path.join(TMP, "bad.fio"), "w").write("[j]\nrw=read\nfrobnicate=3\n")
    r = remote(addr, ["fio", "bad.fio"])
    check(r.returncode == 3 and "frobnicate" in r.stderr and "bad.fio" in r.stderr,
          "bad option in a job file exits 3 naming it and the file (%s)" % r.stderr.strip()[:200])
    # Log files: a relative name is written as by the local run; a path the
    # command line did not give (here from a job file) is refused, nothing
    # written.
    r = remote(addr, ["fio", "--name=l", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--runtime=200ms", "--time_based",
                      "--write_bw_log=lg", "--output-format=json"])
    check(r.returncode == 0 and os.path.exists(os.path.join(TMP, "lg_bw.1.log")),
          "remote log file written by its relative name (%s)" % r.stderr.strip()[:200])
    # A 1 s latency log (about 67 MB: beyond one gRPC message) comes in
    # chunks and matches the in-process run byte for byte, output included.
    big = ["fio", "--name=t", "--rw=randread", "--direct=1", "--runtime=1", "--time_based", "--write_lat_log=big"]
    for where in ("local", "remote"):
        os.makedirs(os.path.join(TMP, where))
    r_local = run(big, cwd=os.path.join(TMP, "local"))
    r_remote = remote(addr, big, cwd=os.path.join(TMP, "remote"))
    check(r_local.returncode == 0 and r_remote.returncode == 0 and r_local.stdout == r_remote.stdout,
          "a 1 s run with a latency log prints the same remotely (%d/%d: %s)"
          % (r_local.returncode, r_remote.returncode, r_remote.stderr.strip()[:300]))
    names = sorted(os.listdir(os.path.join(TMP, "local")))
    check(names == ["big_clat.1.log", "big_lat.1.log", "big_slat.1.log"], "local logs: %s" % names)
    total = sum(os.path.getsize(os.path.join(TMP, "local", n)) for n in names)
    check(total > 64 << 20, "the logs (%d bytes) are larger than the server's largest message" % total)
    for n in names:
        a = open(os.path.join(TMP, "local", n), "rb").read()
        b_path = os.path.join(TMP, "remote", n)
        check(os.path.exists(b_path) and open(b_path, "rb").read() == a, "remote %s is byte for byte local's" % n)
    # Call stacks: --folded and --flame remotely give the in-process files.
    st = ["fio", "--name=t", "--rw=randread", "--ioengine=io_uring", "--direct=1", "--runtime=50ms", "--time_based",
          "--folded=s.folded", "--flame=s.svg", "--output-format=json"]
    r_local = run(st, cwd=os.path.join(TMP, "local"))
    r_remote = remote(addr, st, cwd=os.path.join(TMP, "remote"))
    check(r_local.returncode == 0 and r_remote.returncode == 0 and r_local.stdout == r_remote.stdout,
          "--folded/--flame run remotely (%d/%d: %s)" % (r_local.returncode, r_remote.returncode,
                                                         r_remote.stderr.strip()[:300]))
    for n in ("s.folded", "s.svg"):
        a = open(os.path.join(TMP, "local", n), "rb").read()
        b_path = os.path.join(TMP, "remote", n)
        check(len(a) > 100 and os.path.exists(b_path) and open(b_path, "rb").read() == a,
              "remote %s is byte for byte local's" % n)
    shutil.rmtree(os.path.join(TMP, "local"))
    shutil.rmtree(os.path.join(TMP, "remote"))
    r = remote(addr, ["jobs", "list"])
    check(r.returncode == 0 and "big" in r.stdout, "jobs list still works with that job stored (%s)"
          % r.stderr.strip()[:200])
    # A job file's absolute log path: written there with the report, as the
    # in-process run writes it (the job file is this command line's).
    abs_dir = os.path.join(TMP, "elsewhere")
    os.makedirs(abs_dir)
    open(os.path.join(TMP, "abslog.fio"), "w").write(
        "[j]\nioengine=io_uring\ndirect=1\nrw=randread\nruntime=200ms\ntime_based=1\nwrite_bw_log=%s/x\n" % abs_dir)
    abs_log = os.path.join(abs_dir, "x_bw.1.log")
    r = remote(addr, ["fio", "abslog.fio", "--output-format=json"])
    remote_bytes = open(abs_log, "rb").read() if os.path.exists(abs_log) else None
    local_abs = run(["fio", "abslog.fio", "--output-format=json"])
    check(r.returncode == 0 and local_abs.returncode == 0 and r.stdout == local_abs.stdout and remote_bytes is not None
          and remote_bytes == open(abs_log, "rb").read() and os.listdir(abs_dir) == ["x_bw.1.log"],
          "a job file's absolute log path is written as in-process, with the report (%d: %s)"
          % (r.returncode, r.stderr.strip()[:200]))
    # Never through a symbolic link: the report, then the error.
    victim = os.path.join(TMP, "victim")
    open(victim, "w").write("precious\n")
    os.remove(abs_log)
    os.symlink(victim, abs_log)
    r = remote(addr, ["fio", "abslog.fio", "--output-format=json"])
    check(r.returncode == 3 and r.stdout == local_abs.stdout and "x_bw.1.log" in r.stderr and "symbolic link" in r.stderr
          and open(victim).read() == "precious\n",
          "a log file that is a symbolic link is not written through (%d: %s)" % (r.returncode, r.stderr.strip()[:200]))
    os.remove(abs_log)
    r = remote(addr, ["fio", "--name=l", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--runtime=200ms", "--time_based",
                      "--write_bw_log=%s/y" % abs_dir, "--output-format=json"])
    check(r.returncode == 0 and os.path.exists(os.path.join(abs_dir, "y_bw.1.log")),
          "a log prefix given on the command line is honoured (%s)" % r.stderr.strip()[:200])

    hostile_server_checks()

    r = run(["--server", "127.0.0.1:1", "jobs", "list"], timeout=60)
    check(r.returncode == 14 and "UNAVAILABLE" in r.stderr and "is blklabd running" in r.stderr,
          "no server: UNAVAILABLE (14) with a hint")
    # --tls_ca_file is read and checked before anything connects: garbage is
    # "not a PEM certificate", an unreadable file the OS's error; exit 2.
    garbage = os.path.join(TMP, "garbage-ca.pem")
    open(garbage, "w").write("this is not a certificate\n")
    for ca, needle in ((garbage, "--tls_ca_file %s: not a PEM certificate" % garbage),
                       (os.path.join(TMP, "missing-ca.pem"),
                        "--tls_ca_file %s: No such file or directory" % os.path.join(TMP, "missing-ca.pem")),
                       (TMP, "--tls_ca_file %s: Is a directory" % TMP)):
        r = run(["--server", "127.0.0.1:1", "--tls_ca_file=" + ca, "health"], timeout=60)
        check(r.returncode == 2 and needle in r.stderr and "UNAVAILABLE" not in r.stderr,
              "--tls_ca_file %s: exit 2 saying %r (%d: %s)" % (os.path.basename(ca), needle[-40:], r.returncode,
                                                                 r.stderr.strip()[-200:]))
    stop(server)

    # Auth.
    token_file = os.path.join(TMP, "token")
    open(token_file, "w").write("s3cret-token-0123456789\n")
    server, addr = start_server(os.path.join(TMP, "data-auth"), "--auth_token_file=" + token_file)
    r = remote(addr, ["fio", DEMO, "--output-format=json"], env=dict(ENV, BLKLAB_TOKEN="nope"))
    check(r.returncode == 16 and "UNAUTHENTICATED" in r.stderr, "wrong token exits UNAUTHENTICATED (16)")
    r = remote(addr, ["jobs", "list"])
    check(r.returncode == 16, "missing token exits UNAUTHENTICATED (16)")
    r = run(["--server=" + addr, "--token_file", token_file, "fio", DEMO, "--output-format=json"])
    check(r.returncode == 0 and r.stdout == local.stdout, "right token (--token_file) works")
    r = run(["fio", DEMO, "--output-format=json"], env=dict(ENV, BLKLAB_SERVER=addr, BLKLAB_TOKEN="s3cret-token-0123456789"))
    check(r.returncode == 0 and r.stdout == local.stdout, "BLKLAB_SERVER and BLKLAB_TOKEN")
    stop(server)

    # The demo script, non-interactive, on the built binaries.
    build_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(BLKLAB))))
    env = dict(ENV, DEMO_NONINTERACTIVE="1", DEMO_SKIP_BUILD="1", DEMO_LISTEN="127.0.0.1:0",
               DEMO_METRICS_LISTEN="127.0.0.1:0", DEMO_DATA_DIR=os.path.join(TMP, "demo-data"), BUILD_DIR=build_dir)
    r = subprocess.run([os.path.join(SRC, "scripts", "demo")], env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "randread-qd32" in r.stdout and "gRPC:" in r.stdout and "metrics: http://127.0.0.1:" in r.stdout
          and "SERVING" in r.stdout, "scripts/demo with DEMO_NONINTERACTIVE=1 (%d: %s)"
          % (r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    leftover = subprocess.run(["pgrep", "-f", os.path.join(TMP, "demo-data")], capture_output=True, text=True).stdout.strip()
    check(leftover == "", "the demo stopped its server")


H.run_main(main)
