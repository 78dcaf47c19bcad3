#!/usr/bin/python3
"""Checks configs/schema/*.schema.json against the shipped YAML files and the real loaders.

Run with Debian's /usr/bin/python3 (python3-jsonschema 4.10, python3-yaml):
    /usr/bin/python3 tests/schema/check_schemas.py --root . --faultline build/bin/faultline

1. Every YAML file in a folder that holds scenarios, topologies, inventories or suites (FOLDERS)
   validates against its kind's schema and starts with the editor line
   `# yaml-language-server: $schema=<relative path to that schema>`. A YAML file under configs/
   in no known folder fails the check: add its folder to FOLDERS (or OTHER_KINDS).
2. Negative cases: deliberately wrong documents are rejected by the schema AND by the loader
   (`faultline run FILE --dry-run`, `faultline run SCENARIO --lab FILE --dry-run`,
   `faultline suite FILE`), which exits 2 with the expected complaint; the unbroken base
   documents pass both (the suite's only the schema: running it is not cheap).
Nothing is built or created but files in a temporary directory; no root needed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
    import yaml
except ImportError as e:  # the python3 first in PATH, or Debian's without the packages
    sys.exit("check_schemas.py: %s: run it with /usr/bin/python3 with Debian's python3-jsonschema "
             "and python3-yaml (scripts/setup.sh installs them)" % e)

# folder (relative to the repository root) -> the schema of the YAML files in it
FOLDERS = {
    "configs/scenarios": "scenario",
    "configs/labs": "topology",
    "configs/inventories": "inventory",
    "configs/suites": "suite",
    "bench/configs": "scenario",
}
# files in those folders of another kind than their folder's
FILE_KINDS = {
    "bench/configs/lab2.yaml": "topology",
}
# folders under configs/ with YAML files of other kinds (their own loaders and docs)
OTHER_KINDS = {
    "configs/switches": "ssh-template switch presets (injectors/switch/ssh_template/)",
    "configs/policies": "agent policies (harness/agent/agent_policy.cc)",
    "configs/failure_rates": "failure rates of faultline project (reports/analysis/failure_rates.cc)",
    "configs/sweeps": "sweep files of faultline sweep (harness/suite/sweep_plan.cc)",
    "configs/alerts": "Prometheus alert rules for faultline score (docs/detectors.md; promtool checks them)",
}
SCHEMA_DIR = "configs/schema"
EDITOR_PREFIX = "# yaml-language-server: $schema="

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def load_schemas(root):
    schemas = {}
    for kind in sorted(set(FOLDERS.values()) | set(FILE_KINDS.values())):
        path = os.path.join(root, SCHEMA_DIR, kind + ".schema.json")
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        for where in undocumented(schema):
            fail("%s: %s has no description" % (os.path.relpath(path, root), where))
        schemas[kind] = cls(schema)
    return schemas


# Subschemas that only constrain (they add no key an editor would offer).
CONSTRAINTS = ("if", "then", "else", "not", "allOf", "anyOf")


def undocumented(schema, node=None, where=""):
    """The properties of a schema without a description (editors show it as the key's help);
    a bare local $ref takes its target's."""
    node = schema if node is None else node
    out = []
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            if isinstance(sub, dict) and not sub.get("description") and "$ref" in sub:
                target = schema
                for part in sub["$ref"].lstrip("#/").split("/"):
                    target = target.get(part, {})
                sub = target
            if not isinstance(sub, dict) or not sub.get("description"):
                out.append(where + "/properties/" + key)
        for key, sub in node.items():
            if key not in CONSTRAINTS:
                out += undocumented(schema, sub, where + "/" + key)
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out += undocumented(schema, sub, "%s/%d" % (where, i))
    return out


def errors_of(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def describe(e):
    where = "/".join(str(p) for p in e.absolute_path) or "(root)"
    return where + ": " + e.message[:300]


def yaml_files(root):
    out = []
    for top in ("configs", "bench/configs"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".yaml", ".yml")):
                    out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(set(out))


def check_shipped(root, schemas):
    checked = 0
    for rel in yaml_files(root):
        folder = os.path.dirname(rel)
        if folder in OTHER_KINDS:
            continue
        kind = FILE_KINDS.get(rel, FOLDERS.get(folder))
        if kind is None:
            fail(rel + ": in no folder of tests/schema/check_schemas.py (FOLDERS or OTHER_KINDS):"
                 " say which schema it follows")
            continue
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        want = os.path.relpath(os.path.join(root, SCHEMA_DIR, kind + ".schema.json"),
                               os.path.dirname(path))
        first = text.split("\n", 1)[0]
        if first != EDITOR_PREFIX + want:
            fail("%s: the first line should be '%s%s' (editor support), not '%s'" %
                 (rel, EDITOR_PREFIX, want, first))
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            fail("%s: YAML: %s" % (rel, e))
            continue
        errs = errors_of(schemas[kind], doc)
        for e in errs:
            fail("%s (%s schema): %s" % (rel, kind, describe(e)))
        checked += 1
        print("ok   %-45s %s" % (rel, kind))
    if checked == 0:
        fail("no shipped YAML file was checked")
    return checked


# ---- negative cases -----------------------------------------------------------------------

def base_scenario(root):
    return {
        "name": "schema_neg",
        "seed": 1,
        "lab": {"topology": os.path.join(root, "configs/labs/rail4.yaml")},
        "job": {"workload": "allreduce_loop", "ccl": "ftccl", "size": "1MiB", "iterations": 10},
        "faults": [{"kind": "nic_port_flap", "target": "h1.nic0", "at": "1s", "duration": "1s"}],
        "expectations": {"survives": True},
    }


def base_command_scenario(root):
    s = base_scenario(root)
    s["job"] = {"command": ["/bin/true"], "ccl": "gloo", "ranks_per_host": 1,
                "progress": {"format": "exit"}}
    s["faults"] = []
    return s


def base_topology():
    return {"name": "neg4", "hosts": 4, "gpus_per_host": 2, "nics_per_host": 2,
            "link": {"rate": "1gbit", "burst": "256KiB", "mtu": 1500}}


def base_inventory():
    return {
        "name": "neg",
        "coordinator": {"listen": "127.0.0.1:7070", "token_file": "/nonexistent/token"},
        "agent_wait": "10s",
        "hosts": [{"name": "node01", "ranks": 2,
                   "nics": [{"name": "nic0", "ifname": "eth0", "address": "10.0.0.1"},
                            {"name": "nic1", "ifname": "eth1", "address": "10.1.0.1"}]},
                  {"name": "node02", "ranks": 2,
                   "nics": [{"name": "nic0", "ifname": "eth0", "address": "10.0.0.2"},
                            {"name": "nic1", "ifname": "eth1", "address": "10.1.0.2"}]}],
    }


def base_suite(root):
    return {"name": "neg", "repeat": 1, "run_timeout": "1m",
            "scenarios": [os.path.join(root, "configs/scenarios/nic_flap.yaml")],
            "tolerances": {"recovery_ms": {"relative": 0.5}}}


def mutate(doc, path, value):
    """doc with the key at path (a list of keys/indices) set to value (None: removed)."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for p in path[:-1]:
        node = node[p]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


# Shapes the shipped files do not show, which both must accept: (kind, base, path, value,
# whether the loader is asked too: suites and Slurm labs only by the schema).
def positive_cases(root):
    sc, cmd, topo, inv, su = (base_scenario(root), base_command_scenario(root), base_topology(),
                              base_inventory(), base_suite(root))
    worker_duration = dict(sc["job"], duration=30)
    del worker_duration["iterations"]
    return [
        ("scenario", sc, ["job"], worker_duration, True),
        ("scenario", sc, ["job", "size"], 4096, True),
        ("scenario", sc, ["faults", 0], {"kind": "nic_port_flap", "target_class": "nic",
                                         "every": "2 S", "count": 3, "jitter": "100ms",
                                         "duration": 0.5}, True),
        ("scenario", sc, ["job", "env"], {"NCCL_DEBUG": "INFO", "X_1": 2}, True),
        ("scenario", cmd, ["job", "duration"], "1.5min", True),
        ("scenario", cmd, ["job", "command"], ["/bin/echo", 28, "x"], True),
        ("scenario", sc, ["lab"], {"slurm": {"nodes": ["gpu01", "gpu02"], "ranks_per_node": 2,
                                             "nics": ["ib0"], "agent_wait": "2m",
                                             "coordinator": {"listen": "10.0.0.1:0",
                                                             "token_file": "token"}}}, False),
        ("topology", topo, ["uplink"], {"rate": 0, "burst": "1 MiB"}, True),
        ("topology", topo, ["link"], {"mtu": 9000}, True),
        ("topology", topo, ["routing"], "l2", True),
        ("inventory", inv, ["launcher"], "slurm", True),
        ("inventory", inv, ["hosts", 0, "containers"], [{"rank": 1, "runtime": "podman",
                                                         "id": "train-1"}], True),
        ("suite", su, ["scenarios", 0], {"path": "a.yaml", "repeat": 2, "seed": 7,
                                         "tags": {"fw": 22.41},
                                         "ccls": ["gloo", {"name": "ftccl",
                                                           "options": {"k": 1}}]}, False),
        ("suite", su, ["tolerances"], {"recovery_ms": "20%,50", "failover_ms": 30,
                                       "baseline_algbw": "5%"}, False),
        ("suite", su, ["regression"], {"enabled": False, "confidence": 0.99,
                                       "resamples": 1000, "metrics": ["recovery_ms"]}, False),
    ]


# (kind, base, path, value, the loader's complaint)
def negative_cases(root):
    sc, cmd, topo, inv, su = (base_scenario(root), base_command_scenario(root), base_topology(),
                              base_inventory(), base_suite(root))
    return [
        ("scenario", sc, ["colour"], "red", "unknown key 'colour' in scenario"),
        ("scenario", sc, ["job", "iterations"], "many", "is not a valid iterations"),
        ("scenario", sc, ["job", "dtype"], "float8", "unknown dtype 'float8'"),
        ("scenario", sc, ["job", "ranks_per_host"], 2, "applies to a command job"),
        ("scenario", sc, ["faults", 0, "when"], "2s", "unknown key 'when' in fault"),
        ("scenario", sc, ["faults", 0, "at"], "3 parsecs", "unknown duration unit"),
        ("scenario", sc, ["faults", 0, "after_iteration"], 100,
         "exactly one of 'at', 'after_iteration'"),
        ("scenario", sc, ["faults", 0, "count"], 3, "count > 1 needs 'every'"),
        ("scenario", sc, ["faults", 0, "target"], None, "fault needs 'target'"),
        ("scenario", sc, ["job", "size"], "1 MiBs", "unknown size unit"),
        ("scenario", sc, ["expectations", "survives"], "maybe", "is not a valid survives"),
        ("scenario", sc, ["lab", "inventory"], "x.yaml", "lab needs exactly one of"),
        ("scenario", cmd, ["job", "progress", "format"], "json", "progress.format must be"),
        ("scenario", cmd, ["job", "ccl"], "mpi", "unknown ccl 'mpi'"),
        ("scenario", cmd, ["job", "workload"], "allreduce_loop", "'workload' configures"),
        ("scenario", cmd, ["job", "command"], ["true"], "must be an absolute path"),
        ("scenario", cmd, ["job", "env"], {"RANK": "3"}, "is set by faultline"),
        ("topology", topo, ["colour"], "red", "unknown key 'colour' in topology"),
        ("topology", topo, ["hosts"], "four", "is not a valid hosts"),
        ("topology", topo, ["switch_control"], "telnet", "switch_control must be netlink or ssh"),
        ("topology", topo, ["link", "rate"], "1gigabit", "unknown rate unit"),
        ("topology", topo, ["name"], "Rail-4", "name must be 1-10 characters"),
        ("topology", topo, ["routing"], "ospf", "routing must be l2 or bgp"),
        ("topology", topo, ["spines"], 2, "spines must be between 0 and 1"),
        ("inventory", inv, ["hosts", 0, "nics", 0, "speed"], "100g", "unknown key 'speed' in nic"),
        ("inventory", inv, ["launcher"], "cron", "launcher must be systemd"),
        ("inventory", inv, ["hosts", 0, "ranks"], "eight", "is not a valid ranks"),
        ("inventory", inv, ["hosts", 0, "containers"], [{"runtime": "lxc", "id": "c0"}],
         "runtime must be docker or podman"),
        ("inventory", inv, ["coordinator", "listen"], "127.0.0.1", "listen wants IPv4:PORT"),
        ("inventory", inv, ["coordinator", "listen"], "127.0.0.1:0", "listen wants IPv4:PORT"),
        ("suite", su, ["colour"], "red", "unknown key 'colour' in suite"),
        ("suite", su, ["repeat"], "often", "is not a valid repeat"),
        ("suite", su, ["tolerances", "recovery_ms"], {"relative": 0.5, "typo": 1},
         "unknown key 'typo' in tolerance"),
        ("suite", su, ["scenarios"], [], "scenarios must list 1 to 1000"),
        ("suite", su, ["scenarios", 0], {"file": "x.yaml"}, "unknown key 'file' in scenario"),
    ]


def run_loader(faultline, root, kind, path, tmp):
    db = os.path.join(tmp, "results.db")
    if kind == "scenario":
        argv = [faultline, "run", path, "--dry-run", "--db", db]
    elif kind in ("topology", "inventory"):
        probe = os.path.join(tmp, "probe_" + kind + ".yaml")
        if not os.path.exists(probe):
            s = base_scenario(root)
            s["faults"][0] = {"kind": "nic_port_flap", "target_class": "nic", "at": "1s",
                              "duration": "1s"}
            with open(probe, "w", encoding="utf-8") as f:
                yaml.safe_dump(s, f)
        argv = [faultline, "run", probe, "--lab", path, "--dry-run", "--db", db]
    else:
        argv = [faultline, "suite", path, "--db", db]
    p = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60)
    if os.path.exists(db):
        fail("%s: the loader check made a results database" % " ".join(argv))
    return p.returncode, p.stdout + p.stderr


def check_negative(root, schemas, faultline):
    with tempfile.TemporaryDirectory(prefix="fl_schema_") as tmp:
        bases = {}
        for kind, base, _, _, _ in negative_cases(root):
            bases.setdefault((kind, json.dumps(base, sort_keys=True)), base)
        for i, ((kind, _), base) in enumerate(sorted(bases.items())):
            for e in errors_of(schemas[kind], base):
                fail("base %s document (schema): %s" % (kind, describe(e)))
            if kind == "suite" or not faultline:
                continue
            path = os.path.join(tmp, "base%d.yaml" % i)
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump(base, f)
            rc, out = run_loader(faultline, root, kind, path, tmp)
            if rc != 0:
                fail("base %s document: the loader should accept it, exit %d: %s" %
                     (kind, rc, out.strip()[:400]))
        for i, (kind, base, keys, value, ask_loader) in enumerate(positive_cases(root)):
            doc = mutate(base, keys, value)
            what = "%s %s=%s" % (kind, ".".join(str(k) for k in keys), json.dumps(value))
            for e in errors_of(schemas[kind], doc):
                fail("%s: the schema should accept it: %s" % (what, describe(e)))
            if not ask_loader or not faultline:
                continue
            path = os.path.join(tmp, "pos%02d.yaml" % i)
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump(doc, f)
            rc, out = run_loader(faultline, root, kind, path, tmp)
            if rc != 0:
                fail("%s: the loader should accept it, exit %d: %s" % (what, rc, out.strip()[:400]))
            else:
                print("ok   accepted by schema and loader: " + what)
        for i, (kind, base, keys, value, complaint) in enumerate(negative_cases(root)):
            doc = mutate(base, keys, value)
            what = "%s %s=%s" % (kind, ".".join(str(k) for k in keys), json.dumps(value))
            if not errors_of(schemas[kind], doc):
                fail(what + ": the schema accepts it, the loader does not")
            if not faultline:
                continue
            path = os.path.join(tmp, "neg%02d.yaml" % i)
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump(doc, f)
            rc, out = run_loader(faultline, root, kind, path, tmp)
            if rc != 2 or complaint not in out:
                fail("%s: the loader should exit 2 with '%s', got exit %d: %s" %
                     (what, complaint, rc, out.strip()[:400]))
            else:
                print("ok   rejected by schema and loader: " + what)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--faultline", default="",
                    help="the faultline binary for the loader side of the negative cases")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    faultline = os.path.abspath(a.faultline) if a.faultline else ""
    if faultline and not os.access(faultline, os.X_OK):
        fail("no faultline binary at " + faultline)
        faultline = ""
    schemas = load_schemas(root)
    n = check_shipped(root, schemas)
    check_negative(root, schemas, faultline)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all %d shipped files valid; %d other valid shapes accepted, %d wrong documents "
          "rejected, by the schemas%s" % (n, len(positive_cases(root)), len(negative_cases(root)),
                                         " and the loaders" if faultline else
                                         " (no --faultline: loaders not asked)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
