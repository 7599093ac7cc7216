#!/usr/bin/env bash
# A 64-cell comparison (4 variants x 8 queue depths x 2 samples on the
# nvme-8cpu preset, 50 ms of virtual time per cell) run with 1, 2 and 4
# local workers (--jobs), then through blklabd: one server with 2
# comparison workers, and the same server with two more on loopback as its
# --fleet (one comparison worker each, 2 cells in flight per fleet server):
# wall seconds per configuration and cells per second, and a check that
# the output does not depend on where the cells ran.
# Usage: tests/bench/compare_bench.sh [BLKLAB [BLKLABD]]
set -euo pipefail
BLKLAB=${1:-./build/clients/cli/blklab}
BLKLABD=${2:-./build/server/blklabd}
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
# blklabd on a free loopback port; prints its port.
start_server() {
  local dir=$1
  shift
  "$BLKLABD" --listen=127.0.0.1:0 --data_dir="$TMP/$dir" --metrics_listen= "$@" >/dev/null 2>"$TMP/$dir.log" &
  # (called in a command substitution: the server is not a job of this
  # shell, so the exit trap finds it by its pid file)
  echo $! >"$TMP/$dir.pid"
  for _ in $(seq 200); do
    port=$(sed -n 's/.*event=listening .* port=\([0-9]*\).*/\1/p' "$TMP/$dir.log")
    if [ -n "$port" ]; then echo "$port"; return; fi
    sleep 0.05
  done
  echo "blklabd did not start: $(cat "$TMP/$dir.log")" >&2
  exit 1
}
if [ -x "$BLKLABD" ]; then
  trap 'kill $(cat "$TMP"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$TMP"' EXIT
  b=$(start_server b --compare_workers=1)
  c=$(start_server c --compare_workers=1)
  solo=$(start_server solo --compare_workers=2)
  a=$(start_server a --compare_workers=2 --fleet=127.0.0.1:$b,127.0.0.1:$c)
  for cfg in "solo:$solo:one server, 2 workers" "fleet:$a:3-server loopback fleet (2 + 1 + 1 workers)"; do
    IFS=: read -r name port what <<<"$cfg"
    start=$(date +%s.%N)
    "$BLKLAB" --server "127.0.0.1:$port" compare "${ARGS[@]}" >"$TMP/out.$name.csv" 2>/dev/null
    end=$(date +%s.%N)
    awk -v w="$what" -v s="$start" -v e="$end" \
      'BEGIN { printf "  blklabd, %s: %.2f s wall, %.1f cells/s\n", w, e - s, 64 / (e - s) }'
  done
fi
same=1
for f in "$TMP"/out.*.csv; do cmp -s "$TMP/out.1.csv" "$f" || same=0; done
if [ "$same" = 1 ]; then
  echo "  output identical for --jobs=1, 2 and 4$([ -x "$BLKLABD" ] && echo ", one server and the fleet")"
else
  echo "  OUTPUT DIFFERS between --jobs values" >&2
  exit 1
fi
