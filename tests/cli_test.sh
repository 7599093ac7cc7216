#!/usr/bin/env bash
# tests/cli_test.sh BLKLAB_BINARY SOURCE_DIR
#
# Smoke test of the `blklab fio` command line (registered as ctest cli.smoke):
#  - the demo job's JSON output parses (python3's json module) and has fio's
#    top-level keys plus blklab's;
#  - with SOURCE_DATE_EPOCH set, two runs are byte-identical;
#  - a bad option exits non-zero and names the option on stderr;
#  - --output=FILE writes the report to FILE and nothing to stdout;
#  - fio's own fio_jsonplus_clat2csv --validate accepts json+ output (a failure
#    when the tool is missing: scripts/setup installs fio);
#  - SIGINT during a run: fio's "fio: terminating on signal 2", exit value
#    128, and the report of the work done so far;
#  - blklab --help names comparisons, compare --plot and jobs get --fio=.
set -u

BLKLAB=${1:?usage: cli_test.sh BLKLAB_BINARY SOURCE_DIR}
SRC=${2:?usage: cli_test.sh BLKLAB_BINARY SOURCE_DIR}
JOB="$SRC/examples/jobs/demo.fio"
# The checks here are about the command line, not throughput: a quarter of a
# second of virtual time keeps the test short under AddressSanitizer too.
SHORT=--runtime=250ms

. "$(dirname "$0")/checks.sh"
checks_begin cli

export SOURCE_DATE_EPOCH=1700000000
export TZ=UTC

[ -x "$BLKLAB" ] || { echo "FAIL: $BLKLAB is not executable" >&2; exit 1; }
[ -f "$JOB" ] || { echo "FAIL: $JOB not found" >&2; exit 1; }

# 1. JSON output parses and has fio's structure.
if "$BLKLAB" fio "$JOB" $SHORT --output-format=json >"$TMP/a.json" 2>"$TMP/a.err"; then
  if python3 - "$TMP/a.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
want = ["fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs"]
keys = list(d.keys())
assert keys[:len(want)] == want, keys
assert d["timestamp"] == 1700000000, d["timestamp"]
assert d["fio version"] == "fio-3.33", d["fio version"]
assert len(d["jobs"]) == 1 and d["jobs"][0]["jobname"] == "randread-qd32", d["jobs"][0].get("jobname")
assert d["jobs"][0]["read"]["total_ios"] > 0
assert "blklab" in d and any(r["function"] == "blk_mq_submit_bio" for r in d["blklab"]["profile"])
EOF
  then
    pass "json output parses with fio's keys"
  else
    fail "json output does not parse or lacks fio's keys"
  fi
else
  fail "blklab fio $JOB --output-format=json exited $? ($(head -c 500 "$TMP/a.err"))"
fi

# 1b. The virtual-time limit (1 h) is named when a job asks for more, and
# --max-virtual-time moves it: a 2 h runtime that one 4 KiB read ends.
LONG=(--name=long --filename=/dev/nvme0n1 --rw=read --bs=4k --size=4k --runtime=2h)
"$BLKLAB" fio --host=nvme-8cpu "${LONG[@]}" >/dev/null 2>"$TMP/long.err"
if grep -q "exceeds the virtual-time limit of 3600 s (blklab fio --max-virtual-time=TIME raises it" "$TMP/long.err" &&
   "$BLKLAB" fio --host=nvme-8cpu --max-virtual-time=3h "${LONG[@]}" --output-format=terse >/dev/null 2>&1 &&
   ! "$BLKLAB" fio --host=nvme-8cpu --max-virtual-time=soon "${LONG[@]}" >/dev/null 2>&1; then
  pass "--max-virtual-time moves the virtual-time limit the error names"
else
  fail "virtual-time limit: $(head -c 300 "$TMP/long.err")"
fi

# 2. Two runs with SOURCE_DATE_EPOCH are byte-identical.
if "$BLKLAB" fio "$JOB" $SHORT --output-format=json >"$TMP/b.json" 2>/dev/null && cmp -s "$TMP/a.json" "$TMP/b.json"; then
  pass "two runs are byte-identical"
