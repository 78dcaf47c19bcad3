// Coordinator load: one coordinator process (the control-plane server, telemetry into the
// results store through the batched writer, as `faultline run` does) and one process of N
// simulated agents, each a real gRPC session on its own connection, streaming S samples per
// second. The simulated agents are cheap (callback reactors on gRPC's own threads, one ticker
// thread) so that thousands fit in one process; they share the machine's cores with the
// coordinator.
//
// Per repetition it prints: the time for all N to register (connects made in parallel), the
// time of a launch and of a stop fanned out to all of them (FanOut, as the run driver does, each
// acknowledged), the coordinator's CPU (% of one core) and peak RSS while they stream, and the
// samples the agents sent against the rows the coordinator committed.
//
//   bench_coordinator_agents [--agents 256] [--rate 100] [--seconds 10] [--repeat 5]
//                            [--batch-ms 0] [--tls]
// The coordinator sets the pace `faultline run` sets for a fleet of N (PaceForFleet, lease 3 s)
// and its Welcome carries it to the agents. --batch-ms: each agent sends a batch every this many
// milliseconds instead (rate*batch/1000 samples).
// --tls: mutual TLS as on an inventory lab (a lab CA and a certificate per simulated agent).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "harness/coordinator/fan_out.h"
#include "harness/proto/faultline.grpc.pb.h"
#include "reports/store/batch_writer.h"
#include "reports/store/store.h"

using namespace fl;
using namespace fl::harness;
namespace pb = faultline::v1;

namespace {

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// As many descriptors as the hard limit allows: every session is a connection on each side.
void RaiseFileLimit() {
  rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// One simulated agent: Hello, then acks for commands, replies to clock probes, telemetry
// and heartbeats from the ticker. One write outstanding at a time from a queue; one read
// always outstanding. The hold keeps the call alive while the ticker may still write.
class SimAgent final : public grpc::ClientBidiReactor<pb::AgentMessage, pb::CoordinatorMessage> {
 public:
  SimAgent(pb::Coordinator::Stub* stub, const std::string& token, const std::string& host)
      : host_(host) {
    ctx_.AddMetadata(kTokenMetadataKey, token);
    ctx_.set_wait_for_ready(true);
    stub->async()->Session(&ctx_, this);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_token(token);
    hello.mutable_hello()->set_host(host);
    hello.mutable_hello()->set_instance_id("sim-" + host);
    AddHold();
    Send(std::move(hello));
    StartRead(&in_);
    StartCall();
  }

  bool welcomed() const { return welcomed_; }
  // The fleet's pace from the Welcome (0: none set).
  int64_t telemetry_ms() const { return telemetry_ms_; }
  int64_t heartbeat_ms() const { return heartbeat_ms_; }
  uint64_t sent_samples() const { return sent_samples_; }
  bool done() const { return done_; }
  bool closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }

  void Send(pb::AgentMessage m) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    queue_.push_back(std::move(m));
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }
  // An ack or a clock reply: ahead of the telemetry still queued, behind the message being
  // written, as the real agent sends it (its telemetry waits in a buffer of its own and
  // takes the stream for one batch at a time, so at most one batch goes before an ack).
  void SendFirst(pb::AgentMessage m) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    auto at = queue_.begin();
    if (writing_) ++at;
    while (at != queue_.end() && !at->has_telemetry()) ++at;
    queue_.insert(at, std::move(m));
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }
  // No more writes: half-close once the queue is written, then drop the hold.
  void Close() {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    if (!writing_) EndWrites();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (ok) sent_samples_ += queue_.front().telemetry().samples_size();
    queue_.pop_front();
    if (!ok || ended_) {  // the stream is broken or over: nothing more goes out
      queue_.clear();
      closed_ = true;
      if (held_) {
        RemoveHold();
        held_ = false;
      }
      return;
    }
    if (!queue_.empty()) {
      writing_ = true;
      StartWrite(&queue_.front());
    } else if (closed_) {
      EndWrites();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::lock_guard lock(mu_);
      ended_ = true;  // the coordinator ended the stream, or it broke
      closed_ = true;
      while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
      if (!writing_ && held_) {
        RemoveHold();
        held_ = false;
      }
      return;
    }
    pb::AgentMessage out;
    switch (in_.body_case()) {
      case pb::CoordinatorMessage::kWelcome:
        telemetry_ms_ = in_.welcome().telemetry_interval_ms();
        heartbeat_ms_ = in_.welcome().heartbeat_interval_ms();
        welcomed_ = true;
        break;
      case pb::CoordinatorMessage::kClockProbe:
        out.mutable_clock_reply()->set_probe_id(in_.clock_probe().probe_id());
        out.mutable_clock_reply()->set_agent_wall_ns(WallNowNs());
        SendFirst(std::move(out));
        break;
      case pb::CoordinatorMessage::kHeartbeat:
        break;
      default:  // a command: acknowledged at once; after Shutdown's ack the stream ends
        out.mutable_ack()->set_command_id(in_.command_id());
        out.mutable_ack()->set_ok(true);
        SendFirst(std::move(out));
        if (in_.has_shutdown()) Close();
        break;
    }
    StartRead(&in_);
  }

  void OnDone(const grpc::Status& st) override {
    if (!st.ok()) std::fprintf(stderr, "agent %s: %s\n", host_.c_str(), st.error_message().c_str());
    done_ = true;
  }

 private:
  void EndWrites() {  // mu_ held, nothing being written
    StartWritesDone();
    if (held_) {
      RemoveHold();
      held_ = false;
    }
  }

  std::string host_;
  grpc::ClientContext ctx_;
  pb::CoordinatorMessage in_;
  std::recursive_mutex mu_;  // a reaction run inline by StartWrite takes it again
  std::deque<pb::AgentMessage> queue_;
  bool writing_ = false, closed_ = false, ended_ = false, held_ = true;
  std::atomic<bool> welcomed_{false}, done_{false};
  std::atomic<int64_t> telemetry_ms_{0}, heartbeat_ms_{0};
  std::atomic<uint64_t> sent_samples_{0};
};

