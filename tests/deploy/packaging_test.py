#!/usr/bin/python3
"""Static checks of the container packaging (no Docker needed).

  packaging_test.py SOURCE_DIR [BLKLABD [BLKLAB]]

deploy/Dockerfile:
- multi-stage on Debian 12 (FROM debian:12* / debian:bookworm* at least
  twice, the final stage copying from an earlier one);
- the build stage installs every package of scripts/setup's build list, and
  the binaries it copies are CMake executables of the directories they come
  from; the runtime stage installs no -dev package or compiler;
- the final stage runs as a non-root USER, has a HEALTHCHECK, EXPOSEs 50051
  and 9464, and its ENTRYPOINT runs blklabd listening on those ports with
  --data_dir on a VOLUME;
- with BLKLABD (and BLKLAB) given: every flag the ENTRYPOINT passes is one
  blklabd knows (--helpfull), and the HEALTHCHECK's CLI command exists;
- on Debian 12 with apt-cache: every package named exists in the archive.
deploy/compose.yaml (YAML):
- services blklabd (built from the repo with deploy/Dockerfile), prometheus and
  grafana; every bind mount's source exists in the repo;
- Prometheus: the mounted config is the one it is started with; its scrape
  target is the blklabd service at the metrics port, without honor_labels
  (blklabd's series carry no `job` or `instance` of their own: the per-job
  label is `job_id`, so the scrape's target labels apply); its rule_files fall
  into a mounted directory that holds rules;
- Grafana: provisioning mounted; the data source's URL is the prometheus
  service; the dashboard provider's path is the mount of
  deploy/grafana/dashboards; the dashboards' default data source uid exists;
- blklabd's published ports bind to loopback (it runs without a token).
/.dockerignore excludes .git and build*/.

Exits 77 (skip) without python3-yaml.
"""
import glob
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import SKIP, require_yaml, verdict  # noqa: E402

yaml = require_yaml()

GRPC_PORT, METRICS_PORT = "50051", "9464"
failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}")


def ok(msg):
    print(f"ok: {msg}")


# ---------------------------------------------------------------- Dockerfile

def dockerfile_stages(path):
    """[{"from": image, "name": alias, "instr": [(KEYWORD, args)]}] with continuations joined."""
    lines, buf = [], ""
    with open(path) as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not buf and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if buf and s.lstrip().startswith("#"):
                continue  # comment inside a continued instruction
            if s.endswith("\\"):
                buf += s[:-1] + " "
                continue
            lines.append(buf + s)
            buf = ""
    if buf:
        lines.append(buf)
    stages = []
    args_before_from = {}  # ARG NAME=DEFAULT before the first FROM: usable in FROM lines
    for line in lines:
        kw, _, args = line.strip().partition(" ")
        kw, args = kw.upper(), args.strip()
        if kw == "ARG" and not stages:
            name, _, default = args.partition("=")
            args_before_from[name.strip()] = default.strip()
        elif kw == "FROM":
            args = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args_before_from.get(m.group(1) or m.group(2), m.group(0)),
                          args)
            parts = args.split()
            flags = [p for p in parts if p.startswith("--")]
            rest = [p for p in parts if not p.startswith("--")]
            stages.append({"from": rest[0], "name": rest[2] if len(rest) >= 3 and rest[1].upper() == "AS" else None,
                           "flags": flags, "instr": []})
        elif stages:
            stages[-1]["instr"].append((kw, args))
    return stages


def exec_form(args):
    """A JSON exec form as a list, or a shell form split into words."""
    args = args.strip()
    if args.startswith("["):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return None
    return shlex.split(args)


def apt_packages(instr):
    pkgs = []
    for kw, args in instr:
        if kw != "RUN":
            continue
        for m in re.finditer(r"apt-get\s+install\s+([^&;|]*)", args):
            pkgs += [w for w in m.group(1).split() if not w.startswith("-")]
    return pkgs


def setup_build_packages(src):
    """Packages of scripts/setup's PKGS array, in the section headed `# build`."""
    with open(os.path.join(src, "scripts/setup")) as f:
        text = f.read()
    m = re.search(r"PKGS=\((.*?)\n\)", text, re.S)
    if not m:
        return []
    pkgs, section = [], None
    for line in m.group(1).splitlines():
        line = line.strip()
        if line.startswith("#"):
            section = line.lstrip("# ").split()[0] if line.lstrip("# ") else None
            continue
        if section == "build":
            pkgs += line.split()
    return pkgs


