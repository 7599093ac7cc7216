#!/usr/bin/python3
"""blklabd under faults: kill -9 at random moments of a mixed load.

A seeded sequence of 24 jobs of different lengths and workloads is created
(each with a request id, retried after a failed call as a client would) on a
blklabd that is killed with SIGKILL four times at random moments - during
creations and while jobs run - and restarted on the same data directory.
Afterwards every acknowledged job must be there once, finished SUCCEEDED,
with fio's output byte for byte what an undisturbed server gives for the same
job (runs are deterministic and the report time is fixed).

Then the store's damage matrix, end to end: a truncated database file and a
corrupt row (the row is quarantined, the server starts) - and what blklabd
says about each; and a kill -9 whose -wal file is then lost (the restart
warns, event=store_wal_lost; a restart after a clean stop does not).

    fault_test.py BLKLABD SOURCE_DIR
"""
import os
import random
import sqlite3
import sys
import tempfile
import time

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-fault.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2  # noqa: E402
import grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402

H = Harness(BLKLABD, TMP)
check = H.check
REPORT_TIME = 1700000000
RW = ["randread", "randwrite", "read", "randrw"]


def job_args(i):
    """The i-th job: 10..150 ms of virtual time, a mix of patterns and depths."""
    rng = random.Random(i)
    return ["--name=j%d" % i, "--ioengine=io_uring", "--direct=1", "--rw=" + RW[i % len(RW)], "--bs=4k",
            "--iodepth=%d" % rng.choice([1, 8, 32]), "--numjobs=%d" % rng.choice([1, 2]),
            "--runtime=%dms" % rng.randint(10, 150), "--time_based", "--output-format=json"]


def create(c, i):
    return c.create_job_from_files({}, job_args(i), preset="default", job_id="j%d" % i,
                                   request_id="fault-%d" % i, report_time_s=REPORT_TIME)


