#!/usr/bin/python3
"""TLS and non-loopback listening of blklabd (ctest server.tls).

    tls_test.py BLKLABD SOURCE_DIR

Makes a throw-away self-signed certificate with openssl, starts blklabd with
--tls_cert_file/--tls_key_file on 127.0.0.1, and checks that a TLS client
trusting that certificate gets health SERVING and can list presets, while a
plaintext client cannot talk to the TLS port. Every wait is bounded.
"""
import os
import shutil
import subprocess
import sys
import tempfile

BLKLABD, SRC = sys.argv[1:3]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
TMP = tempfile.mkdtemp(prefix="blklabd-tls.")
os.environ["BLKLAB_PY_GEN"] = os.path.join(TMP, "pygen")
from blklab_client import (health_pb2, health_pb2_grpc, service_pb2,  # noqa: E402
                           service_pb2_grpc)
import grpc  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blklabd_harness import Harness  # noqa: E402

H = Harness(BLKLABD, TMP)
failures = H.failures
check = H.check


def main():
    if shutil.which("openssl") is None:
        print("FAIL: openssl not installed (scripts/setup installs it)")
        return 1
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    try:
        try:
            _, addr = H.start(os.path.join(TMP, "d"), "--tls_cert_file=" + cert, "--tls_key_file=" + key)
        except RuntimeError as e:
            check(False, "blklabd with TLS starts: %s" % e)
            return 1
        check(True, "blklabd with TLS starts")
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
        for p in H.procs:
            H.stop(p)
        shutil.rmtree(TMP, ignore_errors=True)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
