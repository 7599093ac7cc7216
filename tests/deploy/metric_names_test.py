#!/usr/bin/python3
"""The dashboards and rules speak deploy/METRICS.md's language, and cover it.

  metric_names_test.py SOURCE_DIR

- Every blklab_* / grpc_server_* name in the dashboards' queries (targets and
  variable queries), the rules' expressions and the rule tests' input series is
  a metric of METRICS.md's tables (_sum and _count of a histogram or summary,
  and a histogram's _bucket, count as that metric).
- Label names in a selector of such a metric are that metric's labels (plus
  `instance` and `job`, which Prometheus adds, `le` on a histogram's _bucket
  only, and a summary's `quantile` not on its _sum/_count); a matcher (=, !=,
  or each plain alternative of =~ and !~) on an enumerated label (direction,
  mode, quantile, state; grpc_type as METRICS.md lists it, grpc_code as
  grpc-go spells the codes) uses one of that metric's values.
- The job id is the label `job_id`: on a per-job metric, `job` is the scrape
  job Prometheus adds, so a `job` matcher with a template variable, a
  grouping (by/on/without/ignoring) with `job` but not `job_id`, a legend
  {{job}} or an annotation $labels.job next to per-job metrics is a mistake.
- Every metric of METRICS.md is queried by at least one dashboard panel.

Exits 77 (skip) without python3-yaml.
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import SKIP, require_yaml, verdict  # noqa: E402

yaml = require_yaml()

NAME = re.compile(r"(?<![\w:.])((?:blklab|grpc_server)_[A-Za-z0-9_]+)(?![\w:])")
SELECTOR = re.compile(r"(?<![\w:.])((?:blklab|grpc_server)_[A-Za-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*\"((?:[^\"\\]|\\.)*)\"")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")
GROUPING = re.compile(r"\b(by|on|without|ignoring)\s*\(([^)]*)\)")
# grpc-go's spellings of the status codes (codes.Code.String()), which METRICS.md
# names for grpc_code.
GRPC_GO_CODES = {"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
                 "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
                 "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
                 "Unauthenticated"}
failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}")


def parse_catalogue(path):
    """{name: {"type": t, "labels": set, "enums": {label: values}}}, {label: set of values}
    for enumerated labels (the labels table's, and the prose's grpc_type and grpc_code)."""
    metrics, enums = {}, {}
    header = None
    with open(path) as f:
        text = f.read()
    m = re.search(r"`grpc_type`\s+is\s+([^.]*)\.", text)
    if m:
        enums["grpc_type"] = set(re.findall(r"`([^`]*)`", m.group(1)))
    if re.search(r"`grpc_code`\s+is\s+spelled\s+as\s+grpc-go", text):
        enums["grpc_code"] = set(GRPC_GO_CODES)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = [c.lower() for c in cells]
                continue
            if set("".join(cells)) <= set("-: "):
                continue
            row = dict(zip(header, cells))
            if "name" in row and "type" in row:
                name = row["name"].strip("`")
                labels_cell = row.get("labels", "")
                # "(+ quantile)": a summary's quantile label; "state (`a`, `b`)": values.
                labels = set(re.findall(r"\(\+\s*(\w+)\s*\)", labels_cell))
                for part in re.sub(r"\([^)]*\)", "", labels_cell).split(","):
                    part = part.strip().strip("`")
                    if part:
                        labels.add(part)
                own = {}
                for label, values in re.findall(r"(\w+)\s*\(([^)+][^)]*)\)", labels_cell):
                    own[label] = set(re.findall(r"`([^`]*)`", values))
                    enums.setdefault(label, set()).update(own[label])
                metrics[name] = {"type": row["type"].strip(), "labels": labels, "enums": own}
            elif "label" in row and "values" in row:
                label = row["label"].strip("`")
                if re.fullmatch(r"\d+", row.get("bound", "")):
                    enums.setdefault(label, set()).update(re.findall(r"`([^`]*)`", row["values"]))
    return metrics, enums


def resolve(name, metrics):
    """The catalogue name a series name belongs to, or None."""
    if name in metrics:
        return name
    for suffix in HIST_SUFFIXES:
        base = name[: -len(suffix)]
        kinds = ("histogram",) if suffix == "_bucket" else ("histogram", "summary")
        if name.endswith(suffix) and metrics.get(base, {}).get("type") in kinds:
            return base
    return None


def per_job(text, metrics):
    """Whether text queries a metric that carries the job_id label."""
    return any("job_id" in metrics.get(resolve(n, metrics) or "", {}).get("labels", ())
               for n in NAME.findall(text))


def check_expr(text, where, metrics, enums, used):
    for name in NAME.findall(text):
        base = resolve(name, metrics)
        if base is None:
            fail(f"{where}: {name} is not in METRICS.md")
        else:
            used.add(base)
    for name, body in SELECTOR.findall(text):
        base = resolve(name, metrics)
        if base is None:
            continue
        # instance and job: the target labels Prometheus adds (job is the scrape
        # job, "blklabd"; a job's id is job_id).
        allowed = metrics[base]["labels"] | {"instance", "job"}
        if name.endswith("_bucket"):
            allowed.add("le")
        if name != base:
            allowed.discard("quantile")  # a summary's _sum and _count have no quantile
        for label, op, value in MATCHER.findall(body):
            if label not in allowed:
                fail(f"{where}: {name} has no label {label!r} (METRICS.md: {', '.join(sorted(metrics[base]['labels'])) or 'none'})")
                continue
            if label == "job" and "job_id" in metrics[base]["labels"] and "$" in value:
                fail(f"{where}: {name}{{job{op}\"{value}\"}}: the job id label is job_id (job is the scrape job)")
            values = metrics[base]["enums"].get(label) or enums.get(label)
            if not values or "$" in value:
                continue
            if op in ("=", "!="):
                wanted = [value]
            elif "(?" in value:
                continue  # flags (case-insensitive, ...): not a list of spellings
            else:  # =~ / !~: the alternatives that are plain names
                wanted = [v for v in value.split("|") if re.fullmatch(r"[\w.]+", v)]
            for v in wanted:
                if v not in values:
                    fail(f"{where}: {name}: {label}{op}\"{value}\": {v!r} is not one of {sorted(values)}")
    if per_job(text, metrics):
        for kw, labels in GROUPING.findall(text):
            names = {l.strip() for l in labels.split(",")}
            if "job" in names and "job_id" not in names:
                fail(f"{where}: {kw} ({labels}) on per-job series: the job id label is job_id, not job")


def check_job_templates(text, where, metrics, exprs_text):
    """{{job}} in a legend or $labels.job in an annotation next to per-job metrics."""
    if per_job(exprs_text, metrics) and re.search(r"\{\{\s*job\s*\}\}|\$labels\.job\b(?!_)", text):
        fail(f"{where}: {text!r} shows the scrape job, not the job id (job_id)")


def panels(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])


def rule_exprs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from rule_exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from rule_exprs(v)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    src = os.path.abspath(sys.argv[1])
    metrics, enums = parse_catalogue(os.path.join(src, "deploy/METRICS.md"))
    if len(metrics) < 10:
        fail(f"METRICS.md: found only {len(metrics)} metrics in its tables")
        return 1
    print(f"METRICS.md: {len(metrics)} metrics; enumerated labels: "
          + ", ".join(f"{k}={sorted(v)}" for k, v in sorted(enums.items())))

    in_panels, elsewhere = set(), set()
    for path in sorted(glob.glob(os.path.join(src, "deploy/grafana/dashboards/*.json"))):
        name = os.path.basename(path)
        with open(path) as f:
            dash = json.load(f)
        for p in panels(dash):
            for t in p.get("targets", []):
                check_expr(t.get("expr", ""), f"{name} panel {p.get('id')}", metrics, enums, in_panels)
                check_job_templates(t.get("legendFormat") or "", f"{name} panel {p.get('id')} legend",
                                    metrics, t.get("expr", ""))
        for v in dash.get("templating", {}).get("list", []):
            q = v.get("query")
            q = json.dumps(q) if isinstance(q, dict) else str(q or "")
            check_expr(q, f"{name} variable {v.get('name')}", metrics, enums, elsewhere)
    for path in sorted(glob.glob(os.path.join(src, "deploy/prometheus/rules/*.yml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        for expr in rule_exprs(doc):
            check_expr(expr, os.path.basename(path), metrics, enums, elsewhere)
        for group in (doc or {}).get("groups", []):
            for rule in group.get("rules", []):
                for key, text in (rule.get("annotations") or {}).items():
                    check_job_templates(text, f"{os.path.basename(path)} {rule.get('alert')} {key}",
                                        metrics, rule.get("expr", ""))
    for path in sorted(glob.glob(os.path.join(src, "deploy/prometheus/tests/*.yml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        for test in doc.get("tests", []):
            for s in test.get("input_series", []):
                check_expr(s["series"], f"{os.path.basename(path)} input series", metrics, enums, elsewhere)

    for name in sorted(set(metrics) - in_panels):
        fail(f"{name} (METRICS.md) is not shown by any dashboard panel")
    return verdict(failures, f"{len(in_panels)} of {len(metrics)} metrics shown by dashboard panels; every name used is catalogued")


if __name__ == "__main__":
    sys.exit(main())
