#!/usr/bin/env python3
"""Every fio job file of the corpus that fio 3.33 accepts, run as a new user
would run it: `blklab fio --host=auto --runtime=0.2 FILE`, each in an empty
directory. tests/data/fio-examples/outcomes.tsv says what each must do: run
(exit 0, fio's JSON with its jobs), run once its own long runtime= lines are
set to 0.2 s (long), run and fail where the job file says fio's run fails
(fails: fio's JSON with the job's error, a non-zero exit), or be refused with a message naming what has no
counterpart (refused) -- never for a file name. Prints the share of files with
a block-layer engine that run to completion.

usage: corpus_run_test.py BLKLAB SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# A refusal must name an engine, option or device kind, not a file name.
FILE_NAME_REFUSALS = ("is not a device of this host", "neither a device of this host")


def main():
    blklab, src = sys.argv[1], sys.argv[2]
    corpus = os.path.join(src, "tests", "data", "fio-examples")
    accepted = []
    with open(os.path.join(corpus, "parse-results.tsv")) as f:
        next(f)
        for line in f:
            name, code = line.rstrip("\n").split("\t")[:2]
            if code == "0":
                accepted.append(name)
    expected = {}
    with open(os.path.join(corpus, "outcomes.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, outcome, block, detail = (line.rstrip("\n").split("\t") + [""])[:4]
            expected[name] = (outcome, block == "yes", detail)
    failures = []
    if sorted(expected) != sorted(accepted):
        failures.append("outcomes.tsv lists %d files, fio accepts %d: missing %s, extra %s" % (
            len(expected), len(accepted), sorted(set(accepted) - set(expected))[:5],
            sorted(set(expected) - set(accepted))[:5]))
    block_total = block_done = 0
    for name in sorted(accepted):
        if name not in expected:
            continue
        outcome, block, detail = expected[name]
        work = tempfile.mkdtemp(prefix="blklab-corpus-")
        try:
            path = os.path.join(corpus, name)
            if outcome == "long":
                text = open(path).read()
                short = re.sub(r"(?m)^(\s*runtime\s*=).*$", r"\g<1>0.2", text)
                path = os.path.join(work, os.path.basename(name))
                with open(path, "w") as out:
                    out.write(short)
            r = subprocess.run([blklab, "fio", "--host=auto", "--runtime=0.2", "--output-format=json", path],
                               cwd=work, capture_output=True, text=True, timeout=300)
            err = r.stderr.strip()
            if outcome in ("runs", "long"):
                ok = r.returncode == 0
                if ok:
                    try:
                        ok = len(json.loads(r.stdout)["jobs"]) > 0
                    except (ValueError, KeyError):
                        ok = False
                if not ok:
                    failures.append("%s should run: exit %d: %s" % (name, r.returncode, err[-300:]))
                elif block:
                    block_done += 1
            elif outcome == "fails":
                # The job file says fio's run fails (t0003-post: "Expected
                # result: verify fails"): it runs to the end, reports the
                # job's error in fio's JSON (after fio's "fio: pid=" lines,
                # as fio prints them), and exits non-zero.
                out = r.stdout
                jobs = []
                try:
                    jobs = json.loads(out[out.find("{"):])["jobs"]
                except (ValueError, KeyError):
                    pass
                if r.returncode == 0 or not jobs or not any(j.get("error") for j in jobs) or detail not in err:
                    failures.append("%s should run and fail as fio does ('%s'): exit %d: %s" % (
                        name, detail, r.returncode, err[-300:]))
                elif block:
                    block_done += 1
            else:
                if r.returncode == 0 or detail not in err:
                    failures.append("%s should be refused with '%s': exit %d: %s" % (
                        name, detail, r.returncode, err[-300:]))
                if any(x in err for x in FILE_NAME_REFUSALS):
                    failures.append("%s is refused for a file name: %s" % (name, err[-300:]))
            block_total += block
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("corpus: %d of %d fio-accepted files with a block-layer engine run to completion (%.1f%%); "
          "%d files in all" % (block_done, block_total, 100.0 * block_done / max(block_total, 1), len(accepted)))
    for f in failures:
        print("FAIL: " + f)
    print("%d passed, %d failed" % (len(accepted) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
