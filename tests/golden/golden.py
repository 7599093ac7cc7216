#!/usr/bin/env python3
"""Golden pins: blklab's full output for a matrix of scenarios, byte for byte.

Usage:
  tests/golden/golden.py BLKLAB             compare every scenario with its pin
  tests/golden/golden.py --update BLKLAB    rewrite the pins (say why in the commit)
  tests/golden/golden.py BLKLAB NAME...     only the named scenarios

Each line of tests/golden/scenarios.txt is `NAME ARGS...`; the scenario runs
`BLKLAB fio ARGS --output-format=json` (or `BLKLAB io_uring ...` when ARGS
start with io_uring) in a scratch directory (paths in ARGS
are relative to the repository) with SOURCE_DATE_EPOCH pinned, and its
standard output must equal tests/golden/expected/NAME.json: fio's JSON and
blklab's kernel report (profile, locks, counters, CPU modes, devices). A
restructuring must leave every pin unchanged; a model change that moves them
regenerates them with --update, and its commit says which moved and why.
"""
import difflib
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "expected")


def load_scenarios():
    out = []
    with open(os.path.join(HERE, "scenarios.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            out.append((words[0], words[1:]))
    return out


def absolutize(arg):
    """Makes a repository-relative path (bare or after `--opt=`) absolute."""
    prefix, value = "", arg
    if arg.startswith("--") and "=" in arg:
        prefix, value = arg.split("=", 1)
        prefix += "="
    if value and not value.startswith("/") and os.path.exists(os.path.join(REPO, value)):
        return prefix + os.path.join(REPO, value)
    return arg


def run(blklab, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLKLAB_")}
    env["SOURCE_DATE_EPOCH"] = "1700000000"
    with tempfile.TemporaryDirectory(prefix="blklab-golden-") as scratch:
        # `NAME io_uring ARGS` runs `blklab io_uring` (t/io_uring); else `blklab fio`.
        sub = ["io_uring"] if args and args[0] == "io_uring" else ["fio"]
        rest = args[1:] if sub == ["io_uring"] else args
        cmd = [blklab] + sub + [absolutize(a) for a in rest] + ["--output-format=json"]
        p = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[:2000])
    return p.stdout, None


def main(argv):
    update = "--update" in argv
    argv = [a for a in argv if a != "--update"]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    blklab, only = os.path.abspath(argv[0]), set(argv[1:])
    scenarios = [s for s in load_scenarios() if not only or s[0] in only]
    if only and len(scenarios) != len(only):
        print("unknown scenario(s): %s" % sorted(only - {s[0] for s in scenarios}), file=sys.stderr)
        return 2
    os.makedirs(EXPECTED, exist_ok=True)
    failed = 0
    for name, args in scenarios:
        start = time.monotonic()
        got, err = run(blklab, args)
        took = time.monotonic() - start
        path = os.path.join(EXPECTED, name + ".json")
        if err is not None:
            failed += 1
            print("FAIL %-28s %s" % (name, err))
            continue
        if update:
            with open(path, "w") as f:
                f.write(got)
            print("wrote %-27s %6.2f s" % (name, took))
            continue
        if not os.path.exists(path):
            failed += 1
            print("FAIL %-28s no pin %s (run with --update)" % (name, os.path.relpath(path, REPO)))
            continue
        with open(path) as f:
            want = f.read()
        if got == want:
            print("ok   %-28s %6.2f s" % (name, took))
            continue
        failed += 1
        diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "pinned", "now", lineterm="", n=1)
        print("FAIL %-28s output differs from its pin:" % name)
        for i, line in enumerate(diff):
            if i >= 40:
                print("  ...")
                break
            print("  " + line)
    if not update:
        known = {n + ".json" for n, _ in load_scenarios()}
        stale = sorted(f for f in os.listdir(EXPECTED) if f not in known)
        if stale and not only:
            failed += 1
            print("FAIL pins without a scenario: %s" % ", ".join(stale))
    print("golden: %d scenario(s), %d failed" % (len(scenarios), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
