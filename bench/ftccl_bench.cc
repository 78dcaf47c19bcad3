// bench_ftccl: ftccl against its link limit and against gloo on a shaped namespace lab of
// 4 hosts x 2 ranks x 2 NICs (tc tbf on both ends of every link), and ftccl's failover time.
// Prints one Markdown table of medians (each row with the command line that measured it) for
// docs/performance.md.
//
//   bench_ftccl [--rate 500mbit] [--runs 5] [--repeats 20] [--perf build/bin/ftccl-perf]
//
// Needs root (namespaces, tc). Everything it creates is removed when it exits.
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/units.h"
#include "lab_job.h"
#include "netns_lab.h"

namespace {

using fl::Deadline;
using fl::kNsPerMs;
using fl::kNsPerSec;
using fl::Nanos;
using fl::ccl::testing::JobSpec;
using fl::ccl::testing::LabJob;
using fl::ccl::testing::NetnsLab;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first number after `key` following `anchor` in text.
double NumberAfter(const std::string& text, const std::string& anchor, const std::string& key) {
  size_t a = text.rfind(anchor);
  if (a == std::string::npos) return 0;
  size_t k = text.find(key, a);
  if (k == std::string::npos) return 0;
  return std::atof(text.c_str() + k + key.size());
}

struct Ctx {
  NetnsLab* lab;
  std::vector<std::string> rank_env;  // NAME=value for every ftccl-perf rank
  std::string perf;
  std::string rate;
  int hosts, nics;
  int iters = 3;  // timed iterations per size (-n)
  int check = 1;  // ftccl-perf -c
};

// Plain TCP blast, every link at once: on rail k host h sends to host h+1 (the ring's
// inter-host hop). Returns each flow's goodput in bytes/s.
std::vector<double> Blast(Ctx& c, int seconds) {
  std::vector<double> rates;
  char tmpl[] = "/tmp/flccl-blast-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::vector<pid_t> servers;
  for (int h = 0; h < c.hosts; ++h)
    for (int k = 0; k < c.nics; ++k) {
      int to = (h + 1) % c.hosts;
      auto pid = c.lab->Spawn(
          to,
          {"iperf3", "-s", "-1", "-B", NetnsLab::NicAddr(to, k), "-p", std::to_string(5201 + k)},
          dir + "/srv." + std::to_string(h) + "." + std::to_string(k));
      if (pid.ok()) servers.push_back(*pid);
    }
  // Clients start once their server listens (retry while refused, bounded).
  std::vector<pid_t> clients;
  for (int h = 0; h < c.hosts; ++h)
    for (int k = 0; k < c.nics; ++k) {
      int to = (h + 1) % c.hosts;
      fl::WaitUntil(
          [&] {
            return fl::ccl::testing::RunCommand({"ip", "netns", "exec", c.lab->HostNs(to), "ss",
                                                 "-ltn", "sport = :" + std::to_string(5201 + k)},
                                                5 * kNsPerSec, nullptr)
                .ok();
          },
          Deadline::After(5 * kNsPerSec), 20 * kNsPerMs);
    }
  for (int h = 0; h < c.hosts; ++h)
    for (int k = 0; k < c.nics; ++k) {
      int to = (h + 1) % c.hosts;
      auto pid =
          c.lab->Spawn(h,
                       {"iperf3", "-c", NetnsLab::NicAddr(to, k), "-B", NetnsLab::NicAddr(h, k),
                        "-p", std::to_string(5201 + k), "-t", std::to_string(seconds), "-J"},
                       dir + "/cli." + std::to_string(h) + "." + std::to_string(k));
      if (pid.ok()) clients.push_back(*pid);
    }
  for (pid_t p : clients)
    c.lab->Wait(p, Deadline::After((seconds + 20) * kNsPerSec)).status().IgnoreError();
  for (pid_t p : servers) c.lab->Wait(p, Deadline::After(10 * kNsPerSec)).status().IgnoreError();
  for (int h = 0; h < c.hosts; ++h)
    for (int k = 0; k < c.nics; ++k) {
      std::string j = ReadFile(dir + "/cli." + std::to_string(h) + "." + std::to_string(k));
      rates.push_back(NumberAfter(j, "\"sum_received\"", "\"bits_per_second\":") / 8);
    }
  c.lab->KillAll();
  std::string rm_dir = dir;
  fl::ccl::testing::RunCommand({"rm", "-rf", rm_dir}, 10 * kNsPerSec).IgnoreError();
  return rates;
}

// One ftccl-perf job; the busbw (bytes/s) of each size, from rank 0's --json.
// algo: ftccl-perf --algo ("" = the library's default).
std::vector<double> PerfBusbw(Ctx& c, const std::string& ccl, std::vector<int> rails,
                              const std::string& b, const std::string& e, int iters,
                              std::string* cmd, const std::string& algo = "") {
  char tmpl[] = "/tmp/flccl-perf-XXXXXX";
  std::string json = std::string(mkdtemp(tmpl)) + "/out.json";
  JobSpec spec{c.perf,
               ccl,
               2,
               rails,
               {"-b", b, "-e", e, "-f", "4", "-n", std::to_string(iters), "-w", "2", "-c",
                std::to_string(c.check), "--timeout", "120s", "--json", json},
               c.rank_env};
  if (!algo.empty()) {
    spec.args.push_back("--algo");
    spec.args.push_back(algo);
  }
  LabJob run2(*c.lab, spec);
  if (!run2.Start().ok()) return {};
  auto codes = run2.WaitAll(Deadline::After(600 * kNsPerSec));
  *cmd = "ftccl-perf --ccl " + ccl + " -b " + b + " -e " + e + " -f 4 -n " + std::to_string(iters) +
         " -w 2 -c " + std::to_string(c.check) + (algo.empty() ? "" : " --algo " + algo) +
         " (8 ranks, rails " + (rails.empty() ? std::string("0,1") : std::to_string(rails[0])) +
         ")";
  for (int code : codes) {
    if (code != 0) {
      std::fprintf(stderr, "bench: %s: a rank exited with %d\n%s\n", ccl.c_str(), code,
                   run2.Log(0).c_str());
      return {};
    }
  }
  std::string text = ReadFile(json);
  fl::ccl::testing::RunCommand({"rm", "-rf", json.substr(0, json.rfind('/'))}, 10 * kNsPerSec)
      .IgnoreError();
  std::vector<double> out;
  size_t pos = 0;
  while ((pos = text.find("\"busbw_gbs\":", pos)) != std::string::npos) {
    pos += 12;
    out.push_back(std::atof(text.c_str() + pos) * 1e9);
  }
  return out;
}

// Median iteration gap of rank 0 after `from` (wall ns).
double MedianGap(const std::vector<int64_t>& t, int64_t from) {
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i)
    if (t[i - 1] >= from) gaps.push_back(static_cast<double>(t[i] - t[i - 1]));
  return Median(gaps);
}

