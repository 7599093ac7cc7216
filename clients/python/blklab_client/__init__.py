"""A small Python client for blklabd (blklab.v1 over gRPC).

Uses Debian's python3-grpcio and python3-protobuf. The generated stubs are
not checked in: ensure_stubs() runs ../gen_stubs.sh (system protoc +
/usr/bin/grpc_python_plugin) into $BLKLAB_PY_GEN, or a cache directory keyed
by the protos' content, and puts it on sys.path.

    from blklab_client import Client
    c = Client("127.0.0.1:50051", token=None)
    job = c.create_job_from_files({"a.fio": text}, ["a.fio"], preset="default")
    for snap in c.watch(job.name):
        ...
"""
import hashlib
import os
import pathlib
import subprocess
import sys

_HERE = pathlib.Path(__file__).resolve().parent
_PROTO_ROOT = _HERE.parent.parent.parent / "proto"


def ensure_stubs(gen_dir=None):
    """Generates the stubs once and makes them importable; returns the dir."""
    gen_dir = gen_dir or os.environ.get("BLKLAB_PY_GEN")
    if not gen_dir:
        h = hashlib.sha256()
        for p in sorted((_PROTO_ROOT / "blklab" / "v1").glob("*.proto")):
            h.update(p.read_bytes())
        cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
        gen_dir = str(cache / "blklab" / ("pygen-" + h.hexdigest()[:16]))
    if not (pathlib.Path(gen_dir) / "blklab" / "v1" / "service_pb2_grpc.py").exists():
        subprocess.run([str(_HERE.parent / "gen_stubs.sh"), gen_dir, str(_PROTO_ROOT)], check=True)
    if gen_dir not in sys.path:
        sys.path.insert(0, gen_dir)
    return gen_dir


ensure_stubs()

import grpc  # noqa: E402
from blklab.v1 import host_pb2, job_pb2, service_pb2, service_pb2_grpc  # noqa: E402,F401
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402
import reflection_pb2  # noqa: E402
import reflection_pb2_grpc  # noqa: E402

FINAL_STATES = (job_pb2.Job.SUCCEEDED, job_pb2.Job.FAILED, job_pb2.Job.CANCELLED)


