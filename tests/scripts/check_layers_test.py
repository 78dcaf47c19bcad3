#!/usr/bin/python3
"""Tests of scripts/check_layers.py itself: scratch trees with a planted file circle, a
back-arrow between a contract and its kind, a folder circle and an up-arrow each fail (exit
1, naming the culprit), and a clean tree passes."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                     "check_layers.py")
LAYERS = """# Architecture
```layers
2 top
1 mid mid/kinds
0 base
```
"""


def tree(d, files, known=""):
    os.makedirs(os.path.join(d, "docs"))
    with open(os.path.join(d, "docs", "architecture.md"), "w") as f:
        f.write(LAYERS + (f"```circles-left\n{known}\n```\n" if known else ""))
    for path, includes in files.items():
        full = os.path.join(d, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("#pragma once\n" + "".join(f'#include "{i}"\n' for i in includes))
    return d


def run(d):
    r = subprocess.run([sys.executable, CHECK, "--root", d], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout + r.stderr


CLEAN = {"base/a.h": [], "base/a.cc": ["base/a.h"], "mid/m.h": ["base/a.h"],
         "mid/m.cc": ["mid/m.h"], "top/t.cc": ["mid/m.h", "base/a.h"]}

CASES = [
    ("a clean tree passes", CLEAN, 0, "0 violation"),
    ("a file circle", dict(CLEAN, **{"base/a.h": ["base/b.h"], "base/b.h": ["base/c.h"],
                                    "base/c.h": ["base/a.h"]}), 1, "file circle: base/a"),
    ("a contract that includes its kind (back-arrow)",
     dict(CLEAN, **{"mid/lab.h": [], "mid/lab.cc": ["mid/lab.h", "mid/kinds/local.h"],
                    "mid/kinds/local.h": ["mid/lab.h"]}), 1, "mid/kinds/local <-> mid/lab"),
    ("a folder circle", dict(CLEAN, **{"mid/x.cc": ["mid/kinds/k.h"],
                                      "mid/kinds/k.h": [], "mid/kinds/k.cc": ["mid/y.h"],
                                      "mid/y.h": []}),
     1, "folder circle: mid <-> mid/kinds"),
    ("an up-arrow", dict(CLEAN, **{"base/a.cc": ["base/a.h", "top/t.h"], "top/t.h": []}),
     1, "up-arrow: base (floor 0) includes top (floor 2)"),
    ("a folder on no floor", dict(CLEAN, **{"stray/s.cc": ["base/a.h"]}), 1,
     "folder stray is on no floor"),
]
CIRCLE = dict(CLEAN, **{"base/a.h": ["base/b.h"], "base/b.h": ["base/a.h"]})
# (name, files, circles-left block, exit code, text in the output)
KNOWN_CASES = [
    ("a listed circle passes", CIRCLE, "base/a <-> base/b", 0, "0 violation"),
    ("a listed circle that is gone fails", CLEAN, "base/a <-> base/b", 1,
     "listed circle is gone"),
    ("an unlisted circle beside a listed one fails",
     dict(CIRCLE, **{"mid/m.h": ["mid/n.h"], "mid/n.h": ["mid/m.h"]}), "base/a <-> base/b", 1,
     "file circle: mid/m <-> mid/n"),
]


def main():
    failed = 0
    for name, files, want_rc, want_text in CASES:
        with tempfile.TemporaryDirectory(prefix="fl_layers_") as d:
            rc, out = run(tree(d, files))
        ok = rc == want_rc and want_text in out
        print(("ok     " if ok else "FAILED ") + name + ("" if ok else f": rc {rc}\n{out}"))
        failed += not ok
    for name, files, known, want_rc, want_text in KNOWN_CASES:
        with tempfile.TemporaryDirectory(prefix="fl_layers_") as d:
            rc, out = run(tree(d, files, known))
        ok = rc == want_rc and want_text in out
        print(("ok     " if ok else "FAILED ") + name + ("" if ok else f": rc {rc}\n{out}"))
        failed += not ok
    total = len(CASES) + len(KNOWN_CASES)
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
