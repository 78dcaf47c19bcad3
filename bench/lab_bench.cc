// Local lab and injector timing: request-to-effective latency of NIC flaps (the time from
// Injector::Apply being asked to the kernel's rtnetlink acknowledgement, and the end-to-end
// InjectFault time including the durable journal write and the verify), and lab up / down
// times for topology files. Prints Markdown tables for docs/performance.md. Needs root.
//
//   bench_lab [--flaps N] [--runs R] [--state-dir DIR] TOPOLOGY...
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/units.h"
#include "harness/lab/local_lab.h"
#include "injectors/injection.h"
#include "injectors/journal.h"

namespace fl::lab {
namespace {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Stats {
  double median, p99, min, max;
};
Stats Summarise(const std::vector<double>& v) {
  return {Quantile(v, 0.5), Quantile(v, 0.99), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

int FlapBench(const std::string& topology_path, int flaps) {
  auto t = LoadTopology(topology_path);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToUserString().c_str());
    return 2;
  }
  auto lab = LocalLab::Create(*t, "bflap");
  if (!lab.ok() || !(*lab)->Provision().ok()) {
    std::fprintf(stderr, "cannot bring the lab up\n");
    return 3;
  }
  LabGuard guard(lab->get());
  injectors::InjectorRegistry reg("injector");
  if (!RegisterBuiltinInjectors(reg).ok()) return 3;
  auto inj = reg.Create("nic_port_flap");
  injectors::FaultJournal journal;
  injectors::FaultSpec spec{"nic_port_flap", "h0.nic0", {}, 0, 1};
  std::vector<double> apply_us, inject_us, revert_us;
  for (int i = 0; i < flaps; ++i) {
    Nanos t0 = MonoNowNs();
    auto h = injectors::InjectFault(**inj, spec, (*lab)->fabric(), &journal);
    Nanos t1 = MonoNowNs();
    if (!h.ok()) {
      std::fprintf(stderr, "flap %d: %s\n", i, h.status().ToString().c_str());
      return 3;
    }
    Nanos r0 = MonoNowNs();
    Status r = injectors::RevertFault(**inj, *h, &journal);
    Nanos r1 = MonoNowNs();
    if (!r.ok()) {
      std::fprintf(stderr, "revert %d: %s\n", i, r.ToString().c_str());
      return 3;
    }
    apply_us.push_back((h->effective_wall_ns - h->requested_wall_ns) / 1e3);
    inject_us.push_back((t1 - t0) / 1e3);
    revert_us.push_back((r1 - r0) / 1e3);
  }
  auto row = [](const char* what, const std::vector<double>& v) {
    Stats s = Summarise(v);
    std::printf("| %s | %zu | **%.0f** | %.0f | %.0f | %.0f |\n", what, v.size(), s.median, s.p99,
                s.min, s.max);
  };
  std::printf("\nNIC flap (nic_port_flap on h0.nic0, %s), microseconds:\n\n",
              topology_path.c_str());
  std::printf("| measure | flaps | median | p99 | min | max |\n|---|---|---|---|---|---|\n");
  row("request -> kernel ack (Apply: rtnetlink RTM_NEWLINK down)", apply_us);
  row("InjectFault end to end (prepare, journal fsync, apply, verify, journal fsync)", inject_us);
  row("RevertFault end to end (journal, link up, verify, journal remove)", revert_us);
  return 0;
}

int UpDownBench(const std::vector<std::string>& topologies, int runs) {
  std::printf("\nLab up and down, seconds (median of %d):\n\n", runs);
  std::printf(
      "| topology | namespaces | links | up median | up max | down median | down max |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const auto& path : topologies) {
    auto t = LoadTopology(path);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().ToUserString().c_str());
      return 2;
    }
    std::vector<double> up, down;
    size_t nodes = 0, links = 0;
    for (int i = 0; i < runs; ++i) {
      auto lab = LocalLab::Create(*t, "bupdown");
      if (!lab.ok()) return 3;
      LabGuard guard(lab->get());
      Nanos t0 = MonoNowNs();
      Status s = (*lab)->Provision();
      Nanos t1 = MonoNowNs();
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), s.ToString().c_str());
        return 3;
      }
      nodes = (*lab)->plan().nodes.size();
      links = (*lab)->plan().links.size();
      Nanos t2 = MonoNowNs();
      s = (*lab)->Teardown();
      Nanos t3 = MonoNowNs();
      if (!s.ok()) return 3;
      up.push_back((t1 - t0) / 1e9);
      down.push_back((t3 - t2) / 1e9);
    }
    Stats u = Summarise(up), d = Summarise(down);
    std::printf("| %s | %zu | %zu | **%.2f** | %.2f | **%.2f** | %.2f |\n", path.c_str(), nodes,
                links, u.median, u.max, d.median, d.max);
  }
  return 0;
}

}  // namespace
}  // namespace fl::lab

int main(int argc, char** argv) {
  CLI::App app{"bench_lab: NIC flap request-to-effective latency and lab up/down times (root)"};
  int flaps = 200, runs = 5;
  std::vector<std::string> topologies;
  std::string state_dir = "/tmp/fl-bench-lab-state";
  app.add_option("--flaps", flaps, "NIC flaps to time (0: skip)");
  app.add_option("--runs", runs, "lab up/down repetitions per topology (0: skip)");
  app.add_option("--state-dir", state_dir, "FAULTLINE_STATE_DIR for the run");
  app.add_option("TOPOLOGY", topologies, "topology files; the first is used for the flaps")
      ->required();
  CLI11_PARSE(app, argc, argv);
  setenv("FAULTLINE_STATE_DIR", state_dir.c_str(), 1);
  int rc = 0;
  if (flaps > 0) rc = fl::lab::FlapBench(topologies.front(), flaps);
  if (rc == 0 && runs > 0) rc = fl::lab::UpDownBench(topologies, runs);
  std::error_code ec;
  std::filesystem::remove_all(state_dir, ec);
  return rc;
}