// The agents' process: N sessions; each sends rate*batch_ms/1000 samples every batch_ms (and a
// heartbeat when it sends no telemetry), from its Welcome until it has acknowledged Shutdown;
// then each half-closes its stream, and the process
// writes the samples whose writes completed to sent_file.
int Agents(const std::string& address, const std::string& token, int n, int rate, double seconds,
           int batch_ms, const std::string& tls_dir, const std::string& sent_file) {
  RaiseFileLimit();
  std::vector<std::unique_ptr<pb::Coordinator::Stub>> stubs;
  std::vector<std::unique_ptr<SimAgent>> agents;
  // Channels made and calls started on 4 threads at once, as hosts dial in together.
  stubs.resize(n);
  agents.resize(n);
  std::atomic<bool> bad_tls{false};
  auto dial = [&](int first) {
    for (int i = first; i < n; i += 4) {
      const std::string host = "sim" + std::to_string(i);
      std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
      if (!tls_dir.empty()) {
        auto tls = LoadTlsMaterial(tls_dir, CertRole::kAgent, host);
        if (!tls.ok()) {
          std::fprintf(stderr, "agent %d: %s\n", i, tls.status().ToString().c_str());
          bad_tls = true;
          return;
        }
        grpc::SslCredentialsOptions o;
        o.pem_root_certs = tls->ca_pem;
        o.pem_private_key = tls->key_pem;
        o.pem_cert_chain = tls->cert_pem;
        creds = grpc::SslCredentials(o);
      }
      stubs[i] = pb::Coordinator::NewStub(grpc::CreateCustomChannel(address, creds, args));
      agents[i] = std::make_unique<SimAgent>(stubs[i].get(), token, host);
    }
  };
  {
    std::vector<std::thread> dialers;
    for (int t = 0; t < 4; ++t) dialers.emplace_back(dial, t);
    for (auto& t : dialers) t.join();
  }
  if (bad_tls) std::_Exit(3);
  // The pace: --batch-ms if given, else the Welcome's (as the real agent takes it), else 50 ms;
  // heartbeats at the Welcome's interval (else 500 ms), and only from an agent that sent no
  // telemetry within it, as the real agent does. Every agent of the fleet gets the same
  // Welcome, so the first one sets the ticker's pace.
  if (!WaitUntil([&] { return agents[0]->welcomed(); }, Deadline::After(120 * kNsPerSec),
                 kNsPerMs)) {
    std::fprintf(stderr, "no Welcome for sim0\n");
    std::_Exit(3);
  }
  if (batch_ms <= 0) batch_ms = agents[0]->telemetry_ms() > 0 ? agents[0]->telemetry_ms() : 50;
  const Nanos hb_interval =
      (agents[0]->heartbeat_ms() > 0 ? agents[0]->heartbeat_ms() : 500) * kNsPerMs;
  const bool telemetry_each_tick = batch_ms * kNsPerMs < hb_interval;
  std::fprintf(stderr, "agents: batches every %d ms, heartbeats every %lld ms%s\n", batch_ms,
               static_cast<long long>(hb_interval / kNsPerMs),
               telemetry_each_tick ? " (none sent: telemetry flows)" : "");
  const int per_batch = std::max(1, rate * batch_ms / 1000);
  const Nanos tick = batch_ms * kNsPerMs;
  // Until every agent has its Shutdown (or the coordinator is long overdue with it).
  const Nanos end = MonoNowNs() + static_cast<Nanos>(seconds * 1e9) + 300 * kNsPerSec;
  auto all_closed = [&] {
    for (auto& a : agents)
      if (!a->closed()) return false;
    return true;
  };
  Nanos next = MonoNowNs(), next_hb = next;
  uint64_t iteration = 0;
  while (MonoNowNs() < end && !all_closed()) {
    const bool hb = !telemetry_each_tick && MonoNowNs() >= next_hb;
    if (hb) next_hb += hb_interval;
    for (int i = 0; i < n; ++i) {
      if (!agents[i]->welcomed()) continue;  // an agent streams once it is registered
      pb::AgentMessage m;
      auto* b = m.mutable_telemetry();
      for (int k = 0; k < per_batch; ++k) {
        auto* s = b->add_samples();
        s->set_rank(i);
        s->set_iteration(iteration + k);
        s->set_start_wall_ns(WallNowNs());
        s->set_end_wall_ns(WallNowNs() + 1000);
        s->set_bytes(1 << 20);
        s->set_verified(true);
      }
      agents[i]->Send(std::move(m));
      if (hb) {
        pb::AgentMessage h;
        h.mutable_heartbeat()->set_wall_ns(WallNowNs());
        agents[i]->Send(std::move(h));
      }
    }
    iteration += per_batch;
    next += tick;
    Nanos wait = next - MonoNowNs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
  }
  std::fprintf(stderr, "agents: streamed until %.3f, %llu ticks\n", WallNowNs() / 1e9,
               static_cast<unsigned long long>(iteration / per_batch));
  for (auto& a : agents) a->Close();
  bool all_done = WaitUntil(
      [&] {
        for (auto& a : agents)
          if (!a->done()) return false;
        return true;
      },
      Deadline::After(60 * kNsPerSec), 10 * kNsPerMs);
  uint64_t sent = 0;
  for (auto& a : agents) sent += a->sent_samples();
  if (!WriteFileAtomic(sent_file, std::to_string(sent) + "\n").ok()) return 3;
  if (!all_done) {
    std::fprintf(stderr, "not every simulated agent's stream ended\n");
    std::_Exit(3);  // reactors still live: do not destroy them
  }
  agents.clear();
  return 0;
}

