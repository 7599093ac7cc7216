#!/usr/bin/python3
"""PromQL and Prometheus configuration checks for deploy/, with the real promtool.

  promql_lint_test.py SOURCE_DIR [DASHBOARD.json...]

1. Every PromQL expression of the Grafana dashboards (targets[].expr, and the
   selectors of label_values() variable queries) is written, with Grafana's
   variables replaced ($__rate_interval, $__interval, $__range -> 5m; template
   variables -> a literal), as a recording rule and parsed by
   `promtool check rules`. Dashboard rate()/irate()/increase() must read
   counters (_total, or a histogram's _bucket/_sum/_count) over $__rate_interval.
2. `promtool check rules deploy/prometheus/rules/*.yml`
3. `promtool test rules deploy/prometheus/tests/*.yml`, and every alert of the
   rules is exercised by some alert_rule_test, every recording rule by a
   promql_expr_test.
4. `promtool check config deploy/prometheus/prometheus.yml` (rule_files resolve
   relative to the config file).

Exits 77 (skip) without promtool.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import SKIP, verdict  # noqa: E402
failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}")


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.strip()
    print(f"$ {' '.join(cmd)}\n{out}")
    if p.returncode != 0:
        fail(f"{' '.join(os.path.basename(c) if os.path.isabs(c) else c for c in cmd)} exited {p.returncode}")
    return p.returncode == 0


def panels(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])


GRAFANA_RANGES = re.compile(r"\$\{?__(rate_interval|interval|range)\}?")
TEMPLATE_VAR = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)\]\]")
RATE_CALL = re.compile(r"\b(rate|irate|increase)\s*\(\s*([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?\s*\[([^\]]*)\]")
COUNTER_SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def substitute(expr):
    expr = GRAFANA_RANGES.sub("5m", expr)
    # A literal that is valid (and regex-safe) both in name="..." and name=~"...".
    expr = TEMPLATE_VAR.sub("templatevalue", expr)
    return expr


def dashboard_exprs(path):
    with open(path) as f:
        dash = json.load(f)
    uid = re.sub(r"\W", "_", dash.get("uid") or os.path.splitext(os.path.basename(path))[0])
    for p in panels(dash):
        for t in p.get("targets", []):
            if "expr" in t:
                yield f"dashboard:{uid}:panel{p.get('id')}_{t.get('refId', 'X')}", t["expr"], f"panel {p.get('id')} ({p.get('title')!r}) {t.get('refId')}"
    for i, v in enumerate(dash.get("templating", {}).get("list", [])):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q, re.S)
        m2 = re.fullmatch(r"\s*(query_result)\((.*)\)\s*", q, re.S)
        if m:
            yield f"dashboard:{uid}:var_{v['name']}", m.group(1), f"variable {v['name']}"
        elif m2:
            yield f"dashboard:{uid}:var_{v['name']}", m2.group(2), f"variable {v['name']}"
        elif not re.fullmatch(r"\s*label_values\(\s*\w+\s*\)\s*|\s*label_names\(.*\)\s*|\s*metrics\(.*\)\s*", q):
            fail(f"{os.path.basename(path)}: variable {v['name']}: query {q!r} is not a Prometheus variable query")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: promtool not found (Debian package prometheus; scripts/setup installs it)")
        return SKIP
    dashboards = sys.argv[2:] or sorted(glob.glob(os.path.join(src, "deploy/grafana/dashboards/*.json")))
    rule_files = sorted(glob.glob(os.path.join(src, "deploy/prometheus/rules/*.yml")))
    test_files = sorted(glob.glob(os.path.join(src, "deploy/prometheus/tests/*.yml")))
    config = os.path.join(src, "deploy/prometheus/prometheus.yml")
    if not dashboards or not rule_files or not test_files:
        fail("missing dashboards, rules or rule tests under deploy/")
        return 1

    # 1. Dashboard expressions as recording rules.
    rules = []
    for path in dashboards:
        name = os.path.basename(path)
        for record, expr, where in dashboard_exprs(path):
            for m in RATE_CALL.finditer(expr):
                fn, metric, _, rng = m.groups()
                if not metric.endswith(COUNTER_SUFFIXES):
                    fail(f"{name}: {where}: {fn}() of {metric}, which is not a counter")
                if rng.strip() != "$__rate_interval":
                    fail(f"{name}: {where}: {fn}() over [{rng}], use [$__rate_interval]")
            e = substitute(expr)
            if "$" in e:
                fail(f"{name}: {where}: unreplaced variable in {e!r}")
            rules.append({"record": record, "expr": e})
    with tempfile.TemporaryDirectory() as tmp:
        rules_path = os.path.join(tmp, "dashboard_exprs.rules.yml")
        with open(rules_path, "w") as f:
            json.dump({"groups": [{"name": "dashboard_exprs", "rules": rules}]}, f, indent=1)
        print(f"{len(rules)} dashboard expressions from {len(dashboards)} dashboard(s)")
        if not run([promtool, "check", "rules", rules_path]):
            with open(rules_path) as f:
                print(f.read())

    # 2-4. The rules, their unit tests and the server configuration.
    run([promtool, "check", "rules", *rule_files])
    run([promtool, "test", "rules", *test_files])
    run([promtool, "check", "config", config])

    rules_text = "".join(open(p).read() for p in rule_files)
    tests_text = "".join(open(p).read() for p in test_files)
    tested_alerts = set(re.findall(r"^\s*alertname:\s*(\S+)", tests_text, re.M))
    tested_exprs = set(re.findall(r"^\s*-?\s*expr:\s*([A-Za-z_:][\w:]*)\s*$", tests_text, re.M))
    for alert in re.findall(r"^\s*-?\s*alert:\s*(\S+)", rules_text, re.M):
        if alert not in tested_alerts:
            fail(f"alert {alert} has no alert_rule_test in deploy/prometheus/tests")
    for record in re.findall(r"^\s*-?\s*record:\s*(\S+)", rules_text, re.M):
        if record not in tested_exprs:
            fail(f"recording rule {record} has no promql_expr_test in deploy/prometheus/tests")

    return verdict(failures, "dashboard PromQL, rules, rule tests and config")


if __name__ == "__main__":
    sys.exit(main())
