#!/usr/bin/env bash
# tests/logs_test.sh BLKLAB_BINARY FIO_REFERENCE_DIR
#
# fio's per-job logs from `blklab fio` (registered as ctest cli.logs;
# docs/fio-compatibility.md e). Runs job 06-logs.fio (write_bw_log / write_iops_log /
# write_lat_log / write_hist_log with log_avg_msec=500, log_hist_msec=500)
# in a temporary directory and checks:
#  - the six files fio 3.33 writes, by name (as in fio-reference/logs/), and
#    nothing else;
#  - every bw/iops/lat/slat/clat line with FIO_COMPAT e item 5's awk check
#    (5 or 6 ", "-separated fields, integer time, direction 0-2), each file
#    non-empty with lines stamped on the 500 ms grid;
#  - the clat_hist lines have fio's 1859 fields (time, dir, bs, 1856 counts);
#  - fio2gnuplot -b / -i / -p 'logs_clat.1.log' accept them (exit 0, non-empty
#    result); a failure when fio2gnuplot is missing (scripts/setup installs
#    fio). No -g: gnuplot is absent;
#  - write_iolog: a job over two files with fsync=4 writes fio's version 3
#    iolog (the version line, each file added, opened and closed, one line
#    per I/O and per sync), and fio 3.33 itself replays it with
#    read_iolog on its null engine: the same writes, bytes and syncs;
#  - a log prefix, write_iolog or --folded in a directory that does not
#    exist is refused before the run, naming the option, the job and the
#    directory, with no report printed; a log that cannot be written after
#    the run (its name taken by a directory) leaves the report on stdout
#    and the error on stderr, exit 1.
set -u

BLKLAB=${1:?usage: logs_test.sh BLKLAB_BINARY FIO_REFERENCE_DIR}
REF=${2:?usage: logs_test.sh BLKLAB_BINARY FIO_REFERENCE_DIR}
JOB="$REF/jobs/06-logs.fio"

. "$(dirname "$0")/checks.sh"
checks_begin logs

[ -x "$BLKLAB" ] || { echo "FAIL: $BLKLAB is not executable" >&2; exit 1; }
BLKLAB=$(realpath "$BLKLAB")  # the job runs in another directory
[ -f "$JOB" ] || { echo "FAIL: $JOB not found" >&2; exit 1; }

mkdir -p "$TMP/run" "$TMP/chk"
if ! (cd "$TMP/run" && "$BLKLAB" fio "$JOB" >"$TMP/out.txt" 2>"$TMP/err.txt"); then
  echo "FAIL: blklab fio $JOB exited non-zero: $(head -c 500 "$TMP/err.txt")" >&2
  exit 1
fi

# 1. File names: exactly the six fio writes.
want="logs_bw.1.log logs_clat.1.log logs_clat_hist.1.log logs_iops.1.log logs_lat.1.log logs_slat.1.log"
got=$(cd "$TMP/run" && ls | sort | tr '\n' ' ' | sed 's/ $//')
if [ "$got" = "$want" ]; then
  pass "log file names: $got"
else
  fail "log file names: got '$got', want '$want'"
fi

# 2. Line shapes of the bw/iops/lat logs.
for f in logs_bw.1.log logs_iops.1.log logs_lat.1.log logs_slat.1.log logs_clat.1.log; do
  p="$TMP/run/$f"
  if [ ! -s "$p" ]; then
    fail "$f is missing or empty"
    continue
  fi
  if awk -F', ' 'NF<5||NF>6||$1!~/^[0-9]+$/||$3!~/^[012]$/{bad++} END{exit bad>0}' "$p"; then
    pass "$f: every line passes the awk check ($(wc -l <"$p") lines)"
  else
    fail "$f: malformed lines: $(awk -F', ' 'NF<5||NF>6||$1!~/^[0-9]+$/||$3!~/^[012]$/' "$p" | head -3)"
  fi
  # log_avg_msec=500: stamps on the 500 ms grid, BS and PRIO columns 0.
  if awk -F', ' '$1%500!=0||$4!=0||$5!=0{bad++} END{exit bad>0}' "$p"; then
    pass "$f: averaged lines stamped at multiples of 500 ms, bs=0, prio=0"
  else
    fail "$f: lines off the 500 ms grid or with non-zero bs/prio: $(head -3 "$p")"
  fi
done

# 3. Histogram log: time, dir, bs and 1856 bucket counts per line.
h="$TMP/run/logs_clat_hist.1.log"
if [ -s "$h" ] && awk -F', ' 'NF!=1859||$2!~/^[012]$/||$3!=4096{bad++} END{exit bad>0}' "$h"; then
  pass "logs_clat_hist.1.log: $(wc -l <"$h") lines of 1859 fields"
else
  fail "logs_clat_hist.1.log: missing, empty or not 1859 fields per line ($(awk -F', ' '{print NF}' "$h" | sort -u | head -3 | tr '\n' ' '))"
fi

