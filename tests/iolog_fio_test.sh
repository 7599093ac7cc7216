#!/usr/bin/env bash
# tests/iolog_fio_test.sh BLKLAB_BINARY
#
# The order of fio's I/O, checked against fio 3.33 itself (ctest
# cli.iolog_vs_fio). Each job below runs twice: under `blklab fio
# --host=auto` and under the real fio on its null engine, both with
# write_iolog. The two iologs must be the same line for line once the
# timestamps (virtual time against wall time) are cut: the same files added,
# opened when first used and closed when their pass ends, the same I/O
# (direction, file offset, length) in the same order, the syncs of fsync= /
# fdatasync= / end_fsync on the files fio gives them. The jobs are
# deterministic (sequential, or trimwrite); random offsets come from
# different generators and are not compared. Known difference, not checked
# here: with loops>1 and fsync=N dividing a loop's writes fio syncs a
# second time as the loop starts (reset_io_counters clears last_was_sync,
# io_issues is kept); blklab does not.
set -u

BLKLAB=${1:?usage: iolog_fio_test.sh BLKLAB_BINARY}
. "$(dirname "$0")/checks.sh"
checks_begin iolog_vs_fio

[ -x "$BLKLAB" ] || { echo "FAIL: $BLKLAB is not executable" >&2; exit 1; }
BLKLAB=$(realpath "$BLKLAB")
if ! command -v fio >/dev/null 2>&1; then
  fail "fio is not installed (scripts/setup installs it)"
  checks_end iolog_vs_fio
fi

same_order() {  # JOB ARGS...
  local n=$1
  shift
  local d="$TMP/$n"
  mkdir -p "$d"
  if ! (cd "$d" && fio --name=j --ioengine=null "$@" --write_iolog=fio.log >fio.out 2>&1); then
    fail "$n: fio exited non-zero: $(tail -2 "$d/fio.out")"
    return
  fi
  if ! (cd "$d" && "$BLKLAB" fio --host=auto --name=j "$@" --write_iolog=blklab.log >blklab.out 2>&1); then
    fail "$n: blklab fio exited non-zero: $(tail -2 "$d/blklab.out")"
    return
  fi
  cut -d' ' -f2- "$d/fio.log" >"$d/fio.cut"
  cut -d' ' -f2- "$d/blklab.log" >"$d/blklab.cut"
  if diff -q "$d/fio.cut" "$d/blklab.cut" >/dev/null; then
    pass "$n: $(wc -l <"$d/fio.cut") lines as fio's ($*)"
  else
    fail "$n: the iolog differs from fio's ($*): $(diff "$d/fio.cut" "$d/blklab.cut" | head -6 | tr '\n' ' ')"
  fi
}

F="$TMP/files"
same_order seq-read --filename="$F.1" --size=1m --rw=read --bs=64k --loops=2
same_order two-files-fsync --filename="$F.1:$F.2" --size=1m --rw=write --bs=64k --fsync=3
same_order fdatasync-end-fsync --filename="$F.1:$F.2" --size=1m --rw=write --bs=64k --fdatasync=2 --end_fsync=1
same_order three-files-rr2 --filename="$F.1:$F.2:$F.3" --size=3m --rw=write --bs=64k \
  --file_service_type=roundrobin:2 --fsync=5
same_order sequential-service --filename="$F.1:$F.2" --size=2m --rw=write --bs=64k --file_service_type=sequential \
  --fsync=5
same_order trimwrite --filename="$F.1:$F.2" --size=1m --rw=trimwrite --bs=64k
same_order holed-read --filename="$F.1" --size=1m --rw=read:128k --bs=64k --loops=2
same_order filename-format --nrfiles=2 --size=1m --rw=read --bs=64k --filename_format="$F.\$jobname.\$filenum"

checks_end iolog_vs_fio
