#!/usr/bin/python3
"""WatchJob interval snapshots and fio log files over the API (ctest server.snapshot).

    snapshot_test.py BLKLABD SOURCE_DIR

Starts a blklabd on a free 127.0.0.1 port with a temporary data directory and
checks, each wait bounded in time:
  - a watched job streams one snapshot per status interval (1 s of virtual
    time by default, fio's --status-interval when the bundle gives one), each
    with non-zero IOPS, completion-latency percentiles (50 .. 99.99, ascending)
    and CPU shares adding up to 100 %;
  - the interval IOs of the stream add up to the result's total IOs and the
    intervals tile the run's virtual time;
  - the result carries fio's log files (write_bw_log / write_lat_log) by name.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-snap.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2  # noqa: E402
import grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402

JOB = """[global]
ioengine=io_uring
direct=1
direct=1
rw=randrw
bs=4k
iodepth=32
runtime=3
time_based=1

[mixed]
filename=/dev/nullb0
"""
H = Harness(BLKLABD, TMP)
failures = H.failures
check = H.check


def start_server(data_dir, *extra):
    return H.start(data_dir, "--workers=2", *extra)


def refused(call, code, text, what):
    """Checks that call() fails with `code` and a message containing `text`."""
    try:
        call()
    except grpc.RpcError as e:
        check(e.code() == code and text in e.details(), "%s (%s)" % (what, e.details()))
        return
    check(False, what + " (it succeeded)")


def stop_server(server):
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(5)


def seconds(d):
    return d.seconds + d.nanos * 1e-9


def check_stream(c, name, args, interval_s):
    snaps = list(c.watch(name, timeout=120))
    final = snaps[-1].final_job if snaps and snaps[-1].HasField("final_job") else None
    check(final is not None and final.state == job_pb2.Job.SUCCEEDED,
          "%s: the stream ends with SUCCEEDED" % args)
    running = [s for s in snaps if not s.HasField("final_job")]
    check(len(running) >= 2, "%s: %d interval snapshots" % (args, len(running)))
    total_ios, covered = 0, 0.0
    for s in running:
        iv = seconds(s.interval)
        covered += iv
        total_ios += s.read.ios + s.write.ios + s.trim.ios
        steps = iv / interval_s
        check(iv > 0 and (abs(steps - round(steps)) < 1e-6 or s is running[-1]),
              "%s: interval %.3f s is a multiple of %.3f s (or the last)" % (args, iv, interval_s))
    for i, s in enumerate(running[:-1]):  # the last may be a short tail
        what = "%s: snapshot %d" % (args, s.sequence)
        check(s.state == job_pb2.Job.RUNNING, what + " RUNNING")
        check(s.read.iops > 0 and s.write.iops > 0 and s.read.bw_bytes_per_sec > 0,
              what + " IOPS %.0f / %.0f" % (s.read.iops, s.write.iops))
        pcts = [p.percentile for p in s.read.clat_percentiles]
        values = [p.value_ns for p in s.read.clat_percentiles]
        check(pcts == [50, 90, 99, 99.9, 99.99] and values[0] > 0 and values == sorted(values),
              what + " clat percentiles %s" % values)
        check(len(s.write.clat_percentiles) == 5, what + " write clat percentiles")
        cpu = s.cpu
        shares = [cpu.usr_pct, cpu.sys_pct, cpu.irq_pct, cpu.softirq_pct, cpu.idle_pct]
        check(abs(sum(shares) - 100.0) < 1e-6 and cpu.usr_pct > 0 and cpu.sys_pct > 0,
              what + " CPU shares %s" % ["%.2f" % x for x in shares])
        check(0 <= s.contention_pct <= 100, what + " contention %.3f %%" % s.contention_pct)
        waits = [l.wait_ns for l in s.top_locks]
        check(len(s.top_locks) <= 10 and waits == sorted(waits, reverse=True), what + " top locks sorted")
        check(s.progress_fraction > 0 and seconds(s.virtual_time) > 0, what + " progress")
    if final is not None:
        result_ios = sum(j.read.total_ios + j.write.total_ios + j.trim.total_ios for j in final.result.jobs)
        check(total_ios == result_ios, "%s: interval IOs add up to the result (%d vs %d)"
              % (args, total_ios, result_ios))
        end = seconds(final.result.virtual_time)
        check(end <= covered < end + 0.1 + 1e-9, "%s: intervals cover the run (%.3f s, run %.3f s)"
              % (args, covered, end))
    return final


def main():
    server, addr = start_server(os.path.join(TMP, "data"))
    try:
        c = Client(addr)
        # Default status interval (1 s of virtual time).
        j = c.create_job_from_files({"mixed.fio": JOB}, ["mixed.fio"], preset="default")
        check_stream(c, j.name, "default interval", 1.0)
        # fio's --status-interval, with log files.
        args = ["--status-interval=250ms", "--write_bw_log=mx", "--write_lat_log=mx", "--log_avg_msec=100",
                "mixed.fio"]
        j = c.create_job_from_files({"mixed.fio": JOB}, args, preset="default")
        final = check_stream(c, j.name, "--status-interval=250ms", 0.25)
        if final is not None:
            names = [l.name for l in final.result.logs]
            check("mx_bw.1.log" in names and "mx_clat.1.log" in names, "result logs by name: %s" % names)
            # Jobs carry log names and sizes; the contents come in chunks.
            check(all(not l.content and l.size_bytes > 0 for l in final.result.logs),
                  "the final snapshot lists logs without contents: %s"
                  % [(l.name, len(l.content), l.size_bytes) for l in final.result.logs])
            arts = c.read_artifacts(j.name)
            check(sorted(arts) == sorted("logs/" + n for n in names), "every log streamed: %s" % sorted(arts))
            for l in final.result.logs:
                check(len(arts.get("logs/" + l.name, b"")) == l.size_bytes, "%s: %d bytes streamed of %d"
                      % (l.name, len(arts.get("logs/" + l.name, b"")), l.size_bytes))
            bw = arts.get("logs/mx_bw.1.log", b"")
            check(bw.count(b"\n") >= 20, "bw log has a line per 100 ms per direction")
            small = c.read_artifacts(j.name, ["logs/mx_bw.1.log", "fio_json"], chunk_bytes=100)
            check(small.get("logs/mx_bw.1.log") == bw, "100-byte chunks reassemble the same log")
            check(small.get("fio_json", b"").startswith(b"{"), "fio_json is an artifact too")
            refused(lambda: c.read_artifacts(j.name, ["logs/nope.log"]), grpc.StatusCode.NOT_FOUND, "mx_bw.1.log",
                    "an unknown artifact is NOT_FOUND, listing what exists")
            again = c.get_job(j.name)
            check([l.name for l in again.result.logs] == names, "logs are stored with the result")
            check(all(not l.content for l in again.result.logs), "GetJob carries no log contents")
            basic = c.get_job(j.name, full=False)
            check(len(basic.result.logs) == 0, "BASIC view omits the logs")
    finally:
        stop_server(server)
    # Result size limits: logs above --max_log_bytes are dropped (the job
    # FAILED with its figures), a result above --max_result_bytes is not kept.
    server, addr = start_server(os.path.join(TMP, "data2"), "--max_log_bytes=20000", "--max_result_bytes=100000",
                                "--max_streams=1")
    try:
        c = Client(addr)
        logged = c.wait(c.create_job_from_files(
            {"mixed.fio": JOB.replace("runtime=3", "runtime=50ms")}, ["--write_lat_log=big", "mixed.fio"],
            preset="default").name)
        check(logged.state == job_pb2.Job.FAILED and "max_log_bytes = 20000" in logged.error.message
              and logged.result.total_ios > 0 and len(logged.result.logs) == 0,
              "logs above --max_log_bytes: FAILED, figures kept, logs dropped (%s: %s)"
              % (job_pb2.Job.State.Name(logged.state), logged.error.message[:200]))
        many = c.wait(c.create_job_from_files(
            {"mixed.fio": JOB.replace("runtime=3", "runtime=20ms")}, ["--numjobs=8", "--output-format=json+",
                                                                     "mixed.fio"], preset="default").name)
        check(many.state == job_pb2.Job.FAILED and "max_result_bytes = 100000" in many.error.message
              and not many.HasField("result"),
              "a result above --max_result_bytes: FAILED without a result (%s: %s)"
              % (job_pb2.Job.State.Name(many.state), many.error.message[:200]))
        # An artifact stream holds a result in memory: it counts against
        # --max_streams like a WatchJob stream (here one, held by a watch).
        long_job = c.create_job_from_files({"mixed.fio": JOB.replace("runtime=3", "runtime=30")}, ["mixed.fio"],
                                           preset="default", pace=job_pb2.Job.REALTIME)
        # A stream gives its slot back as it writes its last message, so the
        # waits above left the one slot free: this watch gets it at once.
        watch = c.watch(long_job.name)
        next(watch)  # the stream is open: the job runs and sends snapshots
        refused(lambda: c.read_artifacts(logged.name, ["fio_json"]), grpc.StatusCode.RESOURCE_EXHAUSTED,
                "max_streams = 1", "an artifact stream beyond --max_streams is RESOURCE_EXHAUSTED")
        c.cancel_job(long_job.name)
        watch.cancel()
    finally:
        stop_server(server)
    if failures:
        print("%d failure(s); blklabd log: %s" % (len(failures), os.path.join(TMP, "blklabd.log")))
        sys.exit(1)
    shutil.rmtree(TMP, ignore_errors=True)
    print("all snapshot checks passed")


if __name__ == "__main__":
    main()