// Time from t0 to the end of the longest progress stall that overlaps t0 on any rank: the
// time until every rank makes progress again after the fault.
// When every rank makes steady progress again after a fault at t0: per rank, the end of the
// last abnormally long gap between completions (over 3x the median gap before t0) that
// starts before t_end, or the first completion after t0 when no gap was abnormal.
double ResumeMs(const LabJob& job, int64_t t0, int64_t t_end) {
  double worst = 0;
  for (int r = 0; r < job.ranks(); ++r) {
    auto t = job.ProgressTimes(r);
    std::vector<double> before;
    for (size_t i = 1; i < t.size(); ++i)
      if (t[i] < t0) before.push_back(static_cast<double>(t[i] - t[i - 1]));
    const double limit = std::max(3 * Median(before), 5e6);
    int64_t resume = -1;
    for (size_t i = 1; i < t.size(); ++i) {
      if (t[i] < t0) continue;
      if (resume < 0) resume = t[i];  // first completion after the fault
      if (t[i - 1] > t_end) break;
      if (static_cast<double>(t[i] - t[i - 1]) > limit) resume = t[i];
    }
    if (resume < 0) return -1;
    worst = std::max(worst, static_cast<double>(resume - t0) / 1e6);
  }
  return worst;
}

}  // namespace

NetnsLab* g_lab = nullptr;

// Ctrl-C / SIGTERM: remove the lab (processes, namespaces) before exiting.
void CleanupOnSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    if (g_lab) g_lab->~NetnsLab();
    _exit(128 + sig);
  }).detach();
}

