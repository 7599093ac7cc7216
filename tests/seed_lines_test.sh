#!/usr/bin/env bash
# tests/seed_lines_test.sh BLKLAB_BINARY SOURCE_DIR
#
# The two seed command lines of the fio front end (README "Seed command
# lines"), run from examples/jobs/ exactly as fio would take them with
# `fio` replaced by `blklab fio` (registered as ctest cli.seed_lines):
#   A) RC1: BLKLAB_HOST=rc1-mpi3mr-64vd blklab fio 64.fio --rw=randread
#      --bs=4K --iodepth=32 --numjobs=2 --ioscheduler=mq-deadline --disk_util=0
#   B) RC3: blklab fio --host=rc3-megaraid-1vd 1vd.fio --iodepth=128 --bs=4k
#      --rw=randread --cpus_allowed_policy=split --ioscheduler=none
#      --group_reporting --runtime=200 --numjobs=1
# Appended after the seed arguments (fio: later options win): a shorter
# --runtime, so that the test takes seconds (the verbatim lines simulate
# 10 s and 200 s), and --output-format=json. Checks: exit 0, a positive,
# sane IOPS figure in fio's JSON, dd->lock in blklab's kernel section for
# the mq-deadline run, and (numa_cpu_nodes=1) the RC3 job on a CPU of node 1.
set -u

BLKLAB=${1:?usage: seed_lines_test.sh BLKLAB_BINARY SOURCE_DIR}
SRC=${2:?usage: seed_lines_test.sh BLKLAB_BINARY SOURCE_DIR}
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

. "$(dirname "$0")/checks.sh"
checks_begin seed

cd "$SRC/examples/jobs" || exit 1

# check JSON_FILE WANT_DD_LOCK WANT_NODE1_CPU
check() {
  "$PY" - "$@" <<'PYEOF'
import json, sys
path, want_dd, want_node1 = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
with open(path) as f:
    d = json.load(f)
iops = sum(j["read"]["iops"] for j in d["jobs"])
if not (1000 < iops < 100e6):
    sys.exit("implausible read IOPS %r" % iops)
k = d["blklab"]
if want_dd and not any(l["name"].endswith(":dd->lock") for l in k["locks"]):
    sys.exit("no dd->lock in the blklab lock table: %r" % [l["name"] for l in k["locks"]])
if want_node1:
    # rc3-megaraid-1vd: 32 CPUs, 2 sockets x 8 cores x SMT2; node 1 = cores
    # 8..15 = CPUs 8..15 and 24..31.
    cpus = {c["cpu"] for c in k["cpus"] if c["usr_ns"] > 0}
    if not cpus or not all(8 <= c <= 15 or 24 <= c <= 31 for c in cpus):
        sys.exit("fio job ran on CPUs %r, not on NUMA node 1" % sorted(cpus))
print("IOPS %.0f" % iops)
PYEOF
}

# A) RC1, host from the environment.
if BLKLAB_HOST=rc1-mpi3mr-64vd "$BLKLAB" fio 64.fio --rw=randread --bs=4K --iodepth=32 --numjobs=2 \
    --ioscheduler=mq-deadline --disk_util=0 --runtime=150ms --output-format=json \
    >"$TMP/a.json" 2>"$TMP/a.err"; then
  if out=$(check "$TMP/a.json" 1 0); then pass "RC1 seed line (BLKLAB_HOST): $out"; else fail "RC1 seed line: $out"; fi
else
  fail "RC1 seed line exited non-zero: $(head -c 500 "$TMP/a.err")"
fi

# B) RC3, host from --host.
if "$BLKLAB" fio --host=rc3-megaraid-1vd 1vd.fio --iodepth=128 --bs=4k --rw=randread \
    --cpus_allowed_policy=split --ioscheduler=none --group_reporting --runtime=200 --numjobs=1 \
    --runtime=2s --output-format=json >"$TMP/b.json" 2>"$TMP/b.err"; then
  if out=$(check "$TMP/b.json" 0 1); then pass "RC3 seed line (--host): $out"; else fail "RC3 seed line: $out"; fi
else
  fail "RC3 seed line exited non-zero: $(head -c 500 "$TMP/b.err")"
fi

# --host= wins over BLKLAB_HOST.
if BLKLAB_HOST=no-such-preset "$BLKLAB" fio --host=rc3-megaraid-1vd 1vd.fio --runtime=10ms \
    --output-format=json >"$TMP/c.json" 2>"$TMP/c.err"; then
  pass "--host overrides BLKLAB_HOST"
else
  fail "--host did not override BLKLAB_HOST: $(head -c 300 "$TMP/c.err")"
fi

checks_end seed-line