else
  fail "two runs differ: $(cmp "$TMP/a.json" "$TMP/b.json" 2>&1 | head -1)"
fi
[ -s "$TMP/a.json" ] || fail "empty json output"

# 3. A bad option: non-zero exit, the option named on stderr.
"$BLKLAB" fio "$JOB" $SHORT --output-format=json --no_such_option=3 >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q "no_such_option" "$TMP/bad.err"; then
  pass "bad option exits $rc and is named on stderr"
else
  fail "bad option: exit $rc, stderr: $(head -c 300 "$TMP/bad.err")"
fi
# A bad option inside a job file too.
printf '[global]\nioengine=io_uring\nruntime=10ms\ntime_based=1\n[j]\nbogus_knob=1\n' >"$TMP/bad.fio"
"$BLKLAB" fio "$TMP/bad.fio" >/dev/null 2>"$TMP/bad2.err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q "bogus_knob" "$TMP/bad2.err"; then
  pass "bad job-file option exits $rc and is named on stderr"
else
  fail "bad job-file option: exit $rc, stderr: $(head -c 300 "$TMP/bad2.err")"
fi

# 4. --output=FILE writes the file (and not stdout).
"$BLKLAB" fio "$JOB" $SHORT --output-format=json --output="$TMP/out.json" >"$TMP/out.stdout" 2>"$TMP/out.err"
rc=$?
if [ "$rc" -eq 0 ] && [ -s "$TMP/out.json" ] && [ ! -s "$TMP/out.stdout" ] && cmp -s "$TMP/out.json" "$TMP/a.json"; then
  pass "--output=FILE writes the report to the file"
else
  fail "--output=FILE: exit $rc, file $(wc -c <"$TMP/out.json" 2>/dev/null || echo missing) bytes, stdout $(wc -c <"$TMP/out.stdout") bytes"
fi

# 5. fio's json+ checker accepts json+ output: first write the CSV files,
# then --validate rebuilds the bins from them and compares with the json+
# (it prints "stub_job0 validated", or "mismatch:"/an AssertionError).
if command -v fio_jsonplus_clat2csv >/dev/null 2>&1; then
  if "$BLKLAB" fio "$JOB" $SHORT --output-format=json+ --output="$TMP/plus.json" 2>"$TMP/plus.err"; then
    mkdir -p "$TMP/csv"
    (cd "$TMP/csv" &&
      fio_jsonplus_clat2csv "$TMP/plus.json" "$TMP/csv/stub" &&
      fio_jsonplus_clat2csv --validate "$TMP/plus.json" "$TMP/csv/stub") >"$TMP/validate.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q "stub_job0 validated" "$TMP/validate.log" &&
       ! grep -qi "mismatch\|traceback" "$TMP/validate.log"; then
      pass "fio_jsonplus_clat2csv --validate accepts json+ output"
    else
      fail "fio_jsonplus_clat2csv --validate (exit $rc): $(head -c 500 "$TMP/validate.log")"
    fi
  else
    fail "json+ run failed: $(head -c 300 "$TMP/plus.err")"
  fi
else
  fail "fio_jsonplus_clat2csv not installed (scripts/setup installs fio)"
fi

# 6. fio's informational options: --showcmd prints the job file back as fio
# 3.33 does, --cmdhelp describes an option, --parse-only accepts and exits.
if "$BLKLAB" fio --showcmd "$JOB" >"$TMP/showcmd.txt" 2>"$TMP/showcmd.err" &&
   grep -q -- "--name=" "$TMP/showcmd.txt"; then
  if command -v fio >/dev/null 2>&1; then
    if fio --showcmd "$JOB" 2>/dev/null | cmp -s - "$TMP/showcmd.txt"; then
      pass "--showcmd equals fio --showcmd"
    else
      fail "--showcmd differs from fio: $(cat "$TMP/showcmd.txt")"
    fi
  else
    pass "--showcmd prints a command line"
  fi
else
  fail "--showcmd: $(head -c 300 "$TMP/showcmd.err")"