int main(int argc, char** argv) {
  CleanupOnSignal();
  CLI::App app{"bench_ftccl: ftccl vs link limit and gloo on a shaped namespace lab"};
  std::string rate = "500mbit";
  int runs = 5, repeats = 20;
  std::string perf;
  bool skip_bw = false, skip_failover = false, only_2nic = false, only_1nic = false;
  std::vector<std::string> rank_env;
  app.add_option("--rate", rate, "tc tbf rate per link");
  app.add_option("--runs", runs, "runs per bandwidth figure (median reported)");
  app.add_option("--repeats", repeats, "fault repeats per failover figure");
  app.add_option("--perf", perf, "ftccl-perf binary (default: next to this one)");
  app.add_flag("--skip-bandwidth", skip_bw);
  app.add_flag("--skip-failover", skip_failover);
  app.add_flag("--only-2nic", only_2nic, "link limit and the 2-NIC 64 MiB figure only");
  app.add_flag("--only-1nic", only_1nic, "link limit and the 1-NIC gloo/ftccl sweep only");
  int iters = 3, check = 1;
  app.add_option("--iters", iters, "timed iterations per size (ftccl-perf -n)");
  app.add_option("--check", check, "ftccl-perf -c (0: no correctness check)");
  app.add_option("--rank-env", rank_env,
                 "NAME=value for every rank (e.g. FTCCL_CHUNK_BYTES=1048576)");
  CLI11_PARSE(app, argc, argv);
  if (perf.empty()) {
    std::string self = argv[0];
    perf = self.substr(0, self.rfind('/') + 1) + "ftccl-perf";
  }
  auto lab = NetnsLab::Create({4, 2, rate, "256kb"});
  if (!lab.ok()) {
    std::fprintf(stderr, "bench_ftccl: %s\n", lab.status().ToString().c_str());
    return 1;
  }
  g_lab = lab->get();
  Ctx c{lab->get(), rank_env, perf, rate, 4, 2, iters, check};
  std::printf("# lab: 4 hosts x 2 ranks x 2 NICs, tbf %s burst 256kb both ends, runs %d\n",
              rate.c_str(), runs);
  std::printf("| figure | median | runs | target | command |\n|---|---|---|---|---|\n");
  std::fflush(stdout);
  auto mbs = [](double bps) { return bps / 1e6; };
  double limit = 0;
  if (!skip_bw) {
    std::vector<double> lim;
    for (int i = 0; i < runs; ++i) {
      auto r = Blast(c, 5);
      lim.push_back(Median(r));
      std::fprintf(stderr, "blast run %d: median link %.1f MB/s\n", i, mbs(lim.back()));
    }
    limit = Median(lim);
    std::printf(
        "| link limit (plain TCP, 8 flows at once), per link | %.1f MB/s | %d | - | iperf3 -t 5, "
        "host h -> h+1 on every rail |\n",
        mbs(limit), runs);
    std::fflush(stdout);

    // What each host puts on its NICs per byte of AllReduce: the flat ring 2(n-1)/n (its one
    // hop out of the host carries that), the hierarchical AllReduce 2(H-1)/H (its rings run
    // over the hosts; the rest goes between the ranks of a host). busbw (nccl-tests) is
    // algbw x 2(n-1)/n whatever the algorithm, so with "hier" it can exceed the links; the
    // wire figure is what the NICs actually carried, as a share of the link limit.
    const int n = c.hosts * 2;
    const double ring_wire = 2.0 * (n - 1) / n, hier_wire = 2.0 * (c.hosts - 1) / c.hosts;
    auto wire = [&](double busbw, double factor) { return busbw / ring_wire * factor; };
    std::string cmd, rcmd;
    std::vector<double> ft2, ft2r;
    for (int i = 0; i < runs && !only_1nic; ++i) {
      auto v = PerfBusbw(c, "ftccl", {}, "64MiB", "64MiB", c.iters, &cmd);
      if (!v.empty()) ft2.push_back(v[0]);
      auto w = PerfBusbw(c, "ftccl", {}, "64MiB", "64MiB", c.iters, &rcmd, "ring");
      if (!w.empty()) ft2r.push_back(w[0]);
      std::fprintf(stderr, "ftccl 2 NICs run %d: %.1f MB/s (hier), %.1f MB/s (ring)\n", i,
                   v.empty() ? 0 : mbs(v[0]), w.empty() ? 0 : mbs(w[0]));
    }
    if (!only_1nic) {
      std::printf(
          "| ftccl AllReduce busbw 64 MiB, 2 NICs (default: hierarchical) | %.1f MB/s = %.1f%% "
          "of 2 links | %zu | >= 95%% | %s |\n",
          mbs(Median(ft2)), 100 * Median(ft2) / (2 * limit), ft2.size(), cmd.c_str());
      std::printf(
          "| the same on the wire: each host's NIC bytes / time | %.1f MB/s = %.1f%% of 2 links "
          "| %zu | - | busbw x (2(H-1)/H) / (2(n-1)/n) |\n",
          mbs(wire(Median(ft2), hier_wire)), 100 * wire(Median(ft2), hier_wire) / (2 * limit),
          ft2.size());
      std::printf(
          "| ftccl AllReduce busbw 64 MiB, 2 NICs, flat ring (= on the wire) | %.1f MB/s = "
          "%.1f%% of 2 links | %zu | - | %s |\n",
          mbs(Median(ft2r)), 100 * Median(ft2r) / (2 * limit), ft2r.size(), rcmd.c_str());
    }
    std::fflush(stdout);
    if (only_2nic) return 0;

    const char* sizes[] = {"1MiB", "4MiB", "16MiB", "64MiB"};
    std::vector<std::vector<double>> gl(4), f1(4), f1r(4);
    std::string gcmd, fcmd, frcmd;
    for (int i = 0; i < runs; ++i) {
      auto g = PerfBusbw(c, "gloo", {0}, "1MiB", "64MiB", c.iters, &gcmd);
      auto f = PerfBusbw(c, "ftccl", {0}, "1MiB", "64MiB", c.iters, &fcmd);
      auto fr = PerfBusbw(c, "ftccl", {0}, "1MiB", "64MiB", c.iters, &frcmd, "ring");
      for (size_t s = 0; s < 4; ++s) {
        if (s < g.size()) gl[s].push_back(g[s]);
        if (s < f.size()) f1[s].push_back(f[s]);
        if (s < fr.size()) f1r[s].push_back(fr[s]);
      }
      std::fprintf(stderr, "1 NIC run %d: 64MiB gloo %.1f, ftccl %.1f, ftccl ring %.1f MB/s\n", i,
                   g.size() > 3 ? mbs(g[3]) : 0, f.size() > 3 ? mbs(f[3]) : 0,
                   fr.size() > 3 ? mbs(fr[3]) : 0);
    }
    for (size_t s = 0; s < 4; ++s) {
      std::printf(
          "| gloo AllReduce busbw %s, 1 NIC | %.1f MB/s = %.1f%% of 1 link | %zu | - | %s |\n",
          sizes[s], mbs(Median(gl[s])), 100 * Median(gl[s]) / limit, gl[s].size(), gcmd.c_str());
      std::printf(
          "| ftccl AllReduce busbw %s, 1 NIC | %.1f MB/s = %.2fx gloo | %zu | >= gloo | %s |\n",
          sizes[s], mbs(Median(f1[s])), Median(f1[s]) / std::max(1.0, Median(gl[s])), f1[s].size(),
          fcmd.c_str());
      std::printf("| ftccl flat ring busbw %s, 1 NIC | %.1f MB/s = %.2fx gloo | %zu | - | %s |\n",
                  sizes[s], mbs(Median(f1r[s])), Median(f1r[s]) / std::max(1.0, Median(gl[s])),
                  f1r[s].size(), frcmd.c_str());
    }
    if (!only_1nic) {
      std::printf("| ftccl 2 NICs / gloo 1 NIC, 64 MiB | %.2fx | - | >= 1.8x | rows above |\n",
                  Median(ft2) / std::max(1.0, Median(gl[3])));
      std::printf("| ftccl flat ring 2 NICs / gloo 1 NIC, 64 MiB | %.2fx | - | - | rows above |\n",
                  Median(ft2r) / std::max(1.0, Median(gl[3])));
    }
    std::fflush(stdout);
    if (only_1nic) return 0;

    // One NIC down (host 1, rail 0) during a 16 MiB loop: steady busbw after the failover.
    std::vector<double> deg;
    for (int i = 0; i < runs; ++i) {
      LabJob job(*c.lab, {c.perf,
                          "ftccl",
                          2,
                          {},
                          {"-b", "16MiB", "-e", "16MiB", "-n", "14", "-w", "1", "-c", "1",
                           "--timeout", "60s"},
                          {}});
      if (!job.Start().ok()) break;
      job.WaitProgress(3, Deadline::After(120 * kNsPerSec));
      int64_t t0 = fl::WallNowNs();
      c.lab->SetNicUp(1, 0, false).IgnoreError();
      job.WaitAll(Deadline::After(300 * kNsPerSec));
      c.lab->SetNicUp(1, 0, true).IgnoreError();
      // Host 1 puts 2(H-1)/H x 16 MiB per iteration on its one remaining link (the default,
      // hierarchical AllReduce).
      double gap = MedianGap(job.ProgressTimes(0), t0 + kNsPerSec);
      double bus = gap > 0 ? (16.0 * (1 << 20)) * hier_wire / (gap / 1e9) : 0;
      deg.push_back(bus);
      std::fprintf(stderr, "degraded run %d: %.1f MB/s\n", i, mbs(bus));
    }
    std::printf(
        "| ftccl AllReduce 16 MiB, host 1 NIC 0 down: what its 1 link left carries | %.1f MB/s = "
        "%.1f%% of 1 link | %zu | >= 90%% | ftccl-perf -b 16MiB -e 16MiB -n 14; ip link set eth0 "
        "down after 3 iterations; 1.5 x 16 MiB / median iteration gap from 1 s after the fault "
        "|\n",
        mbs(Median(deg)), 100 * Median(deg) / limit, deg.size());
    std::fflush(stdout);
  }

  if (!skip_failover) {
    for (int mode = 0; mode < 2; ++mode) {
      const bool blackhole = mode == 1;
      LabJob job(*c.lab, {c.perf,
                          "ftccl",
                          2,
                          {},
                          {"-b", "256KiB", "-e", "256KiB", "-n", "1000000", "-w", "1", "-c", "0",
                           "--timeout", "60s"},
                          {}});
      if (!job.Start().ok()) break;
      job.WaitProgress(20, Deadline::After(120 * kNsPerSec));
      std::vector<double> resume, detect;
      for (int i = 0; i < repeats; ++i) {
        size_t restored = job.Events({"path_restored"}).size();
        int64_t t0 = fl::WallNowNs();
        if (blackhole) {
          c.lab->SetBlackhole(1, 0, true).IgnoreError();
        } else {
          c.lab->SetNicUp(1, 0, false).IgnoreError();
        }
        // Let it run 1.5 s on the other rail, then measure from the progress files.
        int at = job.MinProgress();
        job.WaitProgress(at + 10, Deadline::After(1500 * kNsPerMs));
        fl::WaitUntil([&] { return false; },
                      Deadline::After(blackhole ? 1500 * kNsPerMs : 500 * kNsPerMs));
        auto ev = job.Events({"fault_detected"});
        double first_ns = -1;
        for (const auto& line : ev) {
          double w = NumberAfter(line, "{", "\"wall_ns\":");
          if (w < static_cast<double>(t0)) continue;  // an earlier repeat's
          if (first_ns < 0 || w < first_ns) first_ns = w;
        }
        double first = first_ns < 0 ? -1 : (first_ns - static_cast<double>(t0)) / 1e6;
        // A local link-down takes effect while `ip` runs (tens of ms on a loaded machine) and
        // is reported by rtnetlink at once: measure from the first detection. A blackhole is
        // measured from the start of the command that makes it (an upper bound).
        int64_t ref = (!blackhole && first_ns > 0) ? static_cast<int64_t>(first_ns) : t0;
        double ms = ResumeMs(job, ref, ref + (blackhole ? 1500 : 500) * kNsPerMs);
        resume.push_back(ms);
        detect.push_back(first);
        if (getenv("FL_BENCH_DEBUG") && i == 0) {
          for (auto& e : job.Events({"\"type\""})) {
            double w = NumberAfter(e, "{", "\"wall_ns\":");
            if (w >= t0 - 1e8 && e.find("collective") == std::string::npos)
              std::fprintf(stderr, "  +%.1f ms %s\n", (w - t0) / 1e6, e.substr(0, 260).c_str());
          }
          for (int r = 0; r < job.ranks(); ++r) {
            auto t = job.ProgressTimes(r);
            std::string gaps;
            for (size_t k = 1; k < t.size(); ++k)
              if (t[k] > t0 - 5e7 && t[k - 1] < t0 + 2e9)
                gaps += " " + std::to_string((t[k] - t0) / 1000000);
            std::fprintf(stderr, "  rank %d completions (ms after t0):%s\n", r,
                         gaps.substr(0, 300).c_str());
          }
        }
        if (blackhole) {
          c.lab->SetBlackhole(1, 0, false).IgnoreError();
        } else {
          c.lab->SetNicUp(1, 0, true).IgnoreError();
        }
        fl::WaitUntil([&] { return job.Events({"path_restored"}).size() > restored; },
                      Deadline::After(10 * kNsPerSec), 20 * kNsPerMs);
        int now = job.MinProgress();
        job.WaitProgress(now + 20, Deadline::After(10 * kNsPerSec));
        std::fprintf(stderr, "%s repeat %d: detected %.1f ms, progress resumed %.1f ms\n",
                     blackhole ? "blackhole" : "nic down", i, first, ms);
      }
      std::printf(
          "| failover, %s: link-down to progress resumed | %.1f ms (detection %.1f ms) | %zu | <= "
          "%s | ftccl-perf -b 256KiB -e 256KiB -n 1000000 -c 0; %s on host 1 rail 0, 8 ranks |\n",
          blackhole ? "silent blackhole (bridge port disabled)" : "local NIC down", Median(resume),
          Median(detect), resume.size(), blackhole ? "500 ms" : "50 ms",
          blackhole ? "bridge link set state 0" : "ip link set eth0 down");
      std::fflush(stdout);
    }
  }
  return 0;
}