struct Result {
  double register_s;
  double launch_s, stop_s;
  double cpu_percent;
  double rss_mb;
  double received_per_s;
  uint64_t sent, received, committed;
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

pid_t g_agents_pid = -1;
int g_fan_out_width =
    kFanOutWidth;  // as the run driver's  // the agents' process of the current repetition

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  if (g_agents_pid > 0) {
    int status = 0;
    if (waitpid(g_agents_pid, &status, WNOHANG) == g_agents_pid)
      std::fprintf(stderr, "the agents' process %s %d\n",
                   WIFEXITED(status) ? "exited" : "was killed by signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    else
      kill(g_agents_pid, SIGKILL);
  }
  std::exit(3);
}

// One command fanned out to every host as the run driver does; its wall time in seconds.
double TimedFanOut(ControlServer& server, const std::vector<std::string>& hosts,
                   const pb::CoordinatorMessage& m, const char* what) {
  const Nanos t0 = MonoNowNs();
  Status st = FirstError(FanOut(
      hosts, g_fan_out_width,
      [&](const std::string& h) {
        return server.Call(h, m, Deadline::After(30 * kNsPerSec)).status();
      },
      Deadline::After(60 * kNsPerSec)));
  if (!st.ok()) Die(std::string(what) + " fan-out: " + st.ToString());
  return static_cast<double>(MonoNowNs() - t0) / 1e9;
}

Result RunOnce(int n, int rate, double seconds, int batch_ms, const std::string& dir, int rep,
               const std::string& tls_dir) {
  std::string token = *CreateTokenFile(dir + "/token");
  std::string db = dir + "/bench" + std::to_string(rep) + ".db";  // a fresh file per repetition
  const std::string sent_file = dir + "/sent" + std::to_string(rep);
  auto writer = reports::BatchWriter::Open(db);
  if (!writer.ok()) Die(writer.status().ToString());
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
  o.lease_ns = 3 * kNsPerSec;  // as `faultline run` (--lease 3)
  // The pace `faultline run` sets for a fleet of n (control_server.h, PaceForFleet).
  const FleetPace pace = PaceForFleet(static_cast<size_t>(n), o.lease_ns);
  o.heartbeat_interval_ns = pace.heartbeat_interval_ns;
  o.agent_heartbeat_interval_ns = pace.heartbeat_interval_ns;
  o.agent_telemetry_interval_ns = pace.telemetry_interval_ns;
  if (!tls_dir.empty()) {
    auto tls = LoadTlsMaterial(tls_dir, CertRole::kCoordinator, "");
    if (!tls.ok()) Die(tls.status().ToString());
    o.tls = std::move(*tls);
  }
  auto server = ControlServer::Start(o);
  if (!server.ok()) Die(server.status().ToString());
  std::atomic<uint64_t> received{0};
  (*server)->SetTelemetryHandler([&](const std::string&, const pb::TelemetryBatch& b) {
    std::vector<reports::SampleRecord> rows;
    rows.reserve(b.samples_size());
    for (const auto& s : b.samples())
      rows.push_back({"bench", s.rank(), static_cast<int64_t>(s.iteration()), s.start_wall_ns(),
                      s.end_wall_ns(), s.bytes(), s.verified(), s.mismatch()});
    received += rows.size();
    (*writer)->PushSamples(rows, Deadline::After(5 * kNsPerSec)).IgnoreError();
  });
  const Nanos t_fork = MonoNowNs();
  pid_t child = fork();
  if (child == 0) {
    std::string exe = SelfExe();
    execl(exe.c_str(), exe.c_str(), "--agents-process", (*server)->address().c_str(), token.c_str(),
          std::to_string(n).c_str(), std::to_string(rate).c_str(), std::to_string(seconds).c_str(),
          std::to_string(batch_ms).c_str(), tls_dir.c_str(), sent_file.c_str(), nullptr);
    _exit(127);
  }
  g_agents_pid = child;
  std::vector<std::string> hosts;
  for (int i = 0; i < n; ++i) hosts.push_back("sim" + std::to_string(i));
  if (!(*server)->WaitForAgents(hosts, Deadline::After(120 * kNsPerSec)).ok())
    Die("agents did not all register");
  Result res{};
  res.register_s = static_cast<double>(MonoNowNs() - t_fork) / 1e9;
  double cpu0 = CpuSeconds();
  Nanos t0 = MonoNowNs();
  uint64_t r0 = received;
  // As a run: a launch to every agent, `seconds` of streaming, a stop, then Shutdown (after
  // whose ack each agent ends its stream).
  pb::CoordinatorMessage launch;
  launch.mutable_launch()->set_worker_args_json("[\"--bench\"]");
  launch.mutable_launch()->add_ranks()->set_rank(0);
  res.launch_s = TimedFanOut(**server, hosts, launch, "launch");
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<Nanos>(seconds * 1e9)));
  const uint64_t r1 = received;
  const Nanos t1 = MonoNowNs();
  pb::CoordinatorMessage stop;
  stop.mutable_stop()->set_grace_ms(2000);
  res.stop_s = TimedFanOut(**server, hosts, stop, "stop");
  pb::CoordinatorMessage bye;
  bye.mutable_shutdown()->set_reason("bench over");
  TimedFanOut(**server, hosts, bye, "shutdown");
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("the agents' process failed");
  double wall = static_cast<double>(MonoNowNs() - t0) / 1e9;
  double cpu = CpuSeconds() - cpu0;
  res.received = received;
  (*writer)->Close(Deadline::After(60 * kNsPerSec)).IgnoreError();
  res.committed = (*writer)->GetStats().committed_rows;
  (*server)->Shutdown();
  auto sent = ReadFile(sent_file);
  res.sent = sent.ok() ? std::stoull(*sent) : 0;
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  res.cpu_percent = 100.0 * cpu / wall;
  res.rss_mb = u.ru_maxrss / 1024.0;
  res.received_per_s = static_cast<double>(r1 - r0) / (static_cast<double>(t1 - t0) / 1e9);
  return res;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 10 && std::string(argv[1]) == "--agents-process")
    return Agents(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]), std::atof(argv[6]),
                  std::atoi(argv[7]), argv[8], argv[9]);
  CLI::App app{"Coordinator CPU and memory under N simulated agents streaming telemetry."};
  int agents = 256, rate = 100, repeat = 5, batch_ms = 0;
  double seconds = 10;
  app.add_option("--agents", agents, "simulated agents (one gRPC session each)")
      ->capture_default_str();
  app.add_option("--rate", rate, "samples per second per agent")->capture_default_str();
  app.add_option("--seconds", seconds, "streaming time per repetition")->capture_default_str();
  app.add_option("--repeat", repeat, "repetitions (the median is reported)")->capture_default_str();
  app.add_option("--batch-ms", batch_ms,
                 "an agent's telemetry batch interval (0: the coordinator's pace for the fleet, "
                 "from its Welcome, as a real agent takes it)")
      ->capture_default_str();
  app.add_option("--fan-out-width", g_fan_out_width, "commands in flight at once in a fan-out")
      ->capture_default_str();
  bool tls = false;
  app.add_flag("--tls", tls, "mutual TLS between the coordinator and the agents");
  CLI11_PARSE(app, argc, argv);
  RaiseFileLimit();
  char tmpl[] = "/tmp/fl_bench_coord_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::vector<double> cpu, rss, rx, reg, launch, stop;
  bool all_committed = true;
  const std::string tls_dir = tls ? MakeCerts(dir, agents) : "";
  for (int i = 0; i < repeat; ++i) {
    Result r = RunOnce(agents, rate, seconds, batch_ms, dir, i, tls_dir);
    std::fprintf(stderr,
                 "rep %d: registered in %.2f s, launch fan-out %.3f s, stop fan-out %.3f s; "
                 "coordinator cpu %.1f%% of a core, peak rss %.1f MiB; %.0f samples/s; sent %llu, "
                 "received %llu, committed %llu\n",
                 i + 1, r.register_s, r.launch_s, r.stop_s, r.cpu_percent, r.rss_mb,
                 r.received_per_s, static_cast<unsigned long long>(r.sent),
                 static_cast<unsigned long long>(r.received),
                 static_cast<unsigned long long>(r.committed));
    all_committed = all_committed && r.sent == r.committed && r.sent > 0;
    cpu.push_back(r.cpu_percent);
    rss.push_back(r.rss_mb);
    rx.push_back(r.received_per_s);
    reg.push_back(r.register_s);
    launch.push_back(r.launch_s);
    stop.push_back(r.stop_s);
  }
  std::printf(
      "agents %d x %d samples/s%s (batches every %d ms): registered in %.2f s, launch fan-out "
      "%.3f s, stop fan-out %.3f s, coordinator cpu %.1f%% of one core, peak rss %.1f MiB, %.0f "
      "samples/s ingested (medians of %d); every sample committed: %s\n",
      agents, rate, tls ? " (mutual TLS)" : "",
      batch_ms > 0
          ? batch_ms
          : static_cast<int>(PaceForFleet(agents, 3 * kNsPerSec).telemetry_interval_ns / kNsPerMs),
      Median(reg), Median(launch), Median(stop), Median(cpu),
      *std::max_element(rss.begin(), rss.end()), Median(rx), repeat, all_committed ? "yes" : "NO");
  std::string cmd = "rm -rf " + dir;
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  return all_committed ? 0 : 1;
}