fi
if "$BLKLAB" fio --cmdhelp=iodepth | grep -q "default: 1"; then
  pass "--cmdhelp=iodepth"
else
  fail "--cmdhelp=iodepth does not show the default"
fi
if "$BLKLAB" fio --parse-only "$JOB" >"$TMP/parse.out" 2>&1 && [ ! -s "$TMP/parse.out" ]; then
  pass "--parse-only accepts the demo job silently"
else
  fail "--parse-only: $(head -c 300 "$TMP/parse.out")"
fi

# SIGINT stops a (virtually) hour-long run: fio's line, exit 128, a report.
timeout --preserve-status -s INT 2 "$BLKLAB" fio --name=t --ioengine=io_uring --direct=1 --rw=randread --iodepth=8 \
  --runtime=3600 --time_based >"$TMP/int.out" 2>"$TMP/int.err"
rc=$?
if [ "$rc" -eq 128 ] && grep -q '^fio: terminating on signal 2$' "$TMP/int.out" &&
   grep -q '^Run status group 0 (all jobs):' "$TMP/int.out" && grep -q 'read: IOPS=' "$TMP/int.out"; then
  pass "SIGINT: terminating line, exit 128, partial report"
else
  fail "SIGINT: exit $rc, output: $(head -5 "$TMP/int.out") $(cat "$TMP/int.err")"
fi

# RC3's correctness example: the rejected shortcut strands a request; the
# run fails (exit 1) as a stall naming where it waits, without hanging.
"$BLKLAB" fio --host="$SRC/examples/hosts/rc3-shortcut-stall.yaml" "$SRC/examples/jobs/rc3-stall.fio" \
  >"$TMP/stall.out" 2>"$TMP/stall.err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'simulated I/O stalled' "$TMP/stall.err" &&
   grep -q 'parked on hctx->dispatch of hctx [0-9]* (SCHED_RESTART set, no queue run or delayed run pending)' \
     "$TMP/stall.err"; then
  pass "RC3 shortcut example: a stall naming the parked request"
else
  fail "RC3 shortcut example: exit $rc, $(head -c 400 "$TMP/stall.err")"
fi

# scripts/install puts blklab and blklabd in PREFIX/bin, runnable by name
# (the full build has both; an engine-only build has no server to install).
BIN_DIR=$(cd "$(dirname "$BLKLAB")/../.." && pwd)
if [[ -x $BIN_DIR/server/blklabd ]]; then
  if BUILD_DIR="$BIN_DIR" "$SRC/scripts/install" "$TMP/prefix" >"$TMP/install.out" 2>&1 &&
     [[ -x $TMP/prefix/bin/blklabd ]] &&
     PATH="$TMP/prefix/bin:$PATH" blklab hosts list 2>/dev/null | grep -q '^default'; then
    pass "scripts/install: blklab and blklabd in PREFIX/bin, blklab runs by name"
  else
    fail "scripts/install: $(cat "$TMP/install.out")"
  fi
else
  pass "scripts/install: checked in the full build (no blklabd in $BIN_DIR)"
fi

# fio's --help / -h: the usage on stdout, exit 0, without a job.
for h in --help -h; do
  if "$BLKLAB" fio "$h" >"$TMP/help.out" 2>"$TMP/help.err" && grep -q -- "--output-format=" "$TMP/help.out" \
     && grep -q -- "--host=" "$TMP/help.out"; then
    pass "blklab fio $h prints the usage"
  else
    fail "blklab fio $h: $(head -c 300 "$TMP/help.err")"
  fi
done

# blklab's own --help names every command and the options of each: the
# remote comparisons verb, compare --plot and jobs get --fio= among them.
if "$BLKLAB" --help >"$TMP/blklab-help.out" 2>"$TMP/blklab-help.err" &&
   grep -q -- '--server ADDR comparisons list|get ID|output ID' "$TMP/blklab-help.out" &&
   grep -q -- 'blklab compare SPEC.yaml .*--plot=DIR' "$TMP/blklab-help.out" &&
   grep -q -- '--format=table|markdown|csv|json\] \[--plot=DIR\] -- FIO-ARGS' "$TMP/blklab-help.out" &&
   grep -q -- 'jobs list .*get ID \[--fio=normal|json|terse\]' "$TMP/blklab-help.out"; then
  pass "blklab --help names comparisons, compare --plot and jobs get --fio="