def wait_all(c, n, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        jobs = {}
        token = ""
        while True:
            page = c.list_jobs(page_size=1000, page_token=token)
            for j in page.jobs:
                jobs[j.name] = j
            token = page.next_page_token
            if not token:
                break
        final = [j for j in jobs.values() if j.state in (job_pb2.Job.SUCCEEDED, job_pb2.Job.FAILED,
                                                          job_pb2.Job.CANCELLED)]
        if len(final) == len(jobs) and len(jobs) >= n:
            return jobs
        time.sleep(0.2)
    raise RuntimeError("jobs did not finish in %d s" % timeout)


def kill_rounds():
    n = 24
    # The undisturbed reference.
    ref_server, ref_addr = H.start(os.path.join(TMP, "ref"), "--workers=2")
    ref = Client(ref_addr)
    for i in range(n):
        create(ref, i)
    wait_all(ref, n)
    expected = {"jobs/j%d" % i: ref.get_job("jobs/j%d" % i).result.fio_json for i in range(n)}
    H.stop(ref_server)

    data = os.path.join(TMP, "disturbed")
    rng = random.Random(2026)
    kill_after = sorted(rng.sample(range(1, n), 4))  # creations after which a kill comes
    server, addr = H.start(data, "--workers=2")
    c = Client(addr)
    acked = set()
    kills = 0
    i = 0
    while i < n:
        try:
            create(c, i)
            acked.add("jobs/j%d" % i)
            i += 1
        except grpc.RpcError:
            # The server went away mid-call: retry the same request id on the
            # restarted server (an acknowledged creation is never made twice).
            pass
        if kills < len(kill_after) and i == kill_after[kills]:
            time.sleep(rng.uniform(0, 0.4))  # somewhere in the creations or the runs
            if kills == len(kill_after) - 1:
                # The last kill waits for a running job, so that one surely
                # lands mid-run whatever the machine's speed.
                deadline = time.time() + 10
                while time.time() < deadline:
                    try:
                        if any(j.state == job_pb2.Job.RUNNING for j in c.list_jobs(page_size=1000).jobs):
                            break
                    except grpc.RpcError:
                        break
                    time.sleep(0.005)
            server.kill()
            server.wait(5)
            kills += 1
            server, addr = H.start(data, "--workers=2")
            c = Client(addr)
    jobs = wait_all(c, n)
    check(kills == 4, "blklabd was killed with SIGKILL %d times at random moments" % kills)
    # The kills caught jobs in flight: restarts requeued RUNNING jobs.
    logs = "".join(open(os.path.join(TMP, f)).read() for f in os.listdir(TMP) if f.startswith("blklabd-"))
    requeued = logs.count("event=job_requeued")
    check("was=RUNNING" in logs, "some kill interrupted a running job (%d requeued at restarts)" % requeued)
    check("event=store_wal_lost" not in logs, "restarts after a kill that kept the -wal report no loss")
    check(set(jobs) == set(expected), "every job is there once after the kills (%d of %d; extra %s)"
          % (len(set(jobs) & set(expected)), n, sorted(set(jobs) - set(expected))[:3]))
    bad = [name for name in sorted(acked) if name not in jobs or jobs[name].state != job_pb2.Job.SUCCEEDED]
    check(not bad, "every acknowledged job finished SUCCEEDED (not: %s)" % bad[:5])
    differ = [name for name in sorted(acked) if name in jobs and c.get_job(name).result.fio_json != expected[name]]
    check(not differ, "each result is byte for byte the undisturbed server's (differ: %s)" % differ[:5])
    H.stop(server)
    return data


def damage_matrix(data):
    db = os.path.join(data, "blklab.db")
    # A corrupt row: quarantined, the server starts and lists the rest.
    damaged = os.path.join(TMP, "row")
    os.makedirs(damaged)
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    with open(db, "rb") as f, open(os.path.join(damaged, "blklab.db"), "wb") as g:
        g.write(f.read())
    con = sqlite3.connect(os.path.join(damaged, "blklab.db"))
    con.execute("UPDATE jobs SET job = x'ffffffff01' WHERE id = 'j3'")
    con.commit()
    con.close()
    server, addr = H.start(damaged, "--workers=1")
    c = Client(addr)
    j3 = c.get_job("jobs/j3")
    check(j3.state == job_pb2.Job.FAILED and j3.error.code == grpc.StatusCode.DATA_LOSS.value[0]
          and "jobs/j3" in j3.error.message,
          "a corrupt row: the server starts, the job reads FAILED with DATA_LOSS naming it (%s)" % j3.error.message)
    listed = c.list_jobs(page_size=100).jobs
    check(len(listed) == 24, "a corrupt row: the listing still has every job (%d)" % len(listed))
    H.stop(server)
    # A truncated database file: refused at start, the file named.
    cut = os.path.join(TMP, "cut")
    os.makedirs(cut)
    raw = open(db, "rb").read()
    with open(os.path.join(cut, "blklab.db"), "wb") as g:
        g.write(raw[: len(raw) // 2])
    try:
        H.start(cut, "--workers=1")
        check(False, "a truncated store is refused")
    except RuntimeError as e:
        check("blklab.db" in str(e), "a truncated store is refused, the file named: %s" % str(e)[-300:])


def lost_wal():
    """A kill -9 whose -wal is lost: the restart says so; a clean stop does not."""
    data = os.path.join(TMP, "lostwal")
    server, addr = H.start(data, "--workers=1")
    c = Client(addr)
    create(c, 0)
    H.stop(server)  # SIGTERM: a clean close
    server, addr = H.start(data, "--workers=1")
    log_name = os.path.join(TMP, "blklabd-%d.log" % (len(H.procs) - 1))
    check("store_wal_lost" not in open(log_name).read(), "a restart after a clean stop reports no loss")
    c = Client(addr)
    create(c, 1)
    time.sleep(0.5)  # past the checkpoint interval: both creations are in the database file
    server.kill()
    server.wait(5)
    os.remove(os.path.join(data, "blklab.db-wal"))
    server, addr = H.start(data, "--workers=1")
    log_name = os.path.join(TMP, "blklabd-%d.log" % (len(H.procs) - 1))
    log = open(log_name).read()
    check("event=store_wal_lost" in log and "-wal file is missing" in log,
          "a restart after kill -9 and a lost -wal says so: %s" % [l for l in log.splitlines() if "wal" in l][:1])
    c = Client(addr)
    names = sorted(j.name for j in c.list_jobs(page_size=10).jobs)
    check(names == ["jobs/j0", "jobs/j1"], "the checkpointed creations survived the lost -wal (%s)" % names)
    H.stop(server)


def main():
    data = kill_rounds()
    damage_matrix(data)
    lost_wal()


H.run_main(main)
