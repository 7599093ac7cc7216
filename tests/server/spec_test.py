#!/usr/bin/python3
"""CreateJob from a structured JobSpec (ctest server.spec).

    spec_test.py BLKLABD SOURCE_DIR

The same workload submitted as typed fields and as fio command-line options
gives the same fio JSON (wall-clock fields masked); a spec with an unknown
option or no job is INVALID_ARGUMENT naming it, and the server keeps serving.
"""
import os
import re
import shutil
import sys
import tempfile
import time

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-spec.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, FINAL_STATES, job_pb2  # noqa: E402
import grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402

H = Harness(BLKLABD, TMP, dict(os.environ, SOURCE_DATE_EPOCH="1700000000", TZ="UTC"))


def wait_done(c, name, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = c.get_job(name, full=True)
        if j.state in FINAL_STATES:
            return j
        time.sleep(0.02)
    return c.get_job(name, full=True)


def mask(text):
    return re.sub(r'"(timestamp|timestamp_ms|time)" : [^,\n]*', r'"\1" : MASKED', text)


def main():
    try:
        _, addr = H.start(os.path.join(TMP, "d"), "--workers=2")
        c = Client(addr)
        spec = job_pb2.JobSpec()
        spec.global_options["size"] = "1g"
        spec.args.append("--output-format=json")
        j = spec.jobs.add(name="r", rw="randread", bs="4k", ioengine="io_uring", iodepth=16,
                          filename="/dev/nullb0", time_based=True)
        j.runtime.FromMilliseconds(200)
        j.options["norandommap"] = ""
        j.options["direct"] = "1"
        a = c.create_job_from_spec(spec)
        b = c.create_job_from_files({}, ["--output-format=json", "--size=1g", "--name=r", "--rw=randread",
                                         "--bs=4k", "--ioengine=io_uring", "--iodepth=16",
                                         "--filename=/dev/nullb0", "--runtime=200000us", "--time_based=1",
                                         "--direct=1", "--norandommap"])
        ja, jb = wait_done(c, a.name), wait_done(c, b.name)
        H.check(ja.state == job_pb2.Job.SUCCEEDED, "the structured job succeeds (%s)" % ja.error.message)
        H.check(jb.state == job_pb2.Job.SUCCEEDED, "the same job as options succeeds")
        H.check(mask(ja.result.fio_json) == mask(jb.result.fio_json),
                "structured and option forms give the same fio JSON")
        H.check(ja.result.fio_json.count('"jobname" : "r"') == 1, "the result names the job")

        bad = job_pb2.JobSpec()
        bad.jobs.add(name="x").options["bogus_option"] = "1"
        for what, s, needle in (("unknown option", bad, "bogus_option"),
                                ("no job", job_pb2.JobSpec(), "spec.jobs")):
            try:
                c.create_job_from_spec(s)
                H.check(False, what + " is refused")
            except grpc.RpcError as e:
                H.check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and needle in e.details(),
                        "%s: %s %s" % (what, e.code(), e.details()))
        H.check(len(list(c.list_jobs().jobs)) >= 2, "the server keeps serving")
    finally:
        for p in H.procs:
            H.stop(p)
        shutil.rmtree(TMP, ignore_errors=True)
    print("%d failed" % len(H.failures))
    return 1 if H.failures else 0


if __name__ == "__main__":
    sys.exit(main())