else
  fail "blklab --help: $(cat "$TMP/blklab-help.out" "$TMP/blklab-help.err" | head -c 2000)"
fi

# --folded / --flame: CPU time by call stack, folded and as an SVG flame
# graph; the report is the same as without them.
if "$BLKLAB" fio --name=t --filename=/dev/nullb0 --ioengine=libaio --direct=1 --rw=randread --iodepth=8 --runtime=20ms \
     --time_based --output-format=json --folded="$TMP/st.folded" --flame="$TMP/st.svg" >"$TMP/st.json" 2>"$TMP/st.err" &&
   "$BLKLAB" fio --name=t --filename=/dev/nullb0 --ioengine=libaio --direct=1 --rw=randread --iodepth=8 --runtime=20ms \
     --time_based --output-format=json >"$TMP/st-plain.json" 2>>"$TMP/st.err" &&
   cmp -s "$TMP/st.json" "$TMP/st-plain.json" &&
   grep -q '^fio/t;__x64_sys_io_submit;blk_mq_submit_bio;[^ ]* [0-9][0-9]*$' "$TMP/st.folded" &&
   grep -q '^fio/t;__x64_sys_io_getevents;[^ ]* [0-9][0-9]*$' "$TMP/st.folded" &&
   python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$TMP/st.svg"; then
  pass "--folded and --flame write the call stacks; the report does not change"
else
  fail "--folded/--flame: $(head -c 300 "$TMP/st.err"; head -5 "$TMP/st.folded" 2>/dev/null)"
fi

# Options that change what a job does but are not modelled are refused by
# name, never run without them.
for opt in --verify_only --trim_percentage=10; do
  if "$BLKLAB" fio --name=t --filename=/dev/nullb0 --rw=randwrite --size=1m --verify=md5 "$opt" >/dev/null 2>"$TMP/refuse.err"; then
    fail "$opt ran"
  elif grep -q -- "${opt#--}" "$TMP/refuse.err" && grep -q "not modelled" "$TMP/refuse.err"; then
    pass "$opt is refused by name"
  else
    fail "$opt: $(head -c 300 "$TMP/refuse.err")"
  fi
done

# verify=: a failed check prints fio's messages, the job's err=84 line and
# exits with fio's exit value (one per failed job).
"$BLKLAB" fio --name=v --filename=/dev/nullb0 --rw=read --bs=4k --size=64k --verify=md5 --ioengine=libaio --direct=1 \
  --iodepth=4 --direct=1 >"$TMP/verify.out" 2>"$TMP/verify.err"
rc=$?
if [ "$rc" = 1 ] &&
   grep -q '^verify: bad magic header 0, wanted acca at file /dev/nullb0 offset 0, length 4096' "$TMP/verify.err" &&
   grep -q '^fio: pid=[0-9]*, err=84/file:io_u.c:2190, func=io_u_queued_complete' "$TMP/verify.out" &&
   grep -q '^v: (groupid=0, jobs=1): err=84 (file:io_u.c:2190, func=io_u_queued_complete, error=Invalid or incomplete multibyte or wide character): pid=' "$TMP/verify.out"; then
  pass "a failed verify reports as fio (messages, err=84, exit 1)"
else
  fail "failed verify: exit $rc; $(head -c 300 "$TMP/verify.err"; head -c 300 "$TMP/verify.out")"
fi

