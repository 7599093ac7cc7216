#!/usr/bin/env bash
# tests/status_test.sh BLKLAB_BINARY
#
# fio's periodic output from `blklab fio` (registered as ctest cli.status;
# docs/fio-compatibility.md c): in virtual time,
#  - --status-interval=1 on a 2.5 s time_based run with json output gives 3
#    complete JSON objects (two interim reports and the final one), read
#    with python3's json.JSONDecoder.raw_decode, their read runtimes
#    growing and the last one the full run;
#  - the same with normal output prints the preamble ("fio-3.33",
#    "Starting ...") once and three "Run status group" blocks;
#  - --eta=always prints fio's progress line ("Jobs: 1 (f=1): [r(1)][..%]
#    [r=...][r=... IOPS][eta 00m:0Xs]", rewritten with \r) before the
#    report; --eta=auto with stdout not a terminal and --eta=never print
#    none.
set -u

BLKLAB=${1:?usage: status_test.sh BLKLAB_BINARY}

. "$(dirname "$0")/checks.sh"
checks_begin status

export SOURCE_DATE_EPOCH=1700000000
export TZ=UTC
[ -x "$BLKLAB" ] || { echo "FAIL: $BLKLAB is not executable" >&2; exit 1; }

# A rate-limited null-engine job: cheap to simulate for seconds of virtual time.
JOB=(--name=st --ioengine=null --rw=randread --bs=4k --iodepth=4 --rate_iops=5000)

# 1. --status-interval with json: 3 concatenated objects.
if "$BLKLAB" fio "${JOB[@]}" --status-interval=1 --runtime=2.5 --time_based \
    --output-format=json >"$TMP/si.json" 2>"$TMP/si.err"; then
  if python3 - "$TMP/si.json" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
dec = json.JSONDecoder()
objs, i = [], 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    objs.append(obj)
assert len(objs) == 3, f"{len(objs)} JSON objects, want 3"
for o in objs:
    assert o["fio version"] == "fio-3.33" and len(o["jobs"]) == 1, o.keys()
runtimes = [o["jobs"][0]["read"]["runtime"] for o in objs]
ios = [o["jobs"][0]["read"]["total_ios"] for o in objs]
assert runtimes[0] < runtimes[1] < runtimes[2], runtimes
assert ios[0] < ios[1] < ios[2], ios
assert 900 <= runtimes[0] <= 1000 and 1900 <= runtimes[1] <= 2000, runtimes
assert runtimes[2] == 2500, runtimes
print("runtimes", runtimes, "ios", ios)
EOF
  then
    pass "--status-interval=1 --runtime=2.5 json: 3 objects"
  else
    fail "--status-interval json output is not 3 growing JSON objects"
  fi
else
  fail "--status-interval json run exited non-zero: $(head -c 500 "$TMP/si.err")"
fi

# 2. --status-interval with normal output: one preamble, three reports.
if "$BLKLAB" fio "${JOB[@]}" --status-interval=1 --runtime=2.5 --time_based \
    >"$TMP/si.txt" 2>/dev/null; then
  n_ver=$(grep -c '^fio-3.33$' "$TMP/si.txt")
  n_start=$(grep -c '^Starting 1 process$' "$TMP/si.txt")
  n_group=$(grep -c '^Run status group 0 (all jobs):$' "$TMP/si.txt")
  n_entry=$(grep -c '^st: (groupid=0, jobs=1)' "$TMP/si.txt")
  if [ "$n_ver" = 1 ] && [ "$n_start" = 1 ] && [ "$n_group" = 3 ] && [ "$n_entry" = 3 ]; then
    pass "--status-interval normal: one preamble, three reports"
  else
    fail "--status-interval normal: fio-3.33 x$n_ver, Starting x$n_start, groups x$n_group, entries x$n_entry"
  fi
else
  fail "--status-interval normal run exited non-zero"
fi

# 3. --eta=always: the progress line appears (stdout is a file here).
if "$BLKLAB" fio "${JOB[@]}" --runtime=2 --time_based --eta=always >"$TMP/eta.txt" 2>/dev/null; then
  lines=$(tr '\r' '\n' <"$TMP/eta.txt" | grep -cE '^Jobs: 1 \(f=1\): \[r\(1\)\]\[[0-9]+\.[0-9]%\]\[r=[0-9.]+[KMG]?i?B/s\]\[r=[0-9.]+[kM]? IOPS\]\[eta [0-9]{2}m:[0-9]{2}s\] *$')
  if [ "$lines" -ge 2 ] && grep -q $'\r' "$TMP/eta.txt" && grep -q '^st: (groupid=0' "$TMP/eta.txt"; then
    pass "--eta=always: $lines progress lines, then the report"
  else
    fail "--eta=always: $lines progress lines: $(tr '\r' '\n' <"$TMP/eta.txt" | grep '^Jobs' | head -3)"
  fi
else
  fail "--eta=always run exited non-zero"
fi

# 4. No progress line when not asked for or not on a terminal.
for mode in auto never; do
  if "$BLKLAB" fio "${JOB[@]}" --runtime=1 --time_based --eta=$mode >"$TMP/eta-$mode.txt" 2>/dev/null &&
      ! grep -q 'Jobs:' "$TMP/eta-$mode.txt" && ! grep -q $'\r' "$TMP/eta-$mode.txt"; then
    pass "--eta=$mode with stdout not a terminal: no progress line"
  else
    fail "--eta=$mode printed a progress line (or failed)"
  fi
done

checks_end status