# 4. fio2gnuplot reads them.
if command -v fio2gnuplot >/dev/null 2>&1; then
  check_gnuplot() {  # NAME RESULT_GLOB ARGS...
    local name=$1 glob=$2
    shift 2
    local dir="$TMP/chk/$name/"
    mkdir -p "$dir"
    if (cd "$TMP/run" && fio2gnuplot "$@" -d "$dir" >"$TMP/chk/$name.out" 2>&1); then
      local result
      result=$(ls "$dir"$glob 2>/dev/null | head -1)
      if [ -n "$result" ] && [ -s "$result" ] && grep -q 'values_count=[1-9]' "$result"; then
        pass "fio2gnuplot $*: exit 0, $(basename "$result") has $(grep values_count "$result")"
      else
        fail "fio2gnuplot $*: no non-empty $glob in $dir"
      fi
    else
      fail "fio2gnuplot $* exited non-zero: $(tail -3 "$TMP/chk/$name.out")"
    fi
  }
  check_gnuplot bw 'result.global' -b
  check_gnuplot iops 'result.global' -i
  check_gnuplot clat '*.global' -p 'logs_clat.1.log'
else
  fail "fio2gnuplot is not installed (scripts/setup installs fio)"
fi

# 5. write_iolog, replayed by fio.
mkdir -p "$TMP/iolog"
if (cd "$TMP/iolog" && "$BLKLAB" fio --host=auto --name=j --filename=/tmp/f1:/tmp/f2 --size=1m --rw=randwrite \
      --bs=64k --fsync=4 --write_iolog=io.log >"$TMP/iolog.out" 2>&1); then
  l="$TMP/iolog/io.log"
  head=$(head -5 "$l" | tr '\n' '|')
  writes=$(grep -c ' write [0-9]* 65536$' "$l")
  syncs=$(grep -c ' sync [0-9]* 0$' "$l")
  if [ "$(head -4 "$l" | tr '\n' '|')" = "fio version 3 iolog|0 /tmp/f1 add|0 /tmp/f2 add|0 /tmp/f1 open|" ] &&
     [ "$writes" = 16 ] && [ "$syncs" = 3 ] && [ "$(grep -c ' close$' "$l")" = 2 ]; then
    pass "write_iolog: version 3 header, $writes writes, $syncs syncs, both files closed"
  else
    fail "write_iolog: header '$head', $writes writes (want 16), $syncs syncs (want 3)"
  fi
  if command -v fio >/dev/null 2>&1; then
    if (cd "$TMP/iolog" && fio --name=replay --read_iolog=io.log --ioengine=null --output-format=json \
          >"$TMP/replay.json" 2>"$TMP/replay.err"); then
      got=$(python3 -c '
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("{"):])["jobs"][0]
print(j["write"]["total_ios"], j["write"]["io_kbytes"], j["sync"]["total_ios"], j["error"])' "$TMP/replay.json")
      if [ "$got" = "16 1024 3 0" ]; then
        pass "fio --read_iolog replays it: $got (writes, KiB, syncs, error)"
      else
        fail "fio --read_iolog replay: '$got', want '16 1024 3 0'"
      fi
    else
      fail "fio --read_iolog exited non-zero: $(tail -3 "$TMP/replay.err")"
    fi
  else
    fail "fio is not installed (scripts/setup installs it)"
  fi
else
  fail "blklab fio --write_iolog exited non-zero: $(tail -3 "$TMP/iolog.out")"
fi

# 6. Log files that cannot be written: refused up front, or the report kept.
mkdir -p "$TMP/bad"
refused() {  # refused DESCRIPTION EXPECTED_STDERR_PART ARGS...
  local what=$1 want=$2
  shift 2
  if (cd "$TMP/bad" && "$BLKLAB" fio --host=null-1cpu --name=j --filename=/dev/nullb0 --size=1m --rw=randread \
        --runtime=2ms --output-format=json "$@" >"$TMP/bad/out" 2>"$TMP/bad/err"); then
    fail "$what: exit 0"
  elif grep -qF -- "$want" "$TMP/bad/err" && [ ! -s "$TMP/bad/out" ]; then
    pass "$what: refused before the run: $(head -1 "$TMP/bad/err")"
  else
    fail "$what: stderr '$(head -c 300 "$TMP/bad/err")' (want '$want'), stdout $(wc -c <"$TMP/bad/out") bytes"
  fi
}
refused "write_iops_log in a missing directory" \
  "write_iops_log=nodir/x (job 'j'): directory nodir does not exist" --write_iops_log=nodir/x
refused "write_iolog in a missing directory" "write_iolog=nodir/io.log (job 'j'): directory nodir" \
  --write_iolog=nodir/io.log
refused "--folded in a missing directory" "--folded=nodir/s.folded: directory nodir does not exist" \
  --folded=nodir/s.folded
mkdir -p "$TMP/bad/j_iops.1.log"  # the log's name taken by a directory: found only when writing
if (cd "$TMP/bad" && "$BLKLAB" fio --host=null-1cpu --name=j --filename=/dev/nullb0 --size=1m --rw=randread \
      --runtime=2ms --output-format=json --write_iops_log >"$TMP/bad/out" 2>"$TMP/bad/err"); then
  fail "a log that cannot be written: exit 0"
elif grep -qF "cannot write log file j_iops.1.log" "$TMP/bad/err" &&
     python3 -c 'import json,sys; json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"]' "$TMP/bad/out"; then
  pass "a log that cannot be written: the report is kept, then: $(head -1 "$TMP/bad/err")"
else
  fail "a log that cannot be written: stderr '$(head -c 300 "$TMP/bad/err")', stdout $(wc -c <"$TMP/bad/out") bytes"
fi

checks_end log
