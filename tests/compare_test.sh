#!/usr/bin/env bash
# tests/compare_test.sh BLKLAB_BINARY SOURCE_DIR
#
# `blklab compare` (registered as ctest cli.compare):
#  - the JSON of a comparison (variant x matrix x samples) is byte-identical
#    for --jobs=1 and --jobs=3;
#  - the baseline's cell equals a plain `blklab fio --seed=S` run of the same
#    host and job; a variant's cell equals a plain run on a host file with
#    the override written in; sample 1 equals a plain run with
#    --randseed=SEED+1, and differs from sample 0;
#  - a fio.KEY overlay wins over the job file's own value;
#  - the RC4 switches move IOPS and contention in their direction, and the
#    table, markdown and CSV forms carry the same cells;
#  - bad input names what is wrong (field, device, spec key), and every spec
#    under examples/compare/ passes --dry-run.
set -u

BLKLAB=${1:?usage: compare_test.sh BLKLAB_BINARY SOURCE_DIR}
SRC=${2:?usage: compare_test.sh BLKLAB_BINARY SOURCE_DIR}

. "$(dirname "$0")/checks.sh"
checks_begin compare

JOB=(--name=t --ioengine=io_uring --direct=1 --rw=randrw --bs=4k --iodepth=8 --runtime=20ms --time_based=1
     --output-format=json)
RC4=(--name=rc4 --filename=/dev/nullb0 --ioengine=io_uring --direct=1 --rw=randread --bs=512 --iodepth=4
     --iodepth_batch_submit=4 --iodepth_batch_complete=4 --fixedbufs=1 --norandommap --direct=1
     --numjobs=32 --thread --cpus_allowed_policy=split --group_reporting --ramp_time=2ms
     --runtime=10ms --time_based=1)

# 1. --jobs does not change a byte. (randrw: the random stream decides the
# read/write mix, so samples differ.)
ARGS=(--host=nvme-8cpu --seed=7 --samples=2 --variant before: --variant 'none:devices.nvme0n1.queue.scheduler=none'
      --matrix fio.iodepth=1,8 --format=json)
if "$BLKLAB" compare "${ARGS[@]}" --jobs=1 -- "${JOB[@]}" >"$TMP/j1.json" 2>"$TMP/j1.err" &&
   "$BLKLAB" compare "${ARGS[@]}" --jobs=3 -- "${JOB[@]}" >"$TMP/j3.json" 2>"$TMP/j3.err"; then
  if cmp -s "$TMP/j1.json" "$TMP/j3.json"; then
    pass "--jobs=1 and --jobs=3 give identical JSON"
  else
    fail "--jobs=1 and --jobs=3 differ: $(diff "$TMP/j1.json" "$TMP/j3.json" | head -5)"
  fi
else
  fail "compare failed: $(cat "$TMP/j1.err" "$TMP/j3.err")"
fi

# 2. Cells equal plain runs: the baseline, a host override, a sample.
"$BLKLAB" fio --host=nvme-8cpu --seed=7 "${JOB[@]}" --iodepth=8 >"$TMP/plain0.json" 2>/dev/null
"$BLKLAB" fio --host=nvme-8cpu --seed=7 "${JOB[@]}" --iodepth=8 --randseed=8 >"$TMP/plain1.json" 2>/dev/null
"$BLKLAB" hosts show nvme-8cpu >"$TMP/host.yaml"
python3 - "$TMP/host.yaml" "$TMP/none.yaml" <<'EOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
for dev in d["devices"]:
    if dev["name"] == "nvme0n1":
        dev.setdefault("queue", {})["scheduler"] = "none"
yaml.safe_dump(d, open(sys.argv[2], "w"))
EOF
"$BLKLAB" fio --host="$TMP/none.yaml" --seed=7 "${JOB[@]}" --iodepth=8 >"$TMP/plainn.json" 2>/dev/null
if python3 - "$TMP/j1.json" "$TMP/plain0.json" "$TMP/plain1.json" "$TMP/plainn.json" <<'EOF'
import json, sys
cmp = json.load(open(sys.argv[1]))
def plain(path):
    job = json.load(open(path))["jobs"][0]
    return sum(job[d]["iops"] for d in ("read", "write", "trim")), job["read"]["iops"]
def cell(variant, sample, depth="8"):
    for c in cmp["cells"]:
        if c["variant"] == variant and c["sample"] == sample and c["point"]["fio.iodepth"] == depth:
            return c
    raise SystemExit(f"no cell {variant} {sample} {depth}")
