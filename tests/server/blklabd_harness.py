"""Shared pieces of the blklabd end-to-end tests: start a real blklabd on a
free 127.0.0.1 port and wait for it (bounded), stop it, and count checks.

Every test script imports this module from its own directory.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback


# Two CPUs meeting on mq-deadline's dd->lock (6.8's, before RC4's fixes: every
# submitter merges, inserts and dispatches under it), paced by null_blk's bandwidth
# cap: jobs on it show lock contention at a rate a REALTIME-paced job can
# keep up with (the metrics tests and benchmark use it).
CONTENDED_HOST = """name: contended
cpus: {count: 2}
knobs: {dd_serialize_dispatch: false, dd_insert_side_lists: false, dd_skip_merge_if_contended: false}
devices:
  - name: nullb0
    null_blk: {poll_queues: 0, submit_queues: 1, irqmode: 1, hw_queue_depth: 4, mbps: 400}
    queue: {scheduler: mq-deadline}
"""


def code_of(fn):
    """Calls fn(); (grpc status code, details) of what it raised, or (OK, "")."""
    import grpc
    try:
        fn()
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


class Harness:
    """Starts blklabd processes (remembered for cleanup) and records checks."""

    def __init__(self, blklabd, tmp, env=None):
        self.blklabd = blklabd
        self.tmp = tmp
        self.env = env
        self.procs = []
        self.failures = []

    def check(self, cond, what):
        print(("ok: " if cond else "FAIL: ") + what, flush=True)
        if not cond:
            self.failures.append(what)

    def start(self, data_dir, *extra, listen="127.0.0.1:0"):
        """Starts blklabd; returns (process, "127.0.0.1:PORT") once it listens.

        The exposition listens on a free port (unless `extra` names
        --metrics_listen); its address is process.metrics_addr (None when off).
        """
        log = open(os.path.join(self.tmp, "blklabd-%d.log" % len(self.procs)), "w+")
        extra = list(extra)
        if not any(a.startswith("--metrics_listen") for a in extra):
            extra.append("--metrics_listen=127.0.0.1:0")  # never the shared default port
        p = subprocess.Popen([self.blklabd, "--listen=" + listen, "--data_dir=" + data_dir] + extra,
                             stderr=log, stdout=subprocess.DEVNULL, env=self.env)
        self.procs.append(p)
        deadline = time.time() + 20
        while time.time() < deadline:
            log.seek(0)
            text = log.read()
            m = re.search(r"event=listening .* port=(\d+)", text)
            if m:
                mm = re.search(r"event=listening .* metrics_port=(\d+)", text)
                p.metrics_addr = "127.0.0.1:" + mm.group(1) if mm else None
                return p, "127.0.0.1:" + m.group(1)
            if p.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("blklabd did not start: " + open(log.name).read())

    @staticmethod
    def stop(p, sig=signal.SIGTERM):
        """Stops a blklabd (SIGTERM, then SIGKILL after 15 s); returns its exit code."""
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return p.returncode

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)

    def run_main(self, main):
        """Runs main(), counts an exception as a failure, kills what is left,
        prints the server logs when something failed, removes the temporary
        directory, and exits 0 or 1."""
        try:
            main()
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            self.failures.append("exception: %r" % e)
        finally:
            self.stop_all()
            if self.failures:
                for name in sorted(os.listdir(self.tmp)):
                    if name.endswith(".log"):
                        print("---", name, "\n" + open(os.path.join(self.tmp, name)).read()[-3000:],
                              file=sys.stderr)
            shutil.rmtree(self.tmp, ignore_errors=True)
        print("%d failure(s)" % len(self.failures))
        sys.exit(1 if self.failures else 0)
