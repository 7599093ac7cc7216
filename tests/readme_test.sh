#!/usr/bin/env bash
# tests/readme_test.sh BUILD_DIR SOURCE_DIR
#
# Runs every ```sh block of README.md, in order, from the source directory,
# as a newcomer would after `./scripts/install` (registered as ctest
# readme.commands). `./build/` in a command means BUILD_DIR. Each block must
# exit 0; blocks that `cd` run in a subshell, the others share variables
# ($B). HOME is a temporary directory (the server's data, the install), and
# so is TMPDIR (the fleet servers' `mktemp -d` data directories).
# Three commands are not run as written, and say so:
#  - ./scripts/test: it is the suite running this test;
#  - ./scripts/demo: run with DEMO_SKIP_BUILD=1 (this build) and
#    DEMO_NONINTERACTIVE=1, on free ports;
#  - docker compose: no container engine on the test machines; the block's
#    other lines run against the blklabd the test starts for them;
#  - the reference cases' seed lines (the block that runs `blklab fio` from
#    examples/jobs/): `--runtime=300ms` is appended to each (fio: a later
#    option wins), as cli.seed_lines does. Verbatim, RC1 simulates about
#    9 s (over three minutes of wall time) and RC3 200 s: together they made
#    this test the suite's long pole. What the verbatim runs print is
#    `scripts/calibrate report`'s business.
# Then, in the HOME the blocks left behind, `scripts/readme-outputs --check`:
# each output block marked `<!-- output: COMMAND -->` must be what COMMAND
# prints now (README_OUTPUTS=--write rewrites the blocks instead).
set -u
BUILD=$(cd "${1:?usage: readme_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
SRC=$(cd "${2:?usage: readme_test.sh BUILD_DIR SOURCE_DIR}" && pwd)

. "$(dirname "$0")/checks.sh"
checks_begin readme

export HOME="$TMP/home"
export TMPDIR="$TMP/tmp"
mkdir -p "$HOME" "$TMPDIR"
cd "$SRC" || exit 1
# Files the README's commands write into the working directory.
cleanup() {
  rm -f "$SRC/out.json" "$SRC/flame.svg" "$SRC/stacks.folded"
  jobs -p | xargs -r kill 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

if BUILD_DIR="$BUILD" ./scripts/install "$HOME/.local" >"$TMP/install.log" 2>&1; then
  pass "scripts/install into ~/.local/bin"
else
  fail "scripts/install: $(cat "$TMP/install.log")"
fi
export PATH="$HOME/.local/bin:$PATH"

# The blocks, separated by NUL.
python3 - "$SRC/README.md" >"$TMP/blocks" <<'EOF'
import sys
blocks, cur = [], None
for line in open(sys.argv[1]):
    if cur is None and line.strip() == "```sh":
        cur = []
    elif cur is not None and line.strip() == "```":
        blocks.append("".join(cur))
        cur = None
    elif cur is not None:
        cur.append(line)
sys.stdout.write("\0".join(blocks))
EOF

n=0
script="$TMP/run.sh"
{
  echo "set -eo pipefail"
  echo "trap 'jobs -p | xargs -r kill 2>/dev/null' EXIT"
} >"$script"
while IFS= read -r -d '' block || [[ -n $block ]]; do
  n=$((n + 1))
  body=${block//.\/build\//$BUILD/}
  if [[ $body == *"./scripts/test"* ]]; then
    # The quick start: the demo as written but on this build and free ports;
    # ./scripts/test is this suite.
    body=$(grep -v './scripts/test' <<<"$body")
    body="DEMO_SKIP_BUILD=1 BUILD_DIR=$BUILD DEMO_NONINTERACTIVE=1 DEMO_LISTEN=127.0.0.1:0 DEMO_METRICS_LISTEN=127.0.0.1:0 $body"
  fi
  if [[ $body == *"docker compose"* ]]; then
    echo "readme block $n: 'docker compose' not run (no container engine); its other lines run against a blklabd"
    body=$(grep -v 'docker compose' <<<"$body")
    body="$BUILD/server/blklabd & until $BUILD/clients/cli/blklab --server 127.0.0.1:50051 health >/dev/null 2>&1; do sleep 0.1; done
$body
kill \$!; wait"
  fi
  if grep -q '^cd examples/jobs' <<<"$body"; then
    echo "readme block $n: the seed lines run with --runtime=300ms appended"
    body="blklab() { command blklab \"\$@\" --runtime=300ms; }
$body"
  fi
  if grep -q '^cd ' <<<"$body"; then body="( $body
)"; fi
  {
    echo "echo '--- readme block $n' >&2"
    echo "$body"
    echo "wait"
    echo "echo \"readme block $n: ok (\$SECONDS s since the first block)\" >&2"
  } >>"$script"
done <"$TMP/blocks"

if (cd "$SRC" && timeout 900 bash "$script") >"$TMP/out.log" 2>"$TMP/err.log"; then
  pass "all $n command blocks of README.md ran in order ($(grep -c ': ok (' "$TMP/err.log") ok)"
else
  fail "README.md blocks: $(grep -c ': ok (' "$TMP/err.log") of $n ran; then: $(tail -c 1500 "$TMP/err.log")"
fi

if python3 "$SRC/scripts/readme-outputs" --self-test >"$TMP/outputs.log" 2>&1; then
  pass "scripts/readme-outputs --self-test"
else
  fail "scripts/readme-outputs --self-test: $(cat "$TMP/outputs.log")"
fi
start=$SECONDS
if python3 "$SRC/scripts/readme-outputs" "${README_OUTPUTS:---check}" "$BUILD" >"$TMP/outputs.log" 2>&1; then
  pass "README.md's marked output blocks: $(tail -n 1 "$TMP/outputs.log") ($((SECONDS - start)) s)"
else
  fail "README.md's marked output blocks are stale or failed: $(cat "$TMP/outputs.log")"
fi

checks_end readme