def check_dockerfile(src, blklabd, blklab):
    path = os.path.join(src, "deploy/Dockerfile")
    if not os.path.isfile(path):
        fail("deploy/Dockerfile missing")
        return {}
    stages = dockerfile_stages(path)
    debian = [s for s in stages if re.fullmatch(r"debian:(12|bookworm)([-.][\w.-]*)?(@sha256:[0-9a-f]+)?", s["from"])]
    if len(stages) < 2 or len(debian) < 2:
        fail(f"Dockerfile: want a multi-stage build with at least two FROM debian:12/bookworm, have {[s['from'] for s in stages]}")
    else:
        ok(f"Dockerfile stages: {[s['from'] + (' AS ' + s['name'] if s['name'] else '') for s in stages]}")
    if not stages:
        return {}
    final, builders = stages[-1], stages[:-1]
    names = {s["name"] for s in builders if s["name"]} | {str(i) for i in range(len(builders))}
    copies = [a for k, a in final["instr"] if k == "COPY" and re.search(r"--from=(\S+)", a)]
    if not any(re.search(r"--from=(\S+)", a).group(1) in names for a in copies):
        fail("Dockerfile: the final stage copies nothing from a build stage")

    # Build stage: scripts/setup's build packages; copied binaries are CMake executables.
    build_pkgs = set()
    for s in builders:
        build_pkgs |= set(apt_packages(s["instr"]))
    missing = [p for p in setup_build_packages(src) if p not in build_pkgs]
    if missing:
        fail(f"Dockerfile: build stage lacks scripts/setup build packages {missing}")
    elif build_pkgs:
        ok(f"build stage installs scripts/setup's build packages ({len(build_pkgs)} packages)")
    build_dirs = set()
    for s in builders:
        for k, a in s["instr"]:
            if k == "RUN":
                build_dirs |= set(re.findall(r"cmake\s[^&;]*?-B\s*(\S+)", a))
    for a in copies:
        words = [w for w in a.split() if not w.startswith("--")]
        for binpath in words[:-1]:
            root = next((d for d in build_dirs if binpath.startswith(d.rstrip("/") + "/")), None)
            if root is None:
                fail(f"Dockerfile: COPY --from source {binpath} is not under a cmake -B build directory {sorted(build_dirs)}")
                continue
            rel = binpath[len(root.rstrip("/")) + 1:]
            d, name = posixpath.split(rel)
            cml = os.path.join(src, d, "CMakeLists.txt")
            if not os.path.isfile(cml) or not re.search(r"add_executable\(\s*" + re.escape(name) + r"\b", open(cml).read()):
                fail(f"Dockerfile: {binpath}: {d}/CMakeLists.txt has no add_executable({name})")
            else:
                ok(f"{binpath} is the executable {name} of {d}/CMakeLists.txt")

    # Runtime stage.
    runtime_pkgs = apt_packages(final["instr"])
    bad = [p for p in runtime_pkgs if p.endswith("-dev") or p in ("g++", "gcc", "cmake", "ninja-build", "clang")]
    if bad:
        fail(f"Dockerfile: runtime stage installs build packages {bad}")
    users = [a.split(":")[0].strip() for k, a in final["instr"] if k == "USER"]
    if not users or users[-1] in ("root", "0"):
        fail(f"Dockerfile: the final stage must switch to a non-root USER, has {users}")
    else:
        ok(f"runs as USER {users[-1]}")
    hc = [a for k, a in final["instr"] if k == "HEALTHCHECK"]
    if not hc or hc[-1].strip().upper() == "NONE":
        fail("Dockerfile: no HEALTHCHECK in the final stage")
    exposed = set()
    for k, a in final["instr"]:
        if k == "EXPOSE":
            exposed |= {p.split("/")[0] for p in a.split()}
    if not {GRPC_PORT, METRICS_PORT} <= exposed:
        fail(f"Dockerfile: EXPOSE {GRPC_PORT} and {METRICS_PORT}, has {sorted(exposed)}")
    else:
        ok(f"EXPOSE {' '.join(sorted(exposed))}")
    volumes = []
    for k, a in final["instr"]:
        if k == "VOLUME":
            v = exec_form(a) if a.strip().startswith("[") else a.split()
            volumes += v or []
    entry = [exec_form(a) for k, a in final["instr"] if k == "ENTRYPOINT"]
    entry = entry[-1] if entry else None
    flags = {}
    if not entry or posixpath.basename(entry[0]) != "blklabd":
        fail(f"Dockerfile: ENTRYPOINT must run blklabd (exec form), is {entry}")
    else:
        for w in entry[1:]:
            if w.startswith("--"):
                k, _, v = w[2:].partition("=")
                flags[k] = v
        if flags.get("listen", "").rsplit(":", 1)[-1] != GRPC_PORT or not flags.get("listen", "").startswith("0.0.0.0"):
            fail(f"Dockerfile: ENTRYPOINT --listen must be 0.0.0.0:{GRPC_PORT}, is {flags.get('listen')}")
        if flags.get("metrics_listen", "").rsplit(":", 1)[-1] != METRICS_PORT or not flags.get("metrics_listen", "").startswith("0.0.0.0"):
            fail(f"Dockerfile: ENTRYPOINT --metrics_listen must be 0.0.0.0:{METRICS_PORT}, is {flags.get('metrics_listen')}")
        if not flags.get("data_dir") or flags["data_dir"].rstrip("/") not in [v.rstrip("/") for v in volumes]:
            fail(f"Dockerfile: --data_dir ({flags.get('data_dir')}) must be a VOLUME ({volumes})")
        if "listen" in flags and "auth_token_file" not in flags and "insecure_allow_remote" not in flags:
            fail("Dockerfile: a 0.0.0.0 --listen needs --auth_token_file or --insecure_allow_remote")
        ok(f"ENTRYPOINT {' '.join(entry)}")

    # Flags against the real binaries, when given.
    if blklabd:
        p = subprocess.run([blklabd, "--helpfull"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        known = set(re.findall(r"^\s+--(\w+) \(", p.stdout, re.M))
        unknown = [f for f in flags if f not in known]
        if not known:
            fail(f"{blklabd} --helpfull listed no flags")
        elif unknown:
            fail(f"Dockerfile: ENTRYPOINT flags unknown to blklabd: {unknown}")
        else:
            ok(f"blklabd knows every ENTRYPOINT flag ({len(known)} flags)")
    if blklab and hc:
        cmd = re.sub(r"^(--\S+\s+)*CMD\s+", "", hc[-1].strip())
        words = exec_form(cmd) or []
        words = words[2:] if words[:2] == ["/bin/sh", "-c"] else words
        if not words or posixpath.basename(words[0]) not in ("blklab", "curl", "wget"):
            fail(f"Dockerfile: HEALTHCHECK runs {words[:1]}, expected the blklab CLI")
        elif posixpath.basename(words[0]) == "blklab":
            sub = next((w for w in words[1:] if not w.startswith("-") and not re.match(r"[\d.]+:\d+$", w)), None)
            p = subprocess.run([blklab], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if not sub or not re.search(r"--server ADDR .*\b" + re.escape(sub) + r"\b", p.stdout):
                fail(f"Dockerfile: HEALTHCHECK command '{sub}' is not a remote command of the blklab CLI")
            else:
                ok(f"HEALTHCHECK runs `blklab ... {sub}`, a remote command of the CLI")

    # Package names in Debian 12.
    apt_cache = shutil.which("apt-cache")
    try:
        on_bookworm = open("/etc/debian_version").read().startswith("12")
    except OSError:
        on_bookworm = False
    if apt_cache and on_bookworm:
        all_pkgs = sorted(build_pkgs | set(runtime_pkgs))
        p = subprocess.run([apt_cache, "show", "--no-all-versions", *all_pkgs], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        found = set(re.findall(r"^Package: (\S+)", p.stdout, re.M))
        lost = [x for x in all_pkgs if x not in found]
        if lost:
            fail(f"Dockerfile: not in this Debian 12's archive (apt-get update?): {lost}")
        else:
            ok(f"all {len(all_pkgs)} Dockerfile packages exist in Debian 12")
    else:
        print("note: not on Debian 12 with apt-cache: package names not looked up")
    return flags


# ---------------------------------------------------------------- compose

def mounts(service, compose_dir):
    """[(source_abs_or_volume_name, target, is_bind)] of a service's volumes."""
    out = []
    for v in service.get("volumes", []) or []:
        if isinstance(v, dict):
            srcv, tgt, kind = v.get("source", ""), v.get("target", ""), v.get("type", "volume")
            is_bind = kind == "bind"
        else:
            parts = v.split(":")
            srcv, tgt = parts[0], parts[1] if len(parts) > 1 else parts[0]
            is_bind = srcv.startswith((".", "/", "~"))
        if is_bind:
            srcv = os.path.normpath(os.path.join(compose_dir, srcv))
        out.append((srcv, tgt, is_bind))
    return out


def host_path(target, service_mounts):
    """The repo path a container path maps to through bind mounts, or None."""
    best = None
    for srcv, tgt, is_bind in service_mounts:
        t = tgt.rstrip("/")
        if is_bind and (target == t or target.startswith(t + "/")):
            if best is None or len(t) > len(best[1]):
                best = (srcv, t)
    if best is None:
        return None
    return os.path.join(best[0], target[len(best[1]):].lstrip("/")) if target != best[1] else best[0]


def check_compose(src, flags):
    path = os.path.join(src, "deploy/compose.yaml")
    cdir = os.path.dirname(path)
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        fail(f"compose.yaml: {e}")
        return
    services = doc.get("services") or {}
    absent = [name for name in ("blklabd", "prometheus", "grafana") if name not in services]
    if absent:
        fail(f"compose.yaml: no service {', '.join(absent)}")
        return
    ok(f"compose services: {sorted(services)}")
    for name, svc in services.items():
        for srcv, tgt, is_bind in mounts(svc, cdir):
            if is_bind and not os.path.exists(srcv):
                fail(f"compose.yaml: {name}: mount source {os.path.relpath(srcv, src)} does not exist")
            elif not is_bind and srcv not in (doc.get("volumes") or {}):
                fail(f"compose.yaml: {name}: named volume {srcv} is not declared under volumes")

    # blklabd: built from this repo.
    b = services["blklabd"]
    build = b.get("build")
    if not isinstance(build, dict):
        fail("compose.yaml: blklabd must be built (build: {context, dockerfile})")
    else:
        ctx = os.path.normpath(os.path.join(cdir, build.get("context", ".")))
        dockerfile = os.path.join(ctx, build.get("dockerfile", "Dockerfile"))
        if ctx != os.path.normpath(src):
            fail(f"compose.yaml: blklabd build context is {ctx}, not the repository root")
        if os.path.normpath(dockerfile) != os.path.join(src, "deploy/Dockerfile"):
            fail(f"compose.yaml: blklabd dockerfile resolves to {dockerfile}")
        ok("blklabd builds from the repository root with deploy/Dockerfile")
    for p in b.get("ports", []) or []:
        spec = str(p if not isinstance(p, dict) else f"{p.get('host_ip', '')}:{p.get('published', '')}:{p.get('target', '')}")
        if "insecure_allow_remote" in flags and not spec.startswith(("127.0.0.1:", "[::1]:", "localhost:")):
            fail(f"compose.yaml: blklabd runs without a token; publish {spec} on 127.0.0.1 only")

    # Prometheus.
    pr = services["prometheus"]
    pm = mounts(pr, cdir)
    cmd = pr.get("command") or []
    cmd = shlex.split(cmd) if isinstance(cmd, str) else cmd
    cfg_target = next((c.split("=", 1)[1] for c in cmd if c.startswith("--config.file=")), "/etc/prometheus/prometheus.yml")
    cfg = host_path(cfg_target, pm)
    if not cfg or not os.path.isfile(cfg):
        fail(f"compose.yaml: prometheus config {cfg_target} is not mounted from a repo file")
        return
    ok(f"prometheus reads {cfg_target} = {os.path.relpath(cfg, src)}")
    with open(cfg) as f:
        pcfg = yaml.safe_load(f)
    want = f"blklabd:{flags.get('metrics_listen', ':' + METRICS_PORT).rsplit(':', 1)[-1]}"
    scrape = [(sc, t) for sc in pcfg.get("scrape_configs", []) for s in sc.get("static_configs", [])
              for t in s.get("targets", [])]
    hits = [sc for sc, t in scrape if t == want]
    if not hits:
        fail(f"prometheus.yml: no scrape target {want} (the blklabd service at its metrics port); have {[t for _, t in scrape]}")
    else:
        ok(f"prometheus scrapes {want}")
        if any(sc.get("honor_labels") for sc in hits):
            fail("prometheus.yml: the blklabd scrape sets honor_labels, but blklabd's series have no `job` "
                 "label of their own (the per-job label is job_id): drop it so job and instance come from the scrape")
    for rf in pcfg.get("rule_files", []) or []:
        target = rf if rf.startswith("/") else posixpath.join(posixpath.dirname(cfg_target), rf)
        hp = host_path(target, pm)
        if not hp or not glob.glob(hp):
            fail(f"prometheus.yml: rule_files {rf} ({target} in the container) matches no mounted rule file")
        else:
            ok(f"rule_files {rf} -> {[os.path.relpath(x, src) for x in glob.glob(hp)]}")
    deps = pr.get("depends_on") or []
    if "blklabd" not in deps:
        fail("compose.yaml: prometheus should depend on blklabd")

    # Grafana.
    gr = services["grafana"]
    gm = mounts(gr, cdir)
    ds_dir = host_path("/etc/grafana/provisioning/datasources", gm)
    db_dir = host_path("/etc/grafana/provisioning/dashboards", gm)
    if not ds_dir or not db_dir:
        fail("compose.yaml: grafana needs /etc/grafana/provisioning/{datasources,dashboards} mounted")
        return
    uids = set()
    for f in glob.glob(os.path.join(ds_dir, "*.y*ml")):
        for ds in (yaml.safe_load(open(f)) or {}).get("datasources", []):
            uids.add(ds.get("uid"))
            if ds.get("type") == "prometheus":
                m = re.match(r"https?://([^:/]+):(\d+)", ds.get("url", ""))
                if not m or m.group(1) not in services or m.group(1) != "prometheus":
                    fail(f"{os.path.relpath(f, src)}: url {ds.get('url')} is not the prometheus service")
                else:
                    ok(f"data source {ds.get('name')} -> {ds.get('url')}")
    dash_src = os.path.join(src, "deploy/grafana/dashboards")
    providers = [p for f in glob.glob(os.path.join(db_dir, "*.y*ml"))
                 for p in (yaml.safe_load(open(f)) or {}).get("providers", [])]
    if not providers:
        fail("grafana provisioning: no dashboard provider")
    for p in providers:
        ppath = (p.get("options") or {}).get("path", "")
        hp = host_path(ppath.rstrip("/"), gm)
        if p.get("type", "file") != "file" or not hp or os.path.normpath(hp) != dash_src:
            fail(f"dashboard provider {p.get('name')}: path {ppath} is not the mount of deploy/grafana/dashboards")
        else:
            ok(f"dashboard provider {p.get('name')} reads {ppath} = deploy/grafana/dashboards")
    home = (gr.get("environment") or {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        hp = host_path(home, gm)
        if not hp or not os.path.isfile(hp):
            fail(f"compose.yaml: GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH {home} is not a mounted dashboard")
    for f in glob.glob(os.path.join(dash_src, "*.json")):
        d = json.load(open(f))
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") == "datasource":
                cur = (v.get("current") or {}).get("value")
                if cur and cur not in uids:
                    fail(f"{os.path.basename(f)}: default data source {cur} is not a provisioned uid {sorted(uids)}")
    if "prometheus" not in (gr.get("depends_on") or []):
        fail("compose.yaml: grafana should depend on prometheus")


def check_dockerignore(src):
    path = os.path.join(src, ".dockerignore")
    if not os.path.isfile(path):
        fail(".dockerignore missing at the repository root")
        return
    entries = {l.strip().rstrip("/") for l in open(path) if l.strip() and not l.startswith("#")}
    for want in (".git", "build*"):
        if want not in entries:
            fail(f".dockerignore does not exclude {want}")
    ok(".dockerignore excludes .git and build*/")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    blklabd = sys.argv[2] if len(sys.argv) > 2 else None
    blklab = sys.argv[3] if len(sys.argv) > 3 else None
    flags = check_dockerfile(src, blklabd, blklab)
    check_compose(src, flags)
    check_dockerignore(src)
    return verdict(failures, "Dockerfile, compose.yaml and .dockerignore")


if __name__ == "__main__":
    sys.exit(main())