def same(c, path, what):
    total, read = plain(path)
    for a, b in ((c["iops"], total), (c["dir_iops"]["read"], read)):
        assert abs(a - b) <= 1e-6 * max(abs(b), 1), f"{what}: compare {a} vs plain fio {b}"
same(cell("before", 0), sys.argv[2], "baseline sample 0")
same(cell("before", 1), sys.argv[3], "baseline sample 1 (randseed=8)")
same(cell("none", 0), sys.argv[4], "variant none (scheduler=none host file)")
assert cell("before", 1)["randseed"] == 8, cell("before", 1)
assert cell("before", 0)["dir_iops"]["read"] != cell("before", 1)["dir_iops"]["read"], \
    "samples 0 and 1 ran the same random stream"
assert len(cmp["cells"]) == 8 and len(cmp["rows"]) == 4, (len(cmp["cells"]), len(cmp["rows"]))
assert cell("before", 0, "1")["iops"] < cell("before", 0, "8")["iops"], "fio.iodepth overlay had no effect"
rows = [r for r in cmp["rows"] if r["variant"] == "none"]
assert all(r["diff_pct"] is not None for r in rows), rows
EOF
then
  pass "baseline, variant and sample cells equal the plain blklab fio runs"
else
  fail "cells differ from plain runs"
fi

# 3. A fio.KEY overlay wins over the job file's own value.
cat >"$TMP/job.fio" <<'EOF'
[t]
ioengine=io_uring
direct=1
rw=randread
bs=4k
iodepth=1
runtime=20ms
time_based=1
EOF
if "$BLKLAB" compare --host=nvme-8cpu --variant 'file:' --variant 'qd16:fio.iodepth=16' --format=json -- "$TMP/job.fio" \
     >"$TMP/file.json" 2>"$TMP/file.err" &&
   python3 - "$TMP/file.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
base, qd16 = d["cells"][0], d["cells"][1]
assert d["baseline"] == "file" and base["variant"] == "file" and qd16["variant"] == "qd16", d["cells"]
assert qd16["iops"] > 3 * base["iops"], (base["iops"], qd16["iops"])
EOF
then
  pass "fio.iodepth=16 overrides the job file's iodepth=1"
else
  fail "fio overlay over a job file: $(cat "$TMP/file.err")"
fi

# 4. The RC4 switches, in every output form.
AFTER='after:knobs.dd_serialize_dispatch=true,knobs.dd_insert_side_lists=true,knobs.dd_skip_merge_if_contended=true'
for f in json table markdown csv; do
  "$BLKLAB" compare --host=rc4-desktop-7950x --variant before: --variant "$AFTER" --format=$f -- "${RC4[@]}" \
    >"$TMP/rc4.$f" 2>"$TMP/rc4.err" || fail "rc4 --format=$f: $(cat "$TMP/rc4.err")"
