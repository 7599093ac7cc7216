#!/usr/bin/env bash
# Validates deploy/k8s/*.yaml offline against Kubernetes' schemas
# (kubernetes-models, and prometheus-operator's for the ServiceMonitor), then
# checks what a schema cannot: the container's flags are blklabd's, the probes
# and Services point at the ports the container opens, the ServiceMonitor
# selects the headless Service's metrics port, the token file is the mounted
# secret, and the dashboards ConfigMap is deploy/grafana/dashboards/ as
# deploy/k8s/make_dashboards.py renders it.
#
#   k8s_manifests_test.sh SOURCE_DIR NPM_DIR [BLKLABD]
#
# NPM_DIR (under the build tree) receives `npm ci` of k8s-schema/'s pinned
# package-lock.json, reused while the lock file is unchanged. Exit 77 (skip)
# when node or npm is missing.
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 SOURCE_DIR NPM_DIR [BLKLABD]" >&2; exit 2; }
SRC=$(cd "$1" && pwd)
NPM_DIR=$2
BLKLABD=${3:-}
PKG="$SRC/tests/deploy/k8s-schema"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (scripts/setup installs nodejs)"; exit 77; }
done

mkdir -p "$NPM_DIR"
NPM_DIR=$(cd "$NPM_DIR" && pwd)
stamp=$(cat "$PKG/package.json" "$PKG/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ ! -f $NPM_DIR/.stamp || $(cat "$NPM_DIR/.stamp") != "$stamp" || ! -d $NPM_DIR/node_modules ]]; then
  echo "npm ci in $NPM_DIR"
  rm -rf "$NPM_DIR/node_modules" "$NPM_DIR/.stamp"
  cp "$PKG/package.json" "$PKG/package-lock.json" "$NPM_DIR/"
  (cd "$NPM_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$stamp" >"$NPM_DIR/.stamp"
fi
# ESM resolves packages next to the script: run a copy inside NPM_DIR.
cp "$PKG/validate.mjs" "$NPM_DIR/validate.mjs"
node "$NPM_DIR/validate.mjs" "$SRC"/deploy/k8s/*.yaml

python3 "$SRC/deploy/k8s/make_dashboards.py" --check
echo "ok   grafana-dashboards.yaml is deploy/grafana/dashboards/ rendered"

python3 - "$SRC" "$BLKLABD" <<'PY'
import subprocess, sys, yaml
src, blklabd = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(f"{src}/deploy/k8s/blklabd.yaml")) if d]
sm = yaml.safe_load(open(f"{src}/deploy/k8s/servicemonitor.yaml"))
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
sts = by[("StatefulSet", "blklabd")]
pod = sts["spec"]["template"]
c = pod["spec"]["containers"][0]
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fails.append(what)
args = dict(a[2:].split("=", 1) for a in c["args"])
check(args["listen"].endswith(f":{ports['grpc']}"), "--listen is the grpc containerPort")
check(args["metrics_listen"].endswith(f":{ports['metrics']}"), "--metrics_listen is the metrics containerPort")
for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
    check(c[probe]["grpc"]["port"] == ports["grpc"], f"{probe} is grpc.health.v1 on the grpc port")
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
token = vols["token"]["secret"]["items"][0]["path"]
check(args["auth_token_file"] == f"{mounts['token']}/{token}", "--auth_token_file is the mounted secret")
check(args["data_dir"] == mounts["data"], "--data_dir is the persistent volume")
check("insecure_allow_remote" not in args, "no --insecure_allow_remote: every replica needs the token")
claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
check("data" in claims, "the data volume is a volumeClaimTemplate")
sel = sts["spec"]["selector"]["matchLabels"]
check(all(pod["metadata"]["labels"].get(k) == v for k, v in sel.items()), "the StatefulSet selects its pods")
headless = by[("Service", sts["spec"]["serviceName"])]
check(headless["spec"]["clusterIP"] == "None", "serviceName is the headless Service")
for (kind, name), d in by.items():
    if kind != "Service": continue
    check(all(pod["metadata"]["labels"].get(k) == v for k, v in d["spec"]["selector"].items()), f"Service {name} selects the pods")
    for p in d["spec"]["ports"]:
        check(p["targetPort"] in ports, f"Service {name} port {p['name']} targets a container port")
msel = sm["spec"]["selector"]["matchLabels"]
matched = [n for (k, n), d in by.items() if k == "Service" and all(d["metadata"]["labels"].get(a) == b for a, b in msel.items())]
check(matched == [sts["spec"]["serviceName"]], "the ServiceMonitor selects the headless Service only")
check(any(p["name"] == sm["spec"]["endpoints"][0]["port"] for p in headless["spec"]["ports"]), "the ServiceMonitor's port is the headless Service's metrics port")
if blklabd:
    help_text = subprocess.run([blklabd, "--helpfull"], capture_output=True, text=True).stdout + \
                subprocess.run([blklabd, "--helpfull"], capture_output=True, text=True).stderr
    for flag in args:
        check(f"--{flag} " in help_text or f"--{flag}\n" in help_text, f"--{flag} is a blklabd flag")
sys.exit(1 if fails else 0)
PY
echo "PASS: deploy/k8s manifests"