class Client:
    """Thin wrapper over the generated stubs; every call takes a timeout."""

    def __init__(self, target, token=None, timeout=30.0):
        # Charts and results can exceed gRPC's default 4 MiB per message.
        self.channel = grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", 64 << 20)])
        self.metadata = [("authorization", "Bearer " + token)] if token else []
        self.timeout = timeout
        self.hosts = service_pb2_grpc.HostServiceStub(self.channel)
        self.jobs = service_pb2_grpc.JobServiceStub(self.channel)
        self.comparisons = service_pb2_grpc.ComparisonServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.reflection = reflection_pb2_grpc.ServerReflectionStub(self.channel)

    def close(self):
        self.channel.close()

    def _kw(self, timeout=None):
        return {"metadata": self.metadata, "timeout": timeout or self.timeout}

    # Hosts
    def create_host(self, host_id, spec_text=None, spec=None, validate_only=False):
        req = service_pb2.CreateHostRequest(host_id=host_id, validate_only=validate_only)
        if spec_text is not None:
            req.spec_text = spec_text
        if spec is not None:
            req.host.spec.CopyFrom(spec)
        return self.hosts.CreateHost(req, **self._kw())

    def get_host(self, name):
        return self.hosts.GetHost(service_pb2.GetHostRequest(name=name), **self._kw())

    def list_presets(self):
        return self.hosts.ListPresets(service_pb2.ListPresetsRequest(), **self._kw()).presets

    # Jobs
    def create_job_from_files(self, files, args, host=None, preset=None, host_spec=None, variables=None,
                              job_id="", request_id="", pace=None, limits=None, seed=0, report_time_s=None,
                              collect_stacks=False):
        """Creates a job from fio job files and arguments. report_time_s: the
        wall-clock second fio's output reports (reproducible bytes, as the CLI's
        SOURCE_DATE_EPOCH); collect_stacks: record call stacks (artifact
        "stacks.folded")."""
        job = job_pb2.Job(seed=seed, collect_stacks=collect_stacks)
        if report_time_s is not None:
            job.report_time.seconds = int(report_time_s)
        if host:
            job.host = host
        elif host_spec is not None:
            job.host_spec.CopyFrom(host_spec)
        else:
            job.preset = preset or "default"
        for k, v in files.items():
            job.fio.files[k] = v
        job.fio.args.extend(args)
        for k, v in (variables or {}).items():
            job.fio.variables[k] = v
        if pace is not None:
            job.pace = pace
        if limits is not None:
            job.limits.CopyFrom(limits)
        req = service_pb2.CreateJobRequest(job=job, job_id=job_id, request_id=request_id)
        return self.jobs.CreateJob(req, **self._kw())

    def create_job_from_spec(self, spec, preset="default", job_id="", request_id="", seed=0):
        """Creates a job from a structured job_pb2.JobSpec on a preset host."""
        job = job_pb2.Job(seed=seed, preset=preset)
        job.spec.CopyFrom(spec)
        req = service_pb2.CreateJobRequest(job=job, job_id=job_id, request_id=request_id)
        return self.jobs.CreateJob(req, **self._kw())

    def get_job(self, name, full=True):
        view = service_pb2.JOB_VIEW_FULL if full else service_pb2.JOB_VIEW_BASIC
        return self.jobs.GetJob(service_pb2.GetJobRequest(name=name, view=view), **self._kw())

    def list_jobs(self, filter="", page_size=0, page_token=""):
        return self.jobs.ListJobs(
            service_pb2.ListJobsRequest(filter=filter, page_size=page_size, page_token=page_token), **self._kw())

    def cancel_job(self, name):
        return self.jobs.CancelJob(service_pb2.CancelJobRequest(name=name), **self._kw())

    def delete_job(self, name):
        return self.jobs.DeleteJob(service_pb2.DeleteJobRequest(name=name), **self._kw())

    def watch(self, name, timeout=600.0, min_wall_interval_s=0.0):
        """Yields Snapshot messages; the last one carries final_job."""
        req = service_pb2.WatchJobRequest(name=name)
        if min_wall_interval_s:
            req.min_wall_interval.FromNanoseconds(int(min_wall_interval_s * 1e9))
        return self.jobs.WatchJob(req, **self._kw(timeout))

    def wait(self, name, timeout=600.0):
        """Watches until the job is final; returns the final Job (FULL)."""
        stream = self.watch(name, timeout=timeout)
        try:
            for snap in stream:
                if snap.HasField("final_job"):
                    return snap.final_job
        finally:
            stream.cancel()  # the call ends here, not when the iterator is collected
        return self.get_job(name)

    def read_artifacts(self, name, artifacts=(), chunk_bytes=0, timeout=600.0):
        """Reads artifacts of a finished job through the ReadJobArtifacts stream.

        `artifacts`: "logs/FILE", "fio_normal", "fio_json", "fio_json_plus",
        "fio_terse"; empty: every log file. Returns {artifact: bytes}, each
        assembled from its chunks (offsets checked).
        """
        req = service_pb2.ReadJobArtifactsRequest(name=name, artifacts=list(artifacts), chunk_bytes=chunk_bytes)
        out = {}
        for chunk in self.jobs.ReadJobArtifacts(req, **self._kw(timeout)):
            buf = out.setdefault(chunk.artifact, bytearray())
            if chunk.offset != len(buf):
                raise RuntimeError(f"{chunk.artifact}: chunk at offset {chunk.offset}, expected {len(buf)}")
            buf += chunk.data
        for name_, buf in out.items():
            out[name_] = bytes(buf)
        return out

    # Comparisons

    def create_comparison(self, args, files=None, variables=None, comparison_id="", collect_stacks=False):
        """A comparison as `blklab compare ARGS` would run it.

        `args`: the command's arguments without --jobs/--format/--plot, e.g.
        ["--host=nvme-8cpu", "--variant", "none:devices.nvme0n1.queue.scheduler=none",
         "--", "--name=t", "--rw=randread"] or ["spec.yaml"]; `files`: {path: text}
        for every file they name (spec, inventory, host and job files).
        `collect_stacks`: the cells record call stacks, so comparison_charts
        includes the flame graphs (as `--plot` does in-process).
        """
        bundle = job_pb2.ComparisonBundle(args=list(args), files=files or {}, variables=variables or {},
                                          collect_stacks=collect_stacks)
        req = service_pb2.CreateComparisonRequest(bundle=bundle, comparison_id=comparison_id)
        return self.comparisons.CreateComparison(req, **self._kw())

    def get_comparison(self, name, full=False):
        return self.comparisons.GetComparison(service_pb2.GetComparisonRequest(name=name, full=full), **self._kw())

    def list_comparisons(self, page_size=0, page_token=""):
        req = service_pb2.ListComparisonsRequest(page_size=page_size, page_token=page_token)
        return self.comparisons.ListComparisons(req, **self._kw())

    def cancel_comparison(self, name):
        return self.comparisons.CancelComparison(service_pb2.CancelComparisonRequest(name=name), **self._kw())

    def delete_comparison(self, name):
        return self.comparisons.DeleteComparison(service_pb2.DeleteComparisonRequest(name=name), **self._kw())

    def watch_comparison(self, name, timeout=3600.0):
        """Yields Comparison messages: now, then at each change, until it ends."""
        return self.comparisons.WatchComparison(service_pb2.WatchComparisonRequest(name=name), **self._kw(timeout))

    def wait_comparison(self, name, timeout=3600.0):
        """Watches until the comparison ends; returns its last state."""
        last = None
        for c in self.watch_comparison(name, timeout=timeout):
            last = c
        return last

    def comparison_output(self, name, fmt="table"):
        """The summary as `blklab compare --format=FMT` prints it (str)."""
        req = service_pb2.GetComparisonOutputRequest(name=name, format=fmt)
        return self.comparisons.GetComparisonOutput(req, **self._kw()).text

    def comparison_charts(self, name, directory=None):
        """The pictures `blklab compare --plot=DIR` writes: a list of
        (file name, bytes) - SVG charts, report.html, flame graphs. With
        `directory`, also writes them there (created if missing)."""
        req = service_pb2.GetComparisonOutputRequest(name=name, format="charts")
        files = [(f.name, f.content) for f in self.comparisons.GetComparisonOutput(req, **self._kw()).files]
        if directory is not None:
            for fname, _ in files:
                if not fname or "/" in fname or fname.startswith("."):
                    raise ValueError("the server sent a chart named %r" % fname)
            os.makedirs(directory, exist_ok=True)
            for fname, content in files:
                with open(os.path.join(directory, fname), "wb") as out:
                    out.write(content)
        return files

    def health_check(self, service=""):
        return self.health.Check(health_pb2.HealthCheckRequest(service=service), timeout=self.timeout).status

    def reflection_services(self):
        req = reflection_pb2.ServerReflectionRequest(list_services="")
        for resp in self.reflection.ServerReflectionInfo(iter([req]), timeout=self.timeout):
            return [s.name for s in resp.list_services_response.service]
        return []
