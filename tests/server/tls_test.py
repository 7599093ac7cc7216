#!/usr/bin/python3
"""TLS and non-loopback listening of blklabd (ctest server.tls).

    tls_test.py BLKLABD SOURCE_DIR

Makes a throw-away self-signed certificate with openssl, starts blklabd with
--tls_cert_file/--tls_key_file on 127.0.0.1, and checks that a TLS client
trusting that certificate gets health SERVING and can list presets, while a
plaintext client cannot talk to the TLS port. Every wait is bounded.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-tls.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import (health_pb2, health_pb2_grpc, service_pb2,  # noqa: E402
                           service_pb2_grpc)
import grpc  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def main():
    if shutil.which("openssl") is None:
        print("skip: openssl not installed")
        return 0
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    log = open(os.path.join(TMP, "blklabd.log"), "w+")
    p = subprocess.Popen([BLKLABD, "--listen=127.0.0.1:0", "--data_dir=" + os.path.join(TMP, "d"),
                          "--tls_cert_file=" + cert, "--tls_key_file=" + key],
                         stderr=log, stdout=subprocess.DEVNULL)
    try:
        addr = None
        deadline = time.time() + 20
        while time.time() < deadline and addr is None:
            log.seek(0)
            m = re.search(r"event=listening .*port=(\d+)", log.read())
            if m:
                addr = "127.0.0.1:" + m.group(1)
            elif p.poll() is not None:
                break
            else:
                time.sleep(0.05)
        check(addr is not None, "blklabd with TLS starts")
        if addr is None:
            print(open(log.name).read())
            return 1
        creds = grpc.ssl_channel_credentials(root_certificates=open(cert, "rb").read())
        with grpc.secure_channel(addr, creds) as ch:
            resp = health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service="blklab.v1.JobService"), timeout=10)
            check(resp.status == health_pb2.HealthCheckResponse.SERVING, "health over TLS is SERVING")
            presets = service_pb2_grpc.HostServiceStub(ch).ListPresets(
                service_pb2.ListPresetsRequest(), timeout=10)
            check(len(presets.presets) > 0, "ListPresets over TLS")
        with grpc.insecure_channel(addr) as ch:
            try:
                health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=3)
                check(False, "a plaintext client is refused on the TLS port")
            except grpc.RpcError as e:
                check(e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED),
                      "a plaintext client is refused on the TLS port (%s)" % e.code())
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(TMP, ignore_errors=True)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
