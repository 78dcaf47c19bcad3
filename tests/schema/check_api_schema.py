#!/usr/bin/python3
"""Checks `faultline serve`'s JSON API against docs/api/serve_v1.schema.json, over HTTP.

Run with Debian's /usr/bin/python3 (python3-jsonschema):
    /usr/bin/python3 tests/schema/check_api_schema.py --root . \
        --faultline build/bin/faultline --generator build/bin/bench_serve_store

1. A store of generated runs (bench/serve_store.cc: nights of three clusters, a firmware
   change with a planted shift, some runs with a fault, its ledger and verdicts) in a
   temporary directory.
2. The real server (`faultline serve --listen 127.0.0.1:0`) on it; every endpoint of the
   schema's x-endpoints is fetched with real parameters and its answer validated against its
   definition; the answers must also hold what the store holds (runs listed, a change point in
   the trends, ledger rows in the comparison), so an empty answer cannot pass.
3. Bad parameters for each endpoint: a 400 (404 for unknown runs and paths, 405 for a POST)
   whose body is the schema's `error`; never a 500.
Nothing is left behind: the temporary directory is removed and the server stopped by its pid.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

try:
    import jsonschema
except ImportError as e:
    sys.exit("check_api_schema.py: %s: run it with /usr/bin/python3 with Debian's "
             "python3-jsonschema (scripts/setup.sh installs it)" % e)

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL " + msg)


def get(base, path, method="GET"):
    req = urllib.request.Request(base + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--faultline", required=True)
    ap.add_argument("--generator", required=True, help="bench_serve_store")
    ap.add_argument("--runs", type=int, default=3600)
    args = ap.parse_args()

    with open(os.path.join(args.root, "docs/api/serve_v1.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)

    def check(name, doc, where):
        sub = dict(schema)
        sub["$ref"] = "#/$defs/" + name
        errors = sorted(jsonschema.Draft202012Validator(sub).iter_errors(doc),
                        key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            fail("%s: %s at %s" % (where, e.message, "/".join(map(str, e.absolute_path))))
        return not errors

    with tempfile.TemporaryDirectory(prefix="fl_api_schema_") as tmp:
        db = os.path.join(tmp, "results.db")
        gen = subprocess.run([args.generator, "--runs", str(args.runs), "--db", db,
                              "--repeat", "1"], capture_output=True, text=True, timeout=600)
        if gen.returncode != 0:
            sys.exit("generator failed: " + gen.stderr[-2000:])
        log_path = os.path.join(tmp, "serve.log")
        log = open(log_path, "w")
        server = subprocess.Popen([args.faultline, "serve", "--db", db, "--listen",
                                   "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=log)
        try:
            port = None
            deadline = time.time() + 30
            while port is None and time.time() < deadline and server.poll() is None:
                m = re.search(r"http://127\.0\.0\.1:(\d+)/", open(log_path).read())
                if m:
                    port = int(m.group(1))
                else:
                    time.sleep(0.05)
            if port is None:
                sys.exit("faultline serve did not start: " + open(log_path).read())
            base = "http://127.0.0.1:%d" % port
            run_checks(base, check)
        finally:
            server.send_signal(signal.SIGINT)
            try:
                code = server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                code = server.wait()
            if code != 0:
                fail("faultline serve exited %s on SIGINT" % code)
            log.close()

    if FAILURES:
        print("check_api_schema: %d failure(s)" % len(FAILURES))
        return 1
    print("check_api_schema: every endpoint's answers and errors match docs/api/serve_v1.schema.json")
    return 0


def run_checks(base, check):
    def ok(path, name):
        status, body = get(base, path)
        if status != 200:
            fail("%s: status %d: %s" % (path, status, body[:300]))
            return None
        doc = json.loads(body)
        check(name, doc, path)
        print("ok   %s (%s, %d bytes)" % (path, name, len(body)))
        return doc

    overview = ok("/api/v1/overview", "overview")
    if overview is not None and len(overview["groups"]) != 3:
        fail("/api/v1/overview: want the 3 generated clusters, got %d" % len(overview["groups"]))
    runs = ok("/api/v1/runs?limit=50&scenario=scenario_7&tag=fw%3D22.41", "runs")
    if runs is not None and not runs:
        fail("/api/v1/runs: no run of scenario_7 on fw 22.41")
    run = ok("/api/v1/runs/bench-0000000", "run")
    if run is not None and (not run["faults"] or not run["verdicts"] or not run["faults"][0]["ledger"]):
        fail("/api/v1/runs/bench-0000000: want its fault, ledger and verdicts")
    trends = ok("/api/v1/trends?scenario=scenario_7", "trends")
    if trends is not None:
        points = [cp for s in trends["series"] if s["key"] == "f0/recovery_ms"
                  for cp in s["change_points"]]
        if not any("fw: 22.39 -> 22.41" in cp["changed"] for cp in points):
            fail("/api/v1/trends: the planted shift of f0/recovery_ms naming fw is missing")
    sel = "a=tag:fw%3D22.39&b=tag:fw%3D22.41&scenario=scenario_7"
    cmp = ok("/api/v1/compare?" + sel, "compare")
    if cmp is not None and (not cmp["rows"] or not cmp["ledger"]):
        fail("/api/v1/compare: want rows and ledger rows")
    acc = ok("/api/v1/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41", "accept")
    if acc is not None and acc["accepted"]:
        fail("/api/v1/accept: the planted slowdown on 22.41 must not be accepted")

    bad = [
        ("/api/v1/overview?x=1", 400),
        ("/api/v1/runs?limit=0", 400),
        ("/api/v1/runs?limit=x", 400),
        ("/api/v1/runs?status=fine", 400),
        ("/api/v1/runs?tag=nokey", 400),
        ("/api/v1/runs?what=1", 400),
        ("/api/v1/runs/" + "x" * 65, 400),
        ("/api/v1/runs/bad%20id", 400),
        ("/api/v1/runs/no-such-run", 404),
        ("/api/v1/trends", 400),
        ("/api/v1/trends?scenario=no_such", 404),
        ("/api/v1/trends?scenario=scenario_7&extra=1", 400),
        ("/api/v1/compare?a=latest", 400),
        ("/api/v1/compare?a=date:2026-02-30&b=latest", 400),
        ("/api/v1/compare?a=tag:&b=latest", 400),
        ("/api/v1/accept?baseline=tag:fw%3D22.39", 400),
        ("/api/v1/accept?baseline=tag:fw%3D1&candidate=tag:fw%3D2", 404),
        ("/api/v1/nothing", 404),
        ("/api/v1/runs?tag=%zz", 400),
    ]
    for path, want in bad:
        status, body = get(base, path)
        if status >= 500:
            fail("%s: %d (a server error for bad input)" % (path, status))
            continue
        if status != want:
            fail("%s: want %d, got %d: %s" % (path, want, status, body[:200]))
            continue
        try:
            doc = json.loads(body)
        except ValueError:
            fail("%s: error body is not JSON: %r" % (path, body[:200]))
            continue
        if check("error", doc, path):
            print("ok   %s -> %d %s" % (path, status, doc["error"]))
    status, body = get(base, "/api/v1/overview", method="POST")
    if status != 405:
        fail("POST /api/v1/overview: want 405, got %d" % status)
    else:
        check("error", json.loads(body), "POST /api/v1/overview")


if __name__ == "__main__":
    sys.exit(main())
