#!/usr/bin/python3
"""Submits a fio job file to blklabd, prints progress, then fio's output.

    example_submit.py [--server 127.0.0.1:50051] [--token-file F] [--preset default | --host hosts/x]
                      JOBFILE [fio args...]

Files the job file includes must sit next to it (they are sent in the bundle).
"""
import argparse
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from blklab_client import Client  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default="127.0.0.1:50051")
    ap.add_argument("--token-file")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--host", help="a Host resource, hosts/NAME")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("jobfile")
    ap.add_argument("fio_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    token = pathlib.Path(a.token_file).read_text().splitlines()[0].strip() if a.token_file else None
    client = Client(a.server, token=token)
    job_path = pathlib.Path(a.jobfile)
    files = {job_path.name: job_path.read_text()}
    for sib in job_path.parent.iterdir():  # includes next to the job file
        if sib.is_file() and sib.suffix in (".fio", ".inc") and sib.name not in files:
            files[sib.name] = sib.read_text()
    job = client.create_job_from_files(files, list(a.fio_args) + [job_path.name], host=a.host, preset=a.preset,
                                       variables={k: v for k, v in os.environ.items() if k.startswith("FIO_")})
    print(f"created {job.name} ({job.state and 'QUEUED'})", file=sys.stderr)
    final = None
    for snap in client.watch(job.name, timeout=a.timeout):
        if snap.HasField("final_job"):
            final = snap.final_job
            break
        vt = snap.virtual_time.ToNanoseconds() / 1e9
        print(f"\r[{snap.progress_fraction * 100:5.1f}%] t={vt:7.2f}s read {snap.read.iops:10.0f} IOPS "
              f"write {snap.write.iops:10.0f} IOPS", end="", file=sys.stderr, flush=True)
    print("", file=sys.stderr)
    if final is None:
        final = client.get_job(job.name)
    from blklab.v1 import job_pb2
    if final.state != job_pb2.Job.SUCCEEDED:
        print(f"{final.name}: {job_pb2.Job.State.Name(final.state)}: {final.error.message}", file=sys.stderr)
        return 1
    sys.stdout.write(final.result.fio_normal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
