#!/usr/bin/python3
"""The layer check: the include graph of the production code against docs/architecture.md.

  scripts/check_layers.py [--root DIR] [--doc FILE] [--quiet]

Reads every production source (.cc, .h, .cu, .cuh tracked or present under the root, outside
tests/, bench/, examples/ and build directories) and its `#include "..."` lines that name a
file of the tree (includes are relative to the repository root), then checks three rules:

  1. no circle between files: the units (a .h and its .cc/.cu count as one unit, the same
     name without its suffix) form no cycle; two units that include each other are the
     shortest such circle (a "back-arrow");
  2. no circle between folders: folder A including folder B while B includes A;
  3. floors: each folder only includes folders on its own floor or below, as the `layers`
     block of docs/architecture.md draws them (a folder belongs to the floor of the longest
     listed prefix; a folder no floor lists is an error, so a new folder is placed on purpose).

Exit 0 when all hold, 1 with one line per violation, 2 for a bad root or layers block.
"""
import argparse
import os
import re
import sys

SUFFIXES = (".cc", ".h", ".cu", ".cuh")
SKIP_TOP = {"tests", "bench", "examples", "docs", "configs", "scripts", "cmake", "shared"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAX_FILE_BYTES = 4 << 20


def sources(root):
    out = []
    for top in sorted(os.listdir(root)):
        path = os.path.join(root, top)
        if top.startswith(".") or top in SKIP_TOP or top.startswith("build"):
            continue
        if not os.path.isdir(path):
            continue
        for d, subdirs, files in os.walk(path):
            subdirs[:] = sorted(s for s in subdirs
                                if not s.startswith(".") and s != "node_modules")
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def parse_layers(doc_path):
    """The floors from the ```layers block: lines 'N folder folder ...', '#' comments."""
    try:
        with open(doc_path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SystemExit(f"check_layers: {doc_path}: {e.strerror}")
    m = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    if not m:
        print(f"check_layers: {doc_path}: no ```layers block", file=sys.stderr)
        sys.exit(2)
    floors = {}
    first_line = text[:m.start(1)].count("\n") + 1
    for i, line in enumerate(m.group(1).splitlines()):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if not parts[0].isdigit() or len(parts) < 2:
            print(f"check_layers: {doc_path}:{first_line + i}: expected 'FLOOR folder...'",
                  file=sys.stderr)
            sys.exit(2)
        for folder in parts[1:]:
            floors[folder.rstrip("/")] = int(parts[0])
    return floors


def floor_of(folder, floors):
    best = None
    for prefix, n in floors.items():
        if folder == prefix or folder.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, n)
    return best[1] if best else None


def unit_of(path):
    return os.path.splitext(path)[0]


def cycles(graph):
    """Strongly connected components of size > 1 (Tarjan, iterative), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    pushed = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def parse_known(doc_path):
    """Circles not yet broken, one per line (members joined by ' <-> ', as reported), from the
    optional ```circles-left block: listed ones do not fail the check, a listed one that is
    gone does (so the list only shrinks)."""
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```circles-left\n(.*?)^```", text, re.M | re.S)
    if not m:
        return set()
    return {l.strip() for l in m.group(1).splitlines() if l.strip() and not l.startswith("#")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--doc", help="the page with the layers block "
                    "(default ROOT/docs/architecture.md)")
    ap.add_argument("--quiet", action="store_true", help="print only violations")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"check_layers: {root}: not a directory", file=sys.stderr)
        return 2
    floors = parse_layers(args.doc or os.path.join(root, "docs", "architecture.md"))

    known = parse_known(args.doc or os.path.join(root, "docs", "architecture.md"))

    files = sources(root)
    units, folders, where = {}, {}, {}
    for f in files:
        if os.path.getsize(os.path.join(root, f)) > MAX_FILE_BYTES:
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for n, m in enumerate(INCLUDE.finditer(text)):
            target = m.group(1)
            if not os.path.isfile(os.path.join(root, target)):
                continue  # a system or generated header
            a, b = unit_of(f), unit_of(target)
            if a != b:
                units.setdefault(a, set()).add(b)
                line = text.count("\n", 0, m.start()) + 1
                where.setdefault((a, b), f"{f}:{line}")
            fa, fb = os.path.dirname(f), os.path.dirname(target)
            if fa != fb:
                folders.setdefault(fa, set()).add(fb)
                line = text.count("\n", 0, m.start()) + 1
                where.setdefault(("dir", fa, fb), f"{f}:{line}")

    problems, seen = [], set()
    for comp in cycles(units):
        members = set(comp)
        if " <-> ".join(comp) in known:
            seen.add(" <-> ".join(comp))
            continue
        edges = [where[(a, b)] for a in comp for b in sorted(units.get(a, ()))
                 if b in members]
        problems.append("file circle: " + " <-> ".join(comp) + " (" + ", ".join(edges) + ")")
    for comp in cycles(folders):
        members = set(comp)
        if " <-> ".join(comp) in known:
            seen.add(" <-> ".join(comp))
            continue
        edges = [where[("dir", a, b)] for a in comp for b in sorted(folders.get(a, ()))
                 if b in members]
        problems.append("folder circle: " + " <-> ".join(comp) + " (" + ", ".join(edges) + ")")
    for a in sorted(folders):
        fa = floor_of(a, floors)
        if fa is None:
            problems.append(f"folder {a} is on no floor of the layers block: place it there")
            continue
        for b in sorted(folders[a]):
            fb = floor_of(b, floors)
            if fb is None:
                problems.append(f"folder {b} is on no floor of the layers block: place it there")
            elif fb > fa:
                problems.append(f"up-arrow: {a} (floor {fa}) includes {b} (floor {fb}) at "
                                f"{where[('dir', a, b)]}")
    for k in sorted(known - seen):
        problems.append(f"listed circle is gone (good): remove it from ```circles-left: {k}")
    for p in sorted(set(problems)):
        print(p)
    if not args.quiet:
        print(f"check_layers: {len(files)} files, {len(units)} units, {len(folders)} folders: "
              f"{len(set(problems))} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
