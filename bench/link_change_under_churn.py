#!/usr/bin/python3
"""How long one link-state change takes, quiet and while namespaces come and go.

Evidence for docs/performance.md ("Injection time error"): a NIC flap is a link-state change,
made under the kernel's rtnl lock, and creating or deleting namespaces, veths and bridges
(as the test suite's labs do) holds that lock too. Flips a veth in a namespace of its own
N times with `ip link set` (each one netlink request, timed with the ip process around it), first
on a quiet machine, then beside two busy loops (the CPU alone, as a control), then while another
process creates and deletes namespaces with a veth pair and a bridge each. Root; touches only
namespaces named flprobe and flchurnN, and removes them; ends the busy loops it started.

  bench/link_change_under_churn.py [N]
"""
import statistics
import subprocess
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
CHURN = ("for i in $(seq 60); do ip netns add flchurn$i && "
         "ip -n flchurn$i link add va type veth peer name vb && "
         "ip -n flchurn$i link add br0 type bridge && ip netns del flchurn$i; done")


def flips(n):
    times = []
    for i in range(n):
        start = time.perf_counter()
        subprocess.run(["ip", "-n", "flprobe", "link", "set", "p0", "down" if i % 2 else "up"],
                       check=True)
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)


def report(name, t):
    print(f"{name}: median {statistics.median(t):.2f} ms, p99 {t[max(0, int(len(t) * 0.99) - 1)]:.2f} ms, "
          f"max {t[-1]:.2f} ms over {len(t)} changes (the ip process included)")


subprocess.run("ip netns add flprobe && ip -n flprobe link add p0 type veth peer name p1",
               shell=True, check=True)
try:
    quiet = flips(N)
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        cpu = flips(N)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    churn = subprocess.Popen(CHURN, shell=True)
    busy = flips(N)
    churn.wait()
finally:
    subprocess.run("ip netns del flprobe", shell=True)
    subprocess.run("for i in $(seq 60); do ip netns del flchurn$i 2>/dev/null; done", shell=True)
report("quiet", quiet)
report("beside 2 busy loops (both cores)", cpu)
report("beside namespace churn", busy)