# --host=auto: a host built from the devices the job names, with the
# kernel's defaults; `blklab hosts auto` prints it, and the printed spec run
# as --host=FILE gives the same bytes. A regular file is refused by name.
cat >"$TMP/auto.fio" <<'EOF'
[global]
ioengine=io_uring
direct=1
rw=randread
bs=4k
iodepth=16
runtime=20ms
time_based=1
[nvme]
filename=/dev/nvme0n1
[sata]
filename=/dev/sdb
EOF
if "$BLKLAB" hosts auto "$TMP/auto.fio" >"$TMP/auto.yaml" 2>"$TMP/auto.err" &&
   grep -q '^  - name: nvme0n1$' "$TMP/auto.yaml" && grep -q '^  - name: sdb$' "$TMP/auto.yaml" &&
   "$BLKLAB" fio --host=auto "$TMP/auto.fio" --output-format=json >"$TMP/auto.json" 2>>"$TMP/auto.err" &&
   "$BLKLAB" fio --host="$TMP/auto.yaml" "$TMP/auto.fio" --output-format=json >"$TMP/auto-file.json" 2>>"$TMP/auto.err" &&
   cmp -s "$TMP/auto.json" "$TMP/auto-file.json" &&
   python3 - "$TMP/auto.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [j["jobname"] for j in d["jobs"]] == ["nvme", "sata"], d["jobs"]
assert all(j["read"]["total_ios"] > 0 for j in d["jobs"])
assert [u["name"] for u in d["disk_util"]] == ["nvme0n1", "sdb"], d.get("disk_util")
PY
then
  pass "--host=auto builds one device per named device; hosts auto prints the same host"
else
  fail "--host=auto: $(head -c 400 "$TMP/auto.err")"
fi
# A regular file: --host=auto mounts an ext4 root filesystem for it; each
# direct I/O pays the filesystem's mapping (iomap_dio_rw). A /dev name
# blklab has no model for is refused by name.
if "$BLKLAB" fio --host=auto --name=t --filename=/tmp/testfile --size=64m --direct=1 --rw=randread \
     --runtime=10ms --time_based=1 --output-format=json >"$TMP/auto-fs.json" 2>"$TMP/auto-fs.err" &&
   python3 - "$TMP/auto-fs.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["jobs"][0]["read"]["total_ios"] > 0
assert any(r["function"] == "iomap_dio_rw" for r in d["blklab"]["profile"]), "no filesystem cost"
PY
then
  pass "--host=auto runs a job on a regular file through an ext4 root filesystem"
else
  fail "--host=auto, regular file: $(head -c 300 "$TMP/auto-fs.err")"
fi
if "$BLKLAB" fio --host=auto --name=t --filename=/dev/vda --rw=read --size=1m >/dev/null 2>"$TMP/auto-vda.err"; then
  fail "--host=auto ran a job on /dev/vda"
elif grep -q 'filename=/dev/vda: not a kind of block device blklab models' "$TMP/auto-vda.err"; then
  pass "--host=auto refuses a device kind it has no model for, by name"
else
  fail "--host=auto, /dev/vda: $(head -c 300 "$TMP/auto-vda.err")"
fi

# A long run says so up front (after one simulated second), with an
# estimate; SIGINT then stops it and fio's report of what ran follows.
timeout -s INT 6 "$BLKLAB" fio --name=t --ioengine=io_uring --direct=1 --rw=randread --iodepth=32 \
  --runtime=300 --time_based --eta=always >"$TMP/long.out" 2>"$TMP/long.err"
if grep -Eq '^blklab: 29[0-9]\.[0-9] s of virtual time left at [0-9.]+ s of wall time per simulated second: about ' \
     "$TMP/long.err" && grep -q 'terminating on signal' "$TMP/long.out"; then
  pass "a long run gives its wall-time estimate up front"
else
  fail "long run estimate: $(head -c 300 "$TMP/long.err")"
fi
# ... but not to a script (stderr not a terminal, no --eta=always), which
# may check, as fio's own tests do, that stderr stays empty.
timeout -s INT 3 "$BLKLAB" fio --name=t --ioengine=io_uring --direct=1 --rw=randread --iodepth=32 \
  --runtime=300 --time_based >/dev/null 2>"$TMP/long-quiet.err"
if grep -q 'of virtual time left' "$TMP/long-quiet.err"; then
  fail "the long-run estimate went to a stderr that is not a terminal"
else
  pass "the long-run estimate stays off a script's stderr"
fi

checks_end CLI
