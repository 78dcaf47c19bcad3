#!/usr/bin/python3
"""Every ignored error says why it is safe (STYLE: "an ignored error is a decision").

  scripts/check_ignored_errors.py [--root DIR]

In production code (outside tests/, bench/, examples/ and build directories) each call of
`.IgnoreError()` needs a `//` comment on its own line or on one of the three lines above it
(the statement it ends may wrap). Exit 0 when every one has, 1 listing those that have not.
"""
import argparse
import os
import re
import sys

SUFFIXES = (".cc", ".h", ".cu", ".cuh")
SKIP_TOP = {"tests", "bench", "examples", "docs", "configs", "scripts", "cmake", "shared"}
CALL = re.compile(r"\.IgnoreError\(\)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    bad, total = [], 0
    for top in sorted(os.listdir(root)):
        if top.startswith(".") or top in SKIP_TOP or top.startswith("build"):
            continue
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and s != "node_modules")
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().split("\n")
                for i, line in enumerate(lines):
                    code = line.split("//", 1)[0]
                    if not CALL.search(code):
                        continue
                    total += 1
                    if not any("//" in l for l in lines[max(0, i - 3):i + 1]):
                        bad.append(f"{os.path.relpath(path, root)}:{i + 1}: {line.strip()}")
    for b in bad:
        print(b)
    print(f"check_ignored_errors: {total} ignored errors, {len(bad)} without a reason")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
