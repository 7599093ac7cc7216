#!/usr/bin/env bash
# tests/io_uring_test.sh BLKLAB_BINARY
#
# `blklab io_uring` (fio's t/io_uring, simulated) through the CLI:
#  - -rN prints the tool's startup lines, N-1 per-second lines in its
#    formats, "Exiting on timeout" and "Maximum IOPS=";
#  - the same command gives the same bytes twice (determinism);
#  - --output-format=json has the per-second samples and blklab's report;
#  - legacy aio says what it turns off; sync counts no reaps;
#  - Ctrl-C (SIGINT) ends an unbounded run with "Exiting on signal";
#  - usage and errors as the tool gives them.
set -u
BLKLAB=${1:?usage: io_uring_test.sh BLKLAB_BINARY}
. "$(dirname "$0")/checks.sh"
checks_begin io_uring

out="$TMP/r3.txt"
"$BLKLAB" io_uring --host=nvme-8cpu -d32 -s8 -c8 -p0 -b4096 -r3 /dev/nvme0n1 >"$out" 2>"$TMP/r3.err" || fail "r3 run exit $?: $(cat "$TMP/r3.err")"
head -1 "$out" | grep -qE '^submitter=0, tid=[0-9]+, file=/dev/nvme0n1, node=-1$' && pass "submitter line" || fail "submitter line: $(head -1 "$out")"
sed -n 2p "$out" | grep -qx 'polled=0, fixedbufs=1/0, register_files=1, buffered=0, QD=32' && pass "settings line" || fail "settings line: $(sed -n 2p "$out")"
sed -n 3p "$out" | grep -qx 'Engine=io_uring, sq_ring=32, cq_ring=32' && pass "engine line" || fail "engine line: $(sed -n 3p "$out")"
n=$(grep -cE '^IOPS=[0-9.]+[KM]?, BW=[0-9.]+(MiB|GiB)/s, IOS/call=[0-9]+/[0-9]+$' "$out")
[ "$n" = 2 ] && pass "-r3 prints 2 per-second lines" || fail "-r3 printed $n per-second lines: $(cat "$out")"
grep -qx 'Exiting on timeout' "$out" && pass "exit line" || fail "no 'Exiting on timeout'"
grep -qE '^Maximum IOPS=[0-9.]+[KM]?$' "$out" && pass "maximum line" || fail "no Maximum IOPS line"
"$BLKLAB" io_uring --host=nvme-8cpu -d32 -s8 -c8 -p0 -b4096 -r3 /dev/nvme0n1 >"$TMP/r3b.txt" 2>/dev/null
cmp -s "$out" "$TMP/r3b.txt" && pass "deterministic" || fail "two runs differ"

"$BLKLAB" io_uring --host=nvme-8cpu -p0 -r2 --output-format=json /dev/nvme0n1 >"$TMP/j.json" || fail "json run"
/usr/bin/python3 - "$TMP/j.json" <<'PY' && pass "json output" || fail "json output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "t/io_uring" and d["exit"] == "timeout"
assert len(d["seconds"]) == 2 and d["seconds"][0]["iops"] > 0
assert d["iops"] == d["seconds"][0]["iops"], "the mean of the printed seconds (-r2 prints one)"
assert d["blklab"]["total_ios"] > 0 and d["blklab"]["profile"]
PY

"$BLKLAB" io_uring --host=nvme-8cpu -a1 -r2 /dev/nvme0n1 >"$TMP/aio.txt" 2>"$TMP/aio.err"
grep -qx 'aio does not support polled IO' "$TMP/aio.err" && grep -qx 'aio does not support registered files or buffers' "$TMP/aio.err" \
  && pass "aio messages" || fail "aio messages: $(cat "$TMP/aio.err")"
grep -qx 'Engine=aio' "$TMP/aio.txt" && pass "aio engine line" || fail "aio engine line"
"$BLKLAB" io_uring --host=nvme-8cpu -S1 -p0 -r2 /dev/nvme0n1 >"$TMP/sync.txt" 2>&1
grep -qE '^IOPS=.*IOS/call=1/0$' "$TMP/sync.txt" && pass "preadv2 counts no reaps" || fail "sync: $(cat "$TMP/sync.txt")"

"$BLKLAB" io_uring --host=nvme-8cpu -p0 /dev/nvme0n1 >"$TMP/int.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q '^IOPS=' "$TMP/int.txt" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] && grep -qx 'Exiting on signal' "$TMP/int.txt" && grep -q '^Maximum IOPS=' "$TMP/int.txt" \
  && pass "SIGINT ends the run" || fail "SIGINT: exit $rc: $(tail -3 "$TMP/int.txt")"

"$BLKLAB" io_uring -h >"$TMP/h.txt"; rc=$?
[ "$rc" = 0 ] && head -1 "$TMP/h.txt" | grep -qx 't/io_uring \[options\] -- \[filenames\]' && pass "usage" || fail "usage (exit $rc)"
"$BLKLAB" io_uring >/dev/null; [ $? = 1 ] && pass "no arguments exits 1" || fail "no arguments"
"$BLKLAB" io_uring --host=nvme-8cpu -r2 /dev/sdq >/dev/null 2>"$TMP/e.txt"
grep -q '/dev/sdq is not a device of this host; devices: nvme0n1' "$TMP/e.txt" && pass "unknown file named" || fail "unknown file: $(cat "$TMP/e.txt")"
"$BLKLAB" io_uring --host=nvme-8cpu -r2 /dev/nvme0n1 >"$TMP/p.txt" 2>&1
grep -qx 'io: unexpected ret=-95' "$TMP/p.txt" && pass "polled IO without poll queues fails as the tool does" || fail "poll: $(cat "$TMP/p.txt")"
"$BLKLAB" io_uring --host=nvme-8cpu -u1 -r2 /dev/nvme0n1 >/dev/null 2>"$TMP/u.txt"
grep -q -- '-u1: NVMe passthrough' "$TMP/u.txt" && pass "passthrough refused by name" || fail "-u1: $(cat "$TMP/u.txt")"

checks_end io_uring
