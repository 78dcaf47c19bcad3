// Coordinator load: one coordinator process (the control-plane server, telemetry into the
// results store through the batched writer, as `faultline run` does) and one process of N
// simulated agents, each a real gRPC session streaming S samples per second. Prints the
// coordinator's CPU use (% of one core), peak RSS, and the rows it received and committed.
//
//   bench_coordinator_agents [--agents 256] [--rate 100] [--seconds 10] [--repeat 5] [--tls]
// --tls: mutual TLS as on an inventory lab (a lab CA and a certificate per simulated agent).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "common/file_util.h"
#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "reports/store/batch_writer.h"
#include "reports/store/store.h"

using namespace fl;
using namespace fl::harness;

namespace {

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// The agents' process: N sessions; each sends rate/10 samples every 100 ms.
int Agents(const std::string& address, const std::string& token, int n, int rate, double seconds,
           const std::string& tls_dir) {
  std::vector<std::unique_ptr<AgentSession>> sessions;
  for (int i = 0; i < n; ++i) {
    AgentSessionOptions o;
    o.coordinator = address;
    o.token = token;
    o.host = "sim" + std::to_string(i);
    if (!tls_dir.empty()) {
      auto tls = LoadTlsMaterial(tls_dir, CertRole::kAgent, o.host);
      if (!tls.ok()) {
        std::fprintf(stderr, "agent %d: %s\n", i, tls.status().ToString().c_str());
        return 3;
      }
      o.tls = std::move(*tls);
    }
    auto s = AgentSession::Connect(o, {});
    if (!s.ok()) {
      std::fprintf(stderr, "agent %d: %s\n", i, s.status().ToString().c_str());
      return 3;
    }
    sessions.push_back(std::move(*s));
  }
  const int per_tick = std::max(1, rate / 10);
  Nanos end = MonoNowNs() + static_cast<Nanos>(seconds * 1e9);
  uint64_t iteration = 0;
  Nanos next = MonoNowNs();
  while (MonoNowNs() < end) {
    for (int i = 0; i < n; ++i) {
      faultline::v1::TelemetryBatch b;
      for (int k = 0; k < per_tick; ++k) {
        auto* s = b.add_samples();
        s->set_rank(i);
        s->set_iteration(iteration + k);
        s->set_start_wall_ns(WallNowNs());
        s->set_end_wall_ns(WallNowNs() + 1000);
        s->set_bytes(1 << 20);
        s->set_verified(true);
      }
      sessions[i]->SendTelemetry(b).IgnoreError();
    }
    iteration += per_tick;
    next += 100 * kNsPerMs;
    Nanos wait = next - MonoNowNs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
  }
  for (auto& s : sessions) s->Stop();
  return 0;
}

struct Result {
  double cpu_percent;
  double rss_mb;
  double received_per_s;
  uint64_t committed;
};

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

// A lab CA, the coordinator's certificate for 127.0.0.1 and one per simulated agent.
std::string MakeCerts(const std::string& dir, int n) {
  std::string tls = dir + "/tls";
  if (access((tls + "/ca.crt").c_str(), F_OK) == 0) return tls;
  IssueOptions coord;
  coord.role = CertRole::kCoordinator;
  coord.extra_names = {"127.0.0.1"};
  Status st = InitLabCa(tls);
  if (st.ok()) st = IssueCertificate(tls, "bench-coordinator", coord).status();
  for (int i = 0; i < n && st.ok(); ++i)
    st = IssueCertificate(tls, "sim" + std::to_string(i), {}).status();
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    std::exit(3);
  }
  return tls;
}

