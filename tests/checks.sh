# Shared pieces of the shell tests: source it, then call checks_begin NAME
# (makes $TMP, removed at exit, and zeroes the failure count); record each
# check with pass / fail; end with checks_end WHAT (exit 1 on any failure).
checks_begin() {
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/blklab-$1-test.XXXXXX") || exit 1
  trap 'rm -rf "$TMP"' EXIT
  failures=0
}

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

pass() { echo "ok: $*"; }

checks_end() {
  if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all $1 checks passed"
}
