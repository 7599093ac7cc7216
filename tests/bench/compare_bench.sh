#!/usr/bin/env bash
# A 64-cell comparison (4 variants x 8 queue depths x 2 samples on the
# nvme-8cpu preset, 50 ms of virtual time per cell) run with 1, 2 and 4
# local workers (--jobs): wall seconds per configuration and cells per
# second, and a check that the output does not depend on --jobs.
# Usage: tests/bench/compare_bench.sh [BLKLAB]
set -euo pipefail
BLKLAB=${1:-./build/clients/cli/blklab}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/blklab-compare-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
ARGS=(--host=nvme-8cpu --samples=2
      --variant 'none:devices.nvme0n1.queue.scheduler=none'
      --variant 'mq-deadline:fio.ioscheduler=mq-deadline'
      --variant 'kyber:fio.ioscheduler=kyber'
      --variant 'one-cpu-per-queue:cpus.count=4'
      --matrix fio.iodepth=1,2,4,8,16,32,64,128 --format=csv --
      --name=t --ioengine=io_uring --rw=randread --bs=4k --numjobs=4 --cpus_allowed_policy=split
      --group_reporting --runtime=50ms --time_based=1)
echo "compare_bench: 64 cells (4 variants x 8 iodepths x 2 samples, nvme-8cpu, 50 ms each), $(nproc) CPUs"
for jobs in 1 2 4; do
  start=$(date +%s.%N)
  "$BLKLAB" compare --jobs="$jobs" "${ARGS[@]}" >"$TMP/out.$jobs.csv" 2>/dev/null
  end=$(date +%s.%N)
  awk -v j="$jobs" -v s="$start" -v e="$end" \
    'BEGIN { printf "  --jobs=%d: %.2f s wall, %.1f cells/s\n", j, e - s, 64 / (e - s) }'
done
if cmp -s "$TMP/out.1.csv" "$TMP/out.2.csv" && cmp -s "$TMP/out.1.csv" "$TMP/out.4.csv"; then
  echo "  output identical for --jobs=1, 2 and 4"
else
  echo "  OUTPUT DIFFERS between --jobs values" >&2
  exit 1
fi