Result RunOnce(int n, int rate, double seconds, const std::string& dir, int rep,
               const std::string& tls_dir) {
  std::string token = *CreateTokenFile(dir + "/token");
  std::string db = dir + "/bench" + std::to_string(rep) + ".db";  // a fresh file per repetition
  auto writer = reports::BatchWriter::Open(db);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    std::exit(3);
  }
  {
    auto store = reports::Store::Open(db);
    reports::RunRecord r;
    r.id = "bench";
    r.scenario_name = "bench";
    r.start_wall_ns = WallNowNs();
    (*store)->CreateRun(r).IgnoreError();
  }
  ControlServerOptions o;
  o.token = token;
  o.run_id = "bench";
  if (!tls_dir.empty()) {
    auto tls = LoadTlsMaterial(tls_dir, CertRole::kCoordinator, "");
    if (!tls.ok()) std::exit(3);
    o.tls = std::move(*tls);
  }
  auto server = ControlServer::Start(o);
  if (!server.ok()) std::exit(3);
  std::atomic<uint64_t> received{0};
  (*server)->SetTelemetryHandler([&](const std::string&, const faultline::v1::TelemetryBatch& b) {
    std::vector<reports::SampleRecord> rows;
    rows.reserve(b.samples_size());
    for (const auto& s : b.samples())
      rows.push_back({"bench", s.rank(), static_cast<int64_t>(s.iteration()), s.start_wall_ns(),
                      s.end_wall_ns(), s.bytes(), s.verified(), s.mismatch()});
    received += rows.size();
    (*writer)->PushSamples(rows, Deadline::After(5 * kNsPerSec)).IgnoreError();
  });
  pid_t child = fork();
  if (child == 0) {
    std::string exe = SelfExe();
    execl(exe.c_str(), exe.c_str(), "--agents-process", (*server)->address().c_str(), token.c_str(),
          std::to_string(n).c_str(), std::to_string(rate).c_str(), std::to_string(seconds).c_str(),
          tls_dir.c_str(), nullptr);
    _exit(127);
  }
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i) hosts.push_back("sim" + std::to_string(i));
  if (!(*server)->WaitForAgents(hosts, Deadline::After(120 * kNsPerSec)).ok()) {
    std::fprintf(stderr, "agents did not all register\n");
    std::exit(3);
  }
  double cpu0 = CpuSeconds();
  Nanos t0 = MonoNowNs();
  uint64_t r0 = received;
  int status;
  waitpid(child, &status, 0);
  double wall = static_cast<double>(MonoNowNs() - t0) / 1e9;
  double cpu = CpuSeconds() - cpu0;
  uint64_t got = received - r0;
  (*writer)->Close(Deadline::After(60 * kNsPerSec)).IgnoreError();
  uint64_t committed = (*writer)->GetStats().committed_rows;
  (*server)->Shutdown();
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return {100.0 * cpu / wall, u.ru_maxrss / 1024.0, got / wall, committed};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && std::string(argv[1]) == "--agents-process")
    return Agents(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]), std::atof(argv[6]),
                  argv[7]);
  CLI::App app{"Coordinator CPU and memory under N simulated agents streaming telemetry."};
  int agents = 256, rate = 100, repeat = 5;
  double seconds = 10;
  app.add_option("--agents", agents, "simulated agents (one gRPC session each)")
      ->capture_default_str();
  app.add_option("--rate", rate, "samples per second per agent")->capture_default_str();
  app.add_option("--seconds", seconds, "streaming time per repetition")->capture_default_str();
  app.add_option("--repeat", repeat, "repetitions (the median is reported)")->capture_default_str();
  bool tls = false;
  app.add_flag("--tls", tls, "mutual TLS between the coordinator and the agents");
  CLI11_PARSE(app, argc, argv);
  char tmpl[] = "/tmp/fl_bench_coord_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::vector<double> cpu, rss, rx;
  const std::string tls_dir = tls ? MakeCerts(dir, agents) : "";
  for (int i = 0; i < repeat; ++i) {
    Result r = RunOnce(agents, rate, seconds, dir, i, tls_dir);
    std::fprintf(stderr,
                 "rep %d: coordinator cpu %.1f%% of a core, peak rss %.1f MiB, %.0f samples/s "
                 "received, %llu committed\n",
                 i + 1, r.cpu_percent, r.rss_mb, r.received_per_s,
                 static_cast<unsigned long long>(r.committed));
    cpu.push_back(r.cpu_percent);
    rss.push_back(r.rss_mb);
    rx.push_back(r.received_per_s);
  }
  std::printf(
      "agents %d x %d samples/s%s: coordinator cpu median %.1f%% of one core, peak rss %.1f MiB, "
      "%.0f samples/s ingested (median of %d)\n",
      agents, rate, tls ? " (mutual TLS)" : "", Median(cpu),
      *std::max_element(rss.begin(), rss.end()), Median(rx), repeat);
  std::string cmd = "rm -rf " + dir;
  return std::system(cmd.c_str()) == 0 ? 0 : 0;
}
