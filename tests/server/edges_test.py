#!/usr/bin/python3
"""blklabd's edges against hostile or careless input (ctest server.edges).

    edges_test.py BLKLABD SOURCE_DIR

Each case is one row of the hostile-input round, bounded in time:
  - listen addresses: a port above 65,535 is refused naming the flag (it used
    to wrap: 99999 listened on 34463);
  - tokens: one under 16 bytes is refused; a token served off loopback
    without TLS starts with a loud warning; the Bearer scheme is
    case-insensitive (RFC 7235);
  - TLS: a garbage certificate or key names the file and what is wrong; a key
    that is not the certificate's says so rather than "port taken";
  - SIGHUP stops the server cleanly (exit 0), as SIGTERM does;
  - /metrics answers within 1 s with two idle connections held open, which
    the server closes after its read timeout;
  - ListJobs: AIP-160 filters (lower-case `and`, an unterminated string,
    single quotes, OR, trailing junk are errors, never a silent empty page),
    a negative page_size, and a page token shown with another filter are
    INVALID_ARGUMENT with a message;
  - CreateComparison: a variant or matrix value no cell could run with (an
    unknown fio option, fio.iodepth=abc, a device or scheduler the host
    lacks) is INVALID_ARGUMENT naming the variant or axis and the field, not
    a comparison created to fail cell by cell.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-edges.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import Client, job_pb2, service_pb2  # noqa: E402
import grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness, code_of  # noqa: E402

H = Harness(BLKLABD, TMP)
check = H.check
IA = grpc.StatusCode.INVALID_ARGUMENT


def refused(*flags):
    """Runs blklabd with `flags`; (exit code, stderr) once it exits (it must)."""
    r = subprocess.run([BLKLABD, "--data_dir=" + os.path.join(TMP, "refused"), "--metrics_listen="] + list(flags),
                       capture_output=True, text=True, timeout=30)
    return r.returncode, r.stderr


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def listen_and_tokens():
    rc, err = refused("--listen=127.0.0.1:99999")
    check(rc == 2 and "--listen=127.0.0.1:99999: expected HOST:PORT with a port from 0 to 65535" in err,
          "a port above 65535 is refused (%d: %s)" % (rc, err.strip()[-160:]))
    rc, err = refused("--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:70000")
    check(rc == 2 and "metrics_listen" in err, "a metrics port above 65535 is refused")
    rc, err = refused("--listen=127.0.0.1:0", "--auth_token_file=" + write("short", "abc\n"))
    check(rc == 2 and "the token is 3 bytes; at least 16" in err, "a 3-byte token is refused (%s)" % err.strip()[-160:])

    token = "0123456789abcdef0123"
    tok = write("token", token + "\n")
    p, addr = H.start(os.path.join(TMP, "clear"), "--auth_token_file=" + tok, listen="0.0.0.0:0")
    addr = addr.replace("0.0.0.0", "127.0.0.1")
    log = open(os.path.join(TMP, "blklabd-%d.log" % (len(H.procs) - 1))).read()
    check("event=token_in_clear" in log and "WARNING" in log, "a token served off loopback without TLS warns")
    for scheme in ("bearer", "BEARER", "Bearer"):
        c = Client(addr)
        c.metadata = [("authorization", scheme + " " + token)]
        check(code_of(lambda: c.list_jobs())[0] == grpc.StatusCode.OK, "the scheme %r is accepted" % scheme)
        c.close()
    c = Client(addr)
    c.metadata = [("authorization", "Basic " + token)]
    check(code_of(lambda: c.list_jobs())[0] == grpc.StatusCode.UNAUTHENTICATED, "another scheme is refused")
    c.close()
    p.send_signal(signal.SIGHUP)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
    log = open(os.path.join(TMP, "blklabd-%d.log" % (len(H.procs) - 1))).read()
    check(rc == 0 and "signal=SIGHUP" in log and "event=stopped" in log, "SIGHUP stops cleanly (exit %s)" % rc)


def tls_files():
    cert = write("garbage-cert.pem", "this is not a certificate\n")
    key = write("garbage-key.pem", "nor a key\n")
    rc, err = refused("--listen=127.0.0.1:0", "--tls_cert_file=" + cert, "--tls_key_file=" + key)
    check(rc == 2 and "flag=tls_cert_file" in err and "garbage-cert.pem" in err and "not a PEM CERTIFICATE" in err,
          "a garbage certificate names the file (%s)" % err.strip()[-200:])
    rc, err = refused("--listen=127.0.0.1:0", "--tls_cert_file=" + os.path.join(TMP, "missing.pem"),
                      "--tls_key_file=" + key)
    check(rc == 2 and "missing.pem" in err, "a missing certificate file is named")
    if subprocess.run(["which", "openssl"], capture_output=True).returncode != 0:
        check(False, "openssl is installed (scripts/setup installs it)")
        return
    c1, k1, k2 = (os.path.join(TMP, n) for n in ("c1.pem", "k1.pem", "k2.pem"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x",
                    "-keyout", k1, "-out", c1], check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "genrsa", "-out", k2, "2048"], check=True, capture_output=True, timeout=60)
    rc, err = refused("--listen=127.0.0.1:0", "--tls_cert_file=" + c1, "--tls_key_file=" + k2)
    check(rc != 0 and "a key that is not the certificate's" in err,
          "a key that is not the certificate's is said so (%s)" % err.strip()[-200:])


def listing():
    p, addr = H.start(os.path.join(TMP, "list"))
    c = Client(addr)
    for i in range(3):
        c.create_job_from_files({}, ["--name=j%d" % i, "--rw=randread", "--runtime=5ms", "--time_based"],
                                preset="default")
    bad = [
        ('host = "hosts/a" and state = SUCCEEDED', "AND is a keyword in upper case"),
        ('host = "hosts/a', "unterminated string"),
        ("host = 'hosts/a'", "double-quoted"),
        ("state = QUEUED OR state = RUNNING", "OR is not supported"),
        ("state = QUEUED junk", "expected AND or the end of the filter"),
    ]
    for f, needle in bad:
        code, msg = code_of(lambda: c.list_jobs(filter=f))
        check(code == IA and needle in msg, "filter %r -> INVALID_ARGUMENT (%s: %s)" % (f, code, msg[:100]))
    code, msg = code_of(lambda: c.list_jobs(page_size=-5))
    check(code == IA and "page_size: -5 is negative" in msg, "page_size=-5 -> INVALID_ARGUMENT (%s)" % msg)
    code, msg = code_of(lambda: c.list_comparisons(page_size=-1))
    check(code == IA and "negative" in msg, "ListComparisons page_size=-1 -> INVALID_ARGUMENT")
    first = c.list_jobs(page_size=1)
    check(first.next_page_token != "", "a first page of one job has a next page")
    nxt = c.list_jobs(page_size=1, page_token=first.next_page_token)
    check(len(nxt.jobs) == 1 and nxt.jobs[0].name != first.jobs[0].name, "the token gives the next page")
    code, msg = code_of(lambda: c.list_jobs(filter="state = SUCCEEDED", page_size=1,
                                             page_token=first.next_page_token))
    check(code == IA and "issued for another filter" in msg, "a token with another filter is refused (%s)" % msg)
    c.close()
    check(H.stop(p) == 0, "the listing server stops cleanly")


def idle_metrics_connections():
    """Two TCP connections held open on the metrics port, idle, and a
    scrape still answers within 1 s (it used to wait about 30 s)."""
    import socket
    import urllib.request
    p, _ = H.start(os.path.join(TMP, "metrics"))
    host, port = p.metrics_addr.split(":")
    idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(2)]
    try:
        time.sleep(0.2)
        t0 = time.time()
        try:
            body = urllib.request.urlopen("http://%s/metrics" % p.metrics_addr, timeout=1).read().decode()
        except Exception as e:  # noqa: BLE001
            body = "error: %r" % e
        took = time.time() - t0
        check("blklab_" in body and took < 1.0,
              "/metrics answers in %.2f s with two idle connections held open (%s)" % (took, body[:80]))
        # The idle connections are closed by the server's read timeout.
        time.sleep(3)
        closed = 0
        for s in idle:
            s.settimeout(2)
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
        check(closed == 2, "the idle connections are closed by the server (%d of 2)" % closed)
    finally:
        for s in idle:
            s.close()
    check(H.stop(p) == 0, "the metrics server stops cleanly")


def comparisons():
    p, addr = H.start(os.path.join(TMP, "compare"), "--compare_workers=1")
    c = Client(addr)
    host = ["--host=nvme-8cpu"]
    job = ["--", "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--runtime=5ms",
           "--time_based=1"]
    bad = [
        (["--variant", "before:", "--variant", "x:fio.bogus_option=1"], ["variant x", "bogus_option"]),
        (["--variant", "before:", "--variant", "deep:devices.nvme0n1.queue.scheduler=none,fio.iodepth=abc"],
         ["variant deep", "iodepth"]),
        (["--matrix", "fio.iodepth=1,abc"], ["--matrix fio.iodepth=abc", "iodepth"]),
        (["--matrix", "devices.nvme9.queue.scheduler=none,kyber"],
         ["--matrix devices.nvme9.queue.scheduler=none", "nvme9"]),
        (["--matrix", "devices.nvme0n1.queue.scheduler=none,bogus"],
         ["--matrix devices.nvme0n1.queue.scheduler=bogus", "scheduler"]),
    ]
    for extra, needles in bad:
        code, msg = code_of(lambda: c.create_comparison(host + extra + job))
        check(code == IA and all(n in msg for n in needles),
              "CreateComparison %s -> INVALID_ARGUMENT naming %s (%s: %s)" % (" ".join(extra), needles, code, msg[:200]))
    # The same through a spec file bundle.
    spec = ("host: nvme-8cpu\nfio: \"" + " ".join(job[1:]) + "\"\nmatrix:\n  fio.iodepth: [1, lots]\n")
    code, msg = code_of(lambda: c.create_comparison(["cmp.yaml"], files={"cmp.yaml": spec}))
    check(code == IA and "fio.iodepth=lots" in msg, "a spec file's bad matrix value is refused (%s: %s)" % (code, msg[:200]))
    check(len(c.list_comparisons().comparisons) == 0, "none of the refused comparisons was created")
    # Valid settings of the same kinds are accepted and run.
    made = c.create_comparison(host + ["--variant", "before:", "--variant", "deep:fio.iodepth=8",
                                       "--matrix", "devices.nvme0n1.queue.scheduler=none,kyber"] + job)
    last = c.wait_comparison(made.name, timeout=120)
    check(made.cell_count == 4 and last is not None and last.state == service_pb2.Comparison.SUCCEEDED,
          "valid variant and matrix settings run (%s)" % (last.error if last else None))
    c.close()
    check(H.stop(p) == 0, "the comparison server stops cleanly")


def main():
    idle_metrics_connections()
    listen_and_tokens()
    tls_files()
    listing()
    comparisons()


if __name__ == "__main__":
    H.run_main(main)