done
if python3 - "$TMP/rc4.json" "$TMP/rc4.csv" <<'EOF'
import csv, json, sys
d = json.load(open(sys.argv[1]))
before, after = d["rows"]
assert before["variant"] == "before" and after["variant"] == "after"
assert after["iops"] > 1.5 * before["iops"], (before["iops"], after["iops"])
assert before["contention_pct"] > 50 and after["contention_pct"] < 20, (before, after)
assert after["diff_pct"] > 50 and before["diff_pct"] is None
locks = {l["name"]: l for l in d["changes"][0]["locks"]}
assert locks["nullb0:dd->lock"]["variant_wait_ns_per_io"] < locks["nullb0:dd->lock"]["baseline_wait_ns_per_io"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert [r["variant"] for r in rows] == ["before", "after"], rows
assert abs(float(rows[1]["iops"]) - after["iops"]) < 0.01
EOF
then
  pass "RC4: after > before, contention down, dd->lock wait down; csv agrees with json"
else
  fail "RC4 comparison direction or forms"
fi
grep -q '^Variant  *IOPS  *p50  *p99  *kernel CPU  *fio usr/sys  *contention  *diff' "$TMP/rc4.table" &&
  grep -q '^=====' "$TMP/rc4.table" && grep -q '^baseline: before (every diff is against it)' "$TMP/rc4.table" &&
  grep -q 'what changed most' "$TMP/rc4.table" && pass "table layout" || fail "table layout: $(head -12 "$TMP/rc4.table")"
grep -q '^| Variant | IOPS | p50 | p99 | kernel CPU | fio usr/sys | contention | diff |$' "$TMP/rc4.markdown" &&
  grep -q 'baseline \*\*before\*\*' "$TMP/rc4.markdown" && pass "markdown table" ||
  fail "markdown table: $(head -8 "$TMP/rc4.markdown")"

# 5. Bad input names what is wrong.
expect_error() {  # WHAT PATTERN ARGS...
  local what=$1 pattern=$2
  shift 2
  if "$BLKLAB" compare "$@" >"$TMP/e.out" 2>"$TMP/e.err"; then
    fail "$what: accepted"
  elif grep -q -- "$pattern" "$TMP/e.err"; then
    pass "$what: $(head -1 "$TMP/e.err")"
  else
    fail "$what: error does not mention '$pattern': $(cat "$TMP/e.err")"
  fi
}
expect_error "misspelt knob" "dd_serialise_dispatch" --host=rc4-desktop-7950x \
  --variant 'x:knobs.dd_serialise_dispatch=true' -- "${RC4[@]}"
expect_error "unknown device" "no item 'sdz'" --host=rc4-desktop-7950x \
  --variant 'x:devices.sdz.queue.scheduler=none' -- "${RC4[@]}"
expect_error "bad fio overlay" "iodepth" --host=nvme-8cpu --variant 'x:fio.iodepth=lots' -- "${JOB[@]}"
expect_error "no fio arguments" "no fio arguments" --host=nvme-8cpu
expect_error "unknown baseline" "baseline 'zz'" --host=nvme-8cpu --baseline=zz -- "${JOB[@]}"
expect_error "t/io_uring -r1" "needs -r2 or more" --host=rc2-io_uring-core --tool=io_uring -- -r1 /dev/nvme0n1
# blklabd runs fio cells only: the client refuses before it connects.
if "$BLKLAB" --server 127.0.0.1:1 compare --host=rc2-io_uring-core --tool=io_uring -- -r2 /dev/nvme0n1 \
     >"$TMP/e.out" 2>"$TMP/e.err"; then
  fail "remote t/io_uring comparison: accepted"
elif grep -q -- "blklabd runs fio comparisons only" "$TMP/e.err"; then
  pass "remote t/io_uring comparison: $(head -1 "$TMP/e.err")"
else
  fail "remote t/io_uring comparison: $(cat "$TMP/e.err")"
fi
printf 'host: nvme-8cpu\nfio: [--name=t]\nvariant: {}\n' >"$TMP/bad.yaml"
expect_error "unknown spec field" "unknown field 'variant'" "$TMP/bad.yaml"

# 6. The reference-case specs are valid.
for spec in "$SRC"/examples/compare/*.yaml; do
  if "$BLKLAB" compare "$spec" --dry-run >"$TMP/dry.out" 2>"$TMP/dry.err"; then
    pass "$(basename "$spec") --dry-run: $(grep -c '^cell ' "$TMP/dry.out") cells"
  else
    fail "$(basename "$spec") --dry-run: $(cat "$TMP/dry.err")"
  fi
done

# 7. A stalled cell is a result: RC3's shortcut against the kernel as merged.
if "$BLKLAB" compare "$SRC/examples/compare/rc3-shortcut-stall.yaml" --format=json >"$TMP/stall.json" \
     2>"$TMP/stall.err" &&
   python3 - "$TMP/stall.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
cells = {c["variant"]: c for c in d["cells"]}
assert cells["merged"]["stalled"] is None and cells["merged"]["iops"] > 0, cells["merged"]
assert "parked on hctx->dispatch" in cells["shortcut"]["stalled"], cells["shortcut"]
rows = {r["variant"]: r for r in d["rows"]}
assert rows["shortcut"]["stalled"] and rows["shortcut"]["diff_pct"] is None
assert not rows["merged"]["stalled"]
EOF
then
  pass "rc3-shortcut-stall: the shortcut's cell is reported stalled, the merged one runs"
else
  fail "rc3-shortcut-stall: $(head -c 400 "$TMP/stall.err")"
fi

# 8. --plot: well-formed SVGs with one bar per row (a stalled row has none
# and says so), one latency curve per row that ran, and an HTML report that
# holds the table and the charts (five, the sweeps, fio's bw log). Samples draw min-max whiskers (Poisson
# arrivals: each sample's seed gives another count).
if "$BLKLAB" compare "$SRC/examples/compare/rc3-shortcut-stall.yaml" --plot="$TMP/plot-stall" >/dev/null \
     2>"$TMP/plot.err" &&
   "$BLKLAB" compare --host=nvme-8cpu --samples=2 --variant default: \
     --variant 'none:devices.nvme0n1.queue.scheduler=none' --matrix fio.iodepth=1,8 --plot="$TMP/plot" -- --name=t --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
     --rate_iops=20000 --rate_process=poisson --runtime=20ms --time_based=1 --write_bw_log=l --log_avg_msec=5 \
     >"$TMP/plot.out" 2>>"$TMP/plot.err" &&
   python3 - "$TMP/plot" "$TMP/plot-stall" <<'EOF'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
def svg(d, name):
    return ET.parse(f"{d}/{name}").getroot()
def bars(root, cls="bar"):
    return [e for e in root.iter(NS + "rect") if e.get("class") == cls]
# Two points x two variants ("default" as given, and "none").
d = sys.argv[1]
for name in ("iops.svg", "contention.svg", "cpu.svg"):
    assert len(bars(svg(d, name))) == 4, (name, len(bars(svg(d, name))))
assert len([e for e in svg(d, "iops.svg").iter(NS + "path") if e.get("class") == "whisker"]) >= 1
assert len(list(svg(d, "latency.svg").iter(NS + "polyline"))) == 4
# The iodepth sweep: one line per variant through both depths.
for name in ("iops-vs-iodepth.svg", "p99-vs-iodepth.svg"):
    lines = [e for e in svg(d, name).iter(NS + "polyline") if e.get("class") == "series"]
    assert len(lines) == 2 and all(len(e.get("points").split()) == 2 for e in lines), name
html = open(f"{d}/report.html").read()
assert html.count("<svg ") == 8 and "<pre>" in html and "IOPS" in html
# fio's averaged bw log over time: one line per row, a point per 5 ms window.
logs = [e for e in svg(d, "log-bw.svg").iter(NS + "polyline") if e.get("class") == "series"]
assert len(logs) == 4 and all(3 <= len(e.get("points").split()) <= 5 for e in logs), [e.get("points") for e in logs]
# The latency histogram: one outline per row, on a log axis with decades.
hist = svg(d, "latency-histogram.svg")
assert len([e for e in hist.iter(NS + "polyline") if e.get("class") == "hist"]) == 4
assert any(e.text in ("1 us", "10 us", "100 us") for e in hist.iter(NS + "text"))
# Flame graphs: one per row, a differential one per row of the variant, the
# folded stacks; all linked from the report.
import glob, os, re
flames = sorted(f for f in glob.glob(f"{d}/flame-*.svg") if not os.path.basename(f).startswith("flame-diff-"))
diffs = sorted(glob.glob(f"{d}/flame-diff-*.svg"))
folded = sorted(glob.glob(f"{d}/*.folded"))
assert (len(flames), len(diffs), len(folded)) == (4, 2, 4), (flames, diffs, folded)
for f in flames + diffs:
    root = ET.parse(f).getroot()
    assert len([g for g in root.iter(NS + "g") if g.get("class") == "frame"]) > 10, f
    assert "blk_mq_submit_bio" in open(f).read(), f
for f in folded:
    lines = open(f).read().splitlines()
    assert lines and all(re.fullmatch(r"[^ ].* [0-9]+", l) for l in lines), f
    assert any(l.startswith("fio/t;__x64_sys_io_uring_enter;") for l in lines), f
for f in flames + diffs + folded:
    assert f'href="{os.path.basename(f)}"' in html, f
# RC3's stall: the merged kernel runs, the shortcut stalls.
s = sys.argv[2]
root = svg(s, "iops.svg")
assert len(bars(root)) == 1
assert [e.text for e in root.iter(NS + "text") if e.get("class") == "stalled"] == ["stalled"]
assert len(list(svg(s, "latency.svg").iter(NS + "polyline"))) == 1
EOF
   "$BLKLAB" compare --host=nvme-8cpu --matrix fio.iodepth=1,8 --matrix fio.numjobs=1,2 --plot="$TMP/plot-grid" \
     -- --name=t --ioengine=io_uring --direct=1 --rw=randread --bs=4k --runtime=10ms --time_based=1 >/dev/null \
     2>>"$TMP/plot.err" &&
   python3 - "$TMP/plot-grid" <<'EOF'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(f"{sys.argv[1]}/grid.svg").getroot()
cells = [e for e in root.iter(NS + "rect") if e.get("class") == "cell"]
assert len(cells) == 4, len(cells)  # one variant (the baseline) x 2 iodepths x 2 numjobs
assert open(f"{sys.argv[1]}/report.html").read().count("<svg ") == 8
EOF
then
  pass "--plot: five files, one bar per row, whiskers for samples, stalled rows marked, a qd x numjobs grid, flame graphs"
else
  fail "--plot: $(head -c 600 "$TMP/plot.err")"
fi

# 9. A fleet inventory: the job on every host type, the types ranked by each
# variant's change; a cell equals the plain run on that host type.
if "$BLKLAB" compare "$SRC/examples/fleet/mq-deadline.yaml" --jobs=2 >"$TMP/fleet.txt" 2>"$TMP/fleet.err" &&
   "$BLKLAB" compare "$SRC/examples/fleet/mq-deadline.yaml" --jobs=1 --format=json >"$TMP/fleet.json" \
     2>>"$TMP/fleet.err" &&
   "$BLKLAB" fio --host="$SRC/examples/hosts/nvme-8cpu.yaml" --name=t --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
     --iodepth=4 --numjobs=16 --thread --cpus_allowed_policy=split --direct=1 --group_reporting --ramp_time=5ms \
     --runtime=20ms --time_based=1 --output-format=json >"$TMP/fleet-plain.json" 2>>"$TMP/fleet.err" &&
   python3 - "$TMP/fleet.txt" "$TMP/fleet.json" "$TMP/fleet-plain.json" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
d = json.load(open(sys.argv[2]))
plain = json.load(open(sys.argv[3]))
types = ["desktop-null", "nvme-8cpu", "zen4-32t", "raid-2node"]
assert len(d["cells"]) == 12, len(d["cells"])
assert sorted({c["point"]["host"] for c in d["cells"]}) == sorted(types)
for v in ("mq-deadline", "mq-deadline-6.9"):
    head = f"{v} vs none: host types by IOPS change, largest gain first\n"
    assert head in text, head
    block = text.split(head, 1)[1].split("\n\n", 1)[0].splitlines()
    pcts = [float(re.match(r"\s*([-+][0-9.]+)%", l).group(1)) for l in block]
    assert len(pcts) == 4 and pcts == sorted(pcts, reverse=True), block
cell = [c for c in d["cells"] if c["variant"] == "none" and c["point"]["host"] == "nvme-8cpu"][0]
assert abs(cell["iops"] - plain["jobs"][0]["read"]["iops"]) < 1e-6 * cell["iops"], (cell["iops"], plain["jobs"][0]["read"]["iops"])
EOF
then
  pass "--fleet: every host type, ranked by the variants' change; a cell is the plain run on its host type"
else
  fail "--fleet: $(head -c 600 "$TMP/fleet.err")"
fi
printf 'hosts: {a: default}\nextra: 1\n' >"$TMP/bad-fleet.yaml"
if ! "$BLKLAB" compare --fleet="$TMP/bad-fleet.yaml" -- --name=t --runtime=1ms >/dev/null 2>"$TMP/bad-fleet.err" &&
   grep -q "bad-fleet.yaml:line 2, column 1: unknown field 'extra'" "$TMP/bad-fleet.err" &&
   ! "$BLKLAB" compare --fleet="$TMP/bad-fleet.yaml" --host=default -- --name=t >/dev/null 2>>"$TMP/bad-fleet.err" &&
   grep -q -- "--host and --fleet: give one" "$TMP/bad-fleet.err"; then
  pass "--fleet: a bad inventory names the file and field; --host with --fleet is refused"
else
  fail "--fleet bad input: $(head -c 600 "$TMP/bad-fleet.err")"
fi

# Exit codes: how the command line is written is a usage error (2, with the
# usage); a value it gives that is wrong is an error (1).
rc_unknown=0; "$BLKLAB" compare --bogus -- --name=t >/dev/null 2>"$TMP/usage.err" || rc_unknown=$?
rc_novalue=0; "$BLKLAB" compare --seed >/dev/null 2>/dev/null || rc_novalue=$?
rc_jobs=0; "$BLKLAB" compare --jobs=x -- --name=t >/dev/null 2>/dev/null || rc_jobs=$?
rc_samples=0; "$BLKLAB" compare --samples=0 -- --name=t >/dev/null 2>/dev/null || rc_samples=$?
if [ "$rc_unknown" = 2 ] && [ "$rc_novalue" = 2 ] && grep -q "^usage: blklab compare" "$TMP/usage.err" &&
   [ "$rc_jobs" = 1 ] && [ "$rc_samples" = 1 ]; then
  pass "usage errors exit 2 with the usage, bad values exit 1"
else
  fail "exit codes: unknown option $rc_unknown, missing value $rc_novalue, --jobs=x $rc_jobs, --samples=0 $rc_samples"
fi

checks_end compare
