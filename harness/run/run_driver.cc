#include "harness/run/run_driver.h"

#include <arpa/inet.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "ccl_under_test/api/tcp_store.h"
#include "common/build_info.h"
#include "common/file_util.h"
#include "common/ids.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/narrate.h"
#include "common/process.h"
#include "common/units.h"
#include "harness/agent/telemetry_line.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "harness/lab/lab.h"
#include "harness/run/timeline.h"
#include "harness/scenario/job_env.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/timeout_lint.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "reports/metrics/metrics.h"
#include "reports/render/json_view.h"
#include "reports/render/markdown.h"
#include "reports/store/batch_writer.h"
#include "reports/store/fingerprint_tags.h"
#include "reports/store/store.h"

extern char** environ;

namespace fl::harness {

namespace pb = faultline::v1;

namespace {

std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted = true; }

// What is wrong with an agent's NIC sample ("" when nothing): its NIC must be a name, its
// extra counters few and named (they become a JSON column and chart labels).
std::string NicSampleProblem(const pb::NicSample& n) {
  if (!IsSafeName(n.nic(), kMaxNicCounterNameBytes)) return "a NIC sample whose NIC is not a name";
  if (static_cast<size_t>(n.extra_size()) > kMaxNicExtraCounters)
    return "a NIC sample of " + n.nic() + " with over " + std::to_string(kMaxNicExtraCounters) +
           " extra counters";
  for (const auto& kv : n.extra())
    if (!IsValidNicCounterName(kv.first))
      return "a NIC sample of " + n.nic() + " with an extra counter that is not a name";
  return "";
}

// The row of an agent's NIC sample; `off` is the host's clock offset (host minus ours).
reports::NicSampleRecord NicRecordOf(const std::string& run_id, const std::string& host, Nanos off,
                                     const pb::NicSample& n) {
  reports::NicSampleRecord r;
  r.run_id = run_id;
  r.host = host;
  r.nic = n.nic();
  r.wall_ns = n.wall_ns() - off;
  r.rx_bytes = n.rx_bytes();
  r.tx_bytes = n.tx_bytes();
  r.rx_packets = n.rx_packets();
  r.tx_packets = n.tx_packets();
  r.rx_dropped = n.rx_dropped();
  r.tx_dropped = n.tx_dropped();
  r.rx_errors = n.rx_errors();
  r.tx_errors = n.tx_errors();
  if (n.has_rx_pause()) r.rx_pause = n.rx_pause();
  if (n.has_tx_pause()) r.tx_pause = n.tx_pause();
  r.extra.insert(n.extra().begin(), n.extra().end());
  return r;
}

// What the lab tells a CCL's default environment: the first host's data NICs when the lab
// names them by interface (NCCL_SOCKET_IFNAME); IPv4 addresses name no interface.
ccl::CclEnvContext LabEnv(const std::vector<lab::JobHost>& hosts) {
  ccl::CclEnvContext c;
  if (hosts.empty()) return c;
  for (const std::string& n : hosts.front().nics) {
    bool address = !n.empty() && n.find_first_not_of("0123456789.") == std::string::npos;
    if (!address) c.nic_names.push_back(n);
  }
  return c;
}

// Commands sent to every agent (clock sync, launch, stop, revert, shutdown) go out to at most
// kFanOutWidth agents at a time (control_server.h).

constexpr int kExitPass = 0, kExitExpectation = 1, kExitBadInput = 2, kExitInfra = 3,
              kExitInterrupted = 130;

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Who runs a coordinator, for telling a dead coordinator's run from a live one: the host name
// and the start of /etc/machine-id, so that two clusters' hosts of one name that share a
// PostgreSQL store never judge each other's pids.
std::string CoordinatorHost() {
  std::string id;
  if (auto text = ReadFile("/etc/machine-id"); text.ok()) id = text->substr(0, 12);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id.empty() ? Hostname() : Hostname() + "#" + id;
}

std::string LabNameOf(const std::string& run_id) { return "fl" + run_id.substr(run_id.size() - 6); }

// What the telemetry tells us about the job while it runs.
struct Progress {
  std::mutex mu;
  std::condition_variable anchor_event_cv;  // an anchor event arrived: the timeline looks
  std::map<int, int64_t> last_iteration;    // rank -> last completed iteration
  std::map<int, int> exit_code;             // rank -> code (-signal) once its process ended
  Nanos last_sample_mono = 0;
  uint64_t samples = 0;
  uint64_t mismatches = 0;
  uint64_t bad_telemetry = 0;                   // records dropped by OnTelemetry
  std::set<std::string> bad_telemetry_hosts;    // agents already logged for it
  std::deque<std::pair<Nanos, uint64_t>> rate;  // (mono, samples) for iterations/s
  // Events the terminal tells of (a fault's detection, failover and restored path; a rank
  // that exited badly), until the timeline prints them.
  std::vector<reports::EventRecord> notable;
  // The CCL events a fault can be timed against (after_event / during), kept for the run.
  std::vector<reports::EventRecord> anchor_events;

  // The least last iteration over the ranks (-1 until all have reported); skip_lost: leaves
  // out ranks that exited badly (lost ranks the survivors shrank away from).
  int64_t MinIteration(int world, bool skip_lost = false) {
    std::lock_guard lock(mu);
    if (static_cast<int>(last_iteration.size()) < world) return -1;
    int64_t m = INT64_MAX;
    for (auto& [r, it] : last_iteration) {
      if (skip_lost) {
        auto e = exit_code.find(r);
        if (e != exit_code.end() && e->second != 0) continue;
      }
      m = std::min(m, it);
    }
    return m == INT64_MAX ? -1 : m;
  }
  int FailedRanks() {
    std::lock_guard lock(mu);
    int n = 0;
    for (auto& [r, c] : exit_code) n += c != 0;
    return n;
  }
  int Exited() {
    std::lock_guard lock(mu);
    return static_cast<int>(exit_code.size());
  }
  std::optional<std::pair<int, int>> FirstFailure() {
    std::lock_guard lock(mu);
    for (auto& [r, c] : exit_code)
      if (c != 0) return std::make_pair(r, c);
    return std::nullopt;
  }
};

struct ActiveFault {
  PlannedFault plan;
  reports::FaultRecord record;
  std::string agent;
  bool injected = false;
  bool reverted = false;
  bool failed = false;
  bool skipped = false;        // timed during its anchor, which was over first: never fires
  Nanos anchor_due_wall = 0;   // event-timed: its anchor's event + delay, once seen; else 0
  Nanos revert_at_mono = 0;    // 0: at the end of the job
  std::string handle_id;       // the agent's journal entry for it
  std::set<std::string> told;  // event kinds already printed for it (the first rank's only)
  // Sent ahead (Runner::SendAhead): its inject call, answered when the agent fired it.
  std::shared_ptr<std::future<StatusOr<pb::Ack>>> ahead;
  // Its revert sent ahead (Runner::RevertAhead): answered when the agent reverted it.
  std::shared_ptr<std::future<StatusOr<pb::Ack>>> revert_ahead;
};

using HostSlot = lab::JobHost;

class Runner {
 public:
  explicit Runner(const RunOptions& o) : opts_(o) {}

  int Run();
  // Opens the store only when replaying; for DescribeRunPlan.
  StatusOr<std::string> PlanOnly() {
    if (!opts_.replay_of.empty()) {
      FL_ASSIGN_OR_RETURN(store_, reports::Store::Open(opts_.db_path, {.create = false}));
    }
    FL_RETURN_IF_ERROR(Prepare());
    return DescribePlan(plan_);
  }

 private:
  int BadInput(const Status& s) {
    std::fprintf(stderr, "faultline run: %s\n", s.ToUserString().c_str());
    return kExitBadInput;
  }
  Status Prepare();
  Status Provision();
  Status ApplyRanksPerHost();
  // The ranks that report progress: all of them, except for nccl-tests output, which only
  // rank 0 prints (nccl-tests and ftccl-perf alike).
  int ProgressRanks() const {
    const JobSpec& j = scenario_.job;
    return !j.command.empty() && j.progress_format == "nccl-tests" ? 1 : world_;
  }
  // The agent's clock minus the coordinator's (measured at registration; 0 if not measured).
  Nanos OffsetOf(const std::string& agent) const {
    auto it = offsets_.find(agent);
    return it == offsets_.end() ? 0 : it->second.offset_ns;
  }
  // The progress ranks that run on the host of `agent` (none for the fabric's agent).
  std::vector<int> ProgressRanksOn(const std::string& agent) const {
    std::vector<int> out;
    int first = 0;
    for (const HostSlot& slot : hosts_) {
      if (slot.name == agent)
        for (int r = first; r < first + slot.ranks && r < ProgressRanks(); ++r) out.push_back(r);
      first += slot.ranks;
    }
    return out;
  }
  Status StartAgents();
  Status StartControlServer(const std::string& listen, const std::string& token);
  Status AwaitAgents();
  lab::LabRun LabRunInfo() const {
    lab::LabRun r;
    r.run_id = run_id_;
    r.run_dir = run_dir_;
    r.lab_name = lab_name_;
    r.tls_dir = opts_.tls_dir;
    r.no_tls = opts_.no_tls;
    return r;
  }
  Status RegisterAgents();
  Status Launch(int attempt, uint64_t first_iteration);
  Status StopRanks();
  int Timeline();
  void BeginSteady();
  // Overlapping faults (docs/metrics.md): the window in which an event of kind `kind` belongs
  // to fault a (from its request, or its revert for path_restored, up to the next injected
  // fault not nested in it: reports::NestedIn over anchor_of_); the wall time an event-timed
  // fault is due, once its anchor's event is seen (0 before).
  // fired_ahead: a fault sent ahead and due counts from its due time before its answer is in
  // (for anchors; what is printed waits for the answer's times).
  bool InWindow(const ActiveFault& a, const std::string& kind, Nanos wall,
                bool fired_ahead_counts = false) const;
  Nanos AnchorDueWall(const ActiveFault& f);
  int RestartJob();
  Status InjectDue(ActiveFault& f);
  // Faults sent ahead: a time-scheduled fault goes to its agent kSendAheadNs before its time
  // (at steady state when that is closer; when: timeline.h) with its due time on the agent's clock;
  // the agent prepares it at once and fires it then, and answers the inject when it fired.
  void SendAhead(ActiveFault& f);
  // An iteration-triggered fault armed at its agent: fired there when the progress ranks of
  // its host pass the iteration (answered then, like a fault sent ahead).
  void ArmAtAgent(ActiveFault& f);
  // A fault in effect: its revert goes to its agent kSendAheadNs before its time, with that
  // time on the agent's clock, and is answered when the agent reverted it.
  void RevertAhead(ActiveFault& f);
  // The inject's answer (immediate or sent ahead): fills the fault's record as the ack says.
  Status FinishInject(ActiveFault& f, StatusOr<pb::Ack> ack);
  Status RevertFault(ActiveFault& f);
  // RevertFault after its Call: the record, as the revert's ack says.
  Status FinishRevert(ActiveFault& f, StatusOr<pb::Ack> ack);
  // Every fault in effect or sent ahead reverted: the agents in parallel (FanOut), each
  // agent's faults in turn; the records written afterwards, in the plan's order.
  void RevertAll();
  // An agent process of this run that ended on its own (crash, kill -9): its host, after its
  // faults were reverted from the journal.
  std::optional<std::string> LostAgent();
  // The lab's own events (Lab::TakeEvents: a routed lab's route changes) into the events table.
  void LabEvents();
  void Teardown(bool keep_run_dir = false);
  int Analyse(const std::string& end_reason, reports::RunStatus infra_status);
  void OnTelemetry(const std::string& host, const pb::TelemetryBatch& batch);
  void PrintProgress(const std::string& phase, bool force = false);
  // One line for a person, above the progress line (which the next PrintProgress redraws).
  void Say(const std::string& line, Tone tone = Tone::kPlain);
  // The fault lines of the events that happened at least kSettle ago (all of them: `all`),
  // in the order they happened: agents send in batches, so the first to arrive is not always
  // the first to have happened.
  void PrintFaultEvents(bool all = false);
  void Event(const std::string& kind, nlohmann::json detail, int rank = -1);
  void PushEvent(reports::EventRecord e);

  RunOptions opts_;
  Scenario scenario_;
  std::unique_ptr<lab::Lab> lab_;   // opened at Prepare, provisioned by Provision
  std::optional<TlsMaterial> tls_;  // the coordinator's, when the lab speaks mutual TLS
  std::string store_spec_;          // what the workers get as --store
  std::vector<HostSlot> hosts_;
  Plan plan_;
  uint64_t seed_ = 0;
  std::string run_id_;
  std::string lab_name_;
  std::string run_dir_;
  std::string bin_dir_;
  int world_ = 0;
  std::unique_ptr<reports::Store> store_;
  std::unique_ptr<reports::BatchWriter> writer_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<ccl::TcpStoreServer> rendezvous_;  // when the ranks meet over TCP
  bool provisioned_ = false;
  std::set<std::string> lost_hosts_;  // agents reported lost (once each)
  std::vector<std::string> agent_hosts_;
  std::map<std::string, ClockOffset> offsets_;
  Progress progress_;
  std::vector<ActiveFault> faults_;
  std::map<std::string, std::string> anchor_of_;  // fault id -> its anchor (after_event / during)
  Nanos steady_mono_ = 0;
  Nanos steady_wall_ = 0;
  int restarts_ = 0;
  std::optional<double> restart_cost_ms_;
  Nanos last_progress_print_ = 0;
  bool stopping_ = false;                     // the run stops its ranks (PrintFaultEvents)
  std::vector<reports::EventRecord> unsaid_;  // arrived, not yet printed
  bool tty_ = isatty(2);
  bool colour_ = ColourOnStderr();
  std::string job_id_;
  // Nothing is lost silently: telemetry rows the writer would not take (queue full past its
  // deadline) are counted, and every other write of the run's results that failed is listed;
  // either fails the run (exit 3) with what was lost.
  std::atomic<uint64_t> dropped_telemetry_{0};
  std::mutex lost_mu_;
  std::vector<std::string> lost_;
  void Keep(const Status& st, const std::string& what) {
    if (st.ok()) return;
    FL_LOG(kError, "coord") << "lost " << what << ": " << st.ToUserString();
    std::lock_guard lock(lost_mu_);
    lost_.push_back(what + " (" + st.ToUserString() + ")");
  }
};

void Runner::Event(const std::string& kind, nlohmann::json detail, int rank) {
  reports::EventRecord e;
  e.run_id = run_id_;
  e.rank = rank;
  e.wall_ns = WallNowNs();
  e.kind = kind;
  e.detail_json = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  PushEvent(std::move(e));
}

void Runner::PushEvent(reports::EventRecord e) {
  if (writer_ && !writer_->Push(std::move(e), Deadline::After(kNsPerSec)).ok())
    dropped_telemetry_++;
}

void Runner::LabEvents() {
  if (!lab_) return;
  for (auto& ev : lab_->TakeEvents()) {
    reports::EventRecord e;
    e.run_id = run_id_;
    e.rank = -1;
    e.wall_ns = ev.wall_ns;
    e.kind = std::move(ev.kind);
    e.detail_json = std::move(ev.detail_json);
    PushEvent(std::move(e));
  }
}

Status Runner::Prepare() {
  if (!opts_.replay_of.empty()) {
    FL_ASSIGN_OR_RETURN(reports::RunRecord old, store_->GetRun(opts_.replay_of));
    FL_ASSIGN_OR_RETURN(scenario_, ParseScenario(old.scenario_text, opts_.scenario_path));
    seed_ = opts_.seed.value_or(old.seed);
    // The stored run's lab file, as it was then, unless this replay names its own.
    if (opts_.lab_file.empty() && !old.lab_text.empty()) {
      scenario_.lab = LabSpec{};
      scenario_.lab.file = old.lab_source;
      scenario_.lab.file_text = old.lab_text;
      scenario_.lab.where = "the lab of run " + opts_.replay_of;
    }
    // The stored run's command-line CCL overrides (tags), unless this replay names its own.
    if (opts_.ccl.empty() && opts_.ccl_options.empty()) {
      std::map<std::string, std::string> old_options;
      for (const auto& [k, v] : old.tags)
        if (k.rfind("ccl.", 0) == 0) old_options[k.substr(4)] = v;
      auto it = old.tags.find("ccl");
      FL_RETURN_IF_ERROR(
          ApplyCclOverrides(scenario_, it == old.tags.end() ? "" : it->second, old_options));
    }
  } else {
    FL_ASSIGN_OR_RETURN(scenario_, LoadScenarioFile(opts_.scenario_path));
    seed_ = opts_.seed.value_or(scenario_.seed);
  }
  FL_RETURN_IF_ERROR(ApplyCclOverrides(scenario_, opts_.ccl, opts_.ccl_options));
  injectors::InjectorRegistry registry("injector");
  FL_RETURN_IF_ERROR(injectors::RegisterBuiltinInjectors(registry));
  ApplyLabOverride(scenario_, opts_.lab_file);
  lab::LabSource source{scenario_.lab.file.empty() ? scenario_.path : scenario_.lab.file,
                        scenario_.lab.file_text, scenario_.lab.slurm_yaml, scenario_.lab.where};
  auto opened = lab::OpenLab(source, "check");
  if (!opened.ok()) {
    Status st = opened.status();
    return scenario_.lab.where.empty() ? st : st.Prepend(scenario_.lab.where + ": lab");
  }
  lab_ = std::move(*opened);
  hosts_ = lab_->hosts();
  FL_RETURN_IF_ERROR(ApplyRanksPerHost());
  const FaultCatalog* catalog = &lab_->catalog();
  FL_RETURN_IF_ERROR(ValidateAgainstCatalog(scenario_, *catalog));
  FL_ASSIGN_OR_RETURN(plan_, MakePlan(scenario_, *catalog, seed_));
  // Each injector checks its own parameters now, before anything exists.
  for (const PlannedFault& pf : plan_.faults) {
    FL_ASSIGN_OR_RETURN(auto inj, registry.Create(pf.kind));
    injectors::FaultSpec spec{pf.kind, pf.target, pf.params, pf.duration_ns, seed_};
    Status v = inj->Validate(spec);
    if (v.ok()) v = lab_->CheckFault(pf.kind, pf.params);
    if (!v.ok())
      return InvalidArgumentError(scenario_.faults[pf.spec_index].where + ": " + v.message());
  }
  if (Status st = lab_->CheckJob(scenario_.job); !st.ok()) return st.Prepend(scenario_.path);
  return OkStatus();
}

// A command job's ranks_per_host: at most the lab's ranks per host (its containers).
Status Runner::ApplyRanksPerHost() {
  const uint32_t n = scenario_.job.ranks_per_host;
  for (auto& h : hosts_) {
    if (n > 0 && static_cast<int>(n) > h.ranks)
      return InvalidArgumentError(scenario_.path + ": job.ranks_per_host " + std::to_string(n) +
                                  " is more than host " + h.name + " has rank slots (" +
                                  std::to_string(h.ranks) + ")");
    if (n > 0) h.ranks = static_cast<int>(n);
  }
  world_ = 0;
  for (const auto& h : hosts_) world_ += h.ranks;
  return OkStatus();
}

Status Runner::Provision() {
  FL_RETURN_IF_ERROR(lab_->Provision(LabRunInfo()));
  hosts_ = lab_->hosts();  // now with the NICs' addresses (and an allocation's node names)
  FL_RETURN_IF_ERROR(ApplyRanksPerHost());
  // A lab whose names are known only now (a Slurm node count) validates and plans again: the
  // same seed picks the same positions, now with real names.
  FL_RETURN_IF_ERROR(ValidateAgainstCatalog(scenario_, lab_->catalog()));
  FL_ASSIGN_OR_RETURN(plan_, MakePlan(scenario_, lab_->catalog(), seed_));
  return OkStatus();
}

// The control plane: agents dial in at listen (port 0: the kernel's choice) with token.
Status Runner::StartControlServer(const std::string& listen, const std::string& token) {
  ControlServerOptions so;
  so.listen_address = listen;
  so.token = token;
  so.run_id = run_id_;
  so.lease_ns = opts_.lease_ns;
  // The fleet's pace (control_server.h): the small-lab pace up to 250 agents, fewer messages
  // per agent beyond.
  const FleetPace pace = PaceForFleet(lab_->agent_names().size(), opts_.lease_ns);
  so.heartbeat_interval_ns = std::max<Nanos>(pace.heartbeat_interval_ns, 50 * kNsPerMs);
  so.agent_heartbeat_interval_ns = so.heartbeat_interval_ns;
  so.agent_telemetry_interval_ns = pace.telemetry_interval_ns;
  so.tls = tls_;
  FL_ASSIGN_OR_RETURN(server_, ControlServer::Start(so));
  server_->SetTelemetryHandler(
      [this](const std::string& h, const pb::TelemetryBatch& b) { OnTelemetry(h, b); });
  return OkStatus();
}

// The lab starts its agents (or they start themselves and dial in); wait for all of them, in
// slices so that Ctrl-C during a long wait is answered at once.
Status Runner::AwaitAgents() {
  agent_hosts_ = lab_->agent_names();
  const Nanos wait = lab_->agent_wait();
  Narrate("[agents] waiting up to %.0f s for %zu agents to dial in at %s",
          static_cast<double>(wait) / 1e9, agent_hosts_.size(), server_->address().c_str());
  Deadline end = Deadline::After(wait);
  for (;;) {
    Status st = server_->WaitForAgents(agent_hosts_, Deadline::After(200 * kNsPerMs));
    if (st.ok() || g_interrupted) return st;
    if (auto lost = lab_->PollLostAgent())
      return UnavailableError("agent " + lost->name + " ended before it registered (" + lost->how +
                              ")");
    if (end.Expired()) {
      std::string missing;
      for (const auto& h : agent_hosts_)
        if (!server_->Agent(h).ok()) missing += (missing.empty() ? "" : ", ") + h;
      return UnavailableError("no agent dialled in from " + missing + " within " +
                              FormatDuration(wait) + " (lab " + lab_->source() + ")");
    }
  }
}

Status Runner::StartAgents() {
  const lab::LabRun run = LabRunInfo();
  FL_RETURN_IF_ERROR(MakeDirs(run_dir_, 0700));
  FL_ASSIGN_OR_RETURN(lab::ControlPlane control, lab_->Control(run));
  if (!control.tls_dir.empty()) {
    FL_ASSIGN_OR_RETURN(tls_, LoadTlsMaterial(control.tls_dir, CertRole::kCoordinator, ""));
  }
  FL_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(control.token_file));
  FL_RETURN_IF_ERROR(StartControlServer(control.listen, token));
  const lab::Rendezvous rdv = lab_->RendezvousFor(run);
  if (rdv.kind == lab::Rendezvous::Kind::kDirectory) {
    FL_RETURN_IF_ERROR(MakeDirs(rdv.dir, 0700));
    store_spec_ = rdv.dir;
  } else {
    FL_ASSIGN_OR_RETURN(rendezvous_, ccl::TcpStoreServer::Start(rdv.listen, token));
    store_spec_ = "tcp://" + rendezvous_->address();
    Narrate("[rendezvous] ranks meet through the TCP store at %s", rendezvous_->address().c_str());
  }
  lab::AgentLaunch launch;
  launch.coordinator = server_->address();
  launch.token_file = control.token_file;
  launch.run_id = run_id_;
  launch.run_dir = run_dir_;
  launch.bin_dir = bin_dir_;
  launch.policy_path = opts_.policy_path;
  launch.lease_ns = opts_.lease_ns;
  FL_RETURN_IF_ERROR(lab_->StartAgents(launch));
  FL_RETURN_IF_ERROR(AwaitAgents());
  return RegisterAgents();
}

// Clock offsets and fingerprints of the registered agents, into the store.
Status Runner::RegisterAgents() {
  std::vector<reports::HostRecord> registered;
  nlohmann::json nccl_env = nlohmann::json::object();  // the same for every host
  for (const auto& [k, v] : EffectiveJobEnv(scenario_, LabEnv(hosts_)))
    if (k.rfind("NCCL_", 0) == 0) nccl_env[k] = v;
  std::mutex clocks_mu;
  std::map<std::string, ClockOffset> clocks;
  FL_RETURN_IF_ERROR(FirstError(FanOut(
      agent_hosts_, kFanOutWidth,
      [&](const std::string& host) -> Status {
        FL_ASSIGN_OR_RETURN(ClockOffset off,
                            server_->SyncClock(host, 5, Deadline::After(5 * kNsPerSec)));
        std::lock_guard lock(clocks_mu);
        clocks[host] = off;
        return OkStatus();
      },
      Deadline::After(60 * kNsPerSec))));
  for (const auto& host : agent_hosts_) {
    const ClockOffset off = clocks.at(host);
    offsets_[host] = off;
    FL_ASSIGN_OR_RETURN(AgentInfo info, server_->Agent(host));
    reports::HostRecord hr;
    hr.run_id = run_id_;
    hr.name = host;
    hr.address = info.peer;
    hr.clock_offset_ns = off.offset_ns;
    hr.clock_uncertainty_ns = off.uncertainty_ns;
    nlohmann::json fp = {
        {"kernel", info.fingerprint.kernel()},
        {"ccl_build", info.fingerprint.ccl_build()},
        {"cuda_driver", info.fingerprint.cuda_driver()},
        {"gpus",
         std::vector<std::string>(info.fingerprint.gpus().begin(), info.fingerprint.gpus().end())},
        {"rdma_devices", std::vector<std::string>(info.fingerprint.rdma_devices().begin(),
                                                  info.fingerprint.rdma_devices().end())}};
    nlohmann::json nics = nlohmann::json::array();
    for (const auto& n : info.fingerprint.nics())
      nics.push_back({{"name", n.name()},
                      {"driver", n.driver()},
                      {"firmware", n.firmware()},
                      {"mac", n.mac()},
                      {"speed_mbps", n.speed_mbps()}});
    fp["nics"] = nics;
    // NCCL: its version where the host has one (absent otherwise), and the NCCL_* variables
    // the ranks get.
    if (!info.fingerprint.nccl_version().empty())
      fp["nccl_version"] = info.fingerprint.nccl_version();
    if (!nccl_env.empty()) fp["nccl_env"] = nccl_env;
    hr.fingerprint_json = fp.dump();
    FL_RETURN_IF_ERROR(store_->PutHost(hr));
    registered.push_back(std::move(hr));
  }
  // Firmware A/B without hand tagging: tags from what the hosts report (fw, nic.driver,
  // kernel, ...); a tag given with --tag wins.
  for (const auto& [k, v] : reports::FingerprintTags(registered))
    if (!opts_.tags.count(k)) FL_RETURN_IF_ERROR(store_->SetTag(run_id_, k, v));
  return OkStatus();
}

// Telemetry comes from the agents: each record is checked (rank within the world, a valid
// event kind, a JSON-object detail, a readable rank_exit) before it counts or is stored. A
// bad record is counted, logged once per agent and dropped; it never ends the run.
void Runner::OnTelemetry(const std::string& host, const pb::TelemetryBatch& batch) {
  Nanos off = OffsetOf(host);
  std::vector<reports::SampleRecord> samples;
  std::vector<reports::EventRecord> events;
  std::vector<reports::NicSampleRecord> nics;
  {
    std::lock_guard lock(progress_.mu);
    auto bad = [&](const std::string& why) {
      ++progress_.bad_telemetry;
      if (progress_.bad_telemetry_hosts.insert(host).second)
        FL_LOG(kWarn, "coord") << "dropped bad telemetry from agent " << host << ": " << why
                               << "; further bad records from it are only counted";
    };
    for (const auto& s : batch.samples()) {
      if (s.rank() < 0 || s.rank() >= world_) {
        bad("a sample of rank " + std::to_string(s.rank()) + " (world size " +
            std::to_string(world_) + ")");
        continue;
      }
      if (s.iteration() > static_cast<uint64_t>(INT64_MAX)) {
        bad("a sample with iteration " + std::to_string(s.iteration()));
        continue;
      }
      reports::SampleRecord r;
      r.run_id = run_id_;
      r.rank = s.rank();
      r.iteration = static_cast<int64_t>(s.iteration());
      r.start_ns = s.start_wall_ns() - off;
      r.end_ns = s.end_wall_ns() - off;
      r.bytes = s.bytes();
      r.verified = s.verified();
      r.mismatch = s.mismatch();
      samples.push_back(r);
      auto& last = progress_.last_iteration.try_emplace(s.rank(), -1).first->second;
      last = std::max<int64_t>(last, r.iteration);
      progress_.samples++;
      progress_.mismatches += s.mismatch();
      progress_.last_sample_mono = MonoNowNs();
    }
    for (const auto& e : batch.events()) {
      if (e.rank() < -1 || e.rank() >= world_) {
        bad("an event of rank " + std::to_string(e.rank()));
        continue;
      }
      if (!IsValidEventKind(e.kind())) {
        bad("an event whose kind is not a name");
        continue;
      }
      if (e.detail().size() > kMaxTelemetryLineBytes) {
        bad("a " + e.kind() + " event with a detail over " +
            std::to_string(kMaxTelemetryLineBytes) + " bytes");
        continue;
      }
      if (!e.detail().empty()) {
        auto d = ParseJson(e.detail(), e.kind() + " detail");
        if (!d.ok() || !d->is_object()) {
          bad("a " + e.kind() + " event whose detail is not a JSON object");
          continue;
        }
      }
      std::optional<int> code;
      if (e.kind() == "rank_exit") {
        auto c = e.rank() >= 0 ? ParseRankExitDetail(e.detail().empty() ? "{}" : e.detail())
                               : StatusOr<int>(InvalidArgumentError("rank_exit without a rank"));
        if (!c.ok()) {
          bad(c.status().ToUserString());
          continue;
        }
        code = *c;
      }
      reports::EventRecord r;
      r.run_id = run_id_;
      r.rank = e.rank();
      r.wall_ns = e.wall_ns() - off;
      r.kind = e.kind();
      r.detail_json = e.detail().empty() ? "{}" : e.detail();
      const bool bad_exit = code && *code != 0;
      if ((bad_exit || r.kind == reports::kEventFaultDetected ||
           r.kind == reports::kEventFailoverDone || r.kind == reports::kEventPathRestored) &&
          progress_.notable.size() < 4096)
        progress_.notable.push_back(r);
      if ((r.kind == reports::kEventFaultDetected || r.kind == reports::kEventFailoverDone ||
           r.kind == reports::kEventPathRestored) &&
          progress_.anchor_events.size() < 4096) {
        progress_.anchor_events.push_back(r);
        progress_.anchor_event_cv.notify_all();
      }
      events.push_back(r);
      if (code) progress_.exit_code[e.rank()] = *code;
    }
    for (const auto& n : batch.nics()) {
      if (std::string why = NicSampleProblem(n); !why.empty()) {
        bad(why);
        continue;
      }
      nics.push_back(NicRecordOf(run_id_, host, off, n));
    }
  }
  if (!samples.empty() && !writer_->PushSamples(samples, Deadline::After(5 * kNsPerSec)).ok())
    dropped_telemetry_ += samples.size();
  if (!nics.empty() && !writer_->PushNicSamples(nics, Deadline::After(5 * kNsPerSec)).ok())
    dropped_telemetry_ += nics.size();
  if (!events.empty() && !writer_->PushEvents(events, Deadline::After(5 * kNsPerSec)).ok())
    dropped_telemetry_ += events.size();
}

Status Runner::Launch(int attempt, uint64_t first_iteration) {
  {
    std::lock_guard lock(progress_.mu);
    progress_.exit_code.clear();
  }
  job_id_ = run_id_ + "-" + std::to_string(attempt);
  const JobSpec& j = scenario_.job;
  std::vector<std::string> args = {"--job-id",
                                   job_id_,
                                   store_spec_.rfind("tcp://", 0) == 0 ? "--store" : "--store-dir",
                                   store_spec_,
                                   "--ccl",
                                   j.ccl,
                                   "--workload",
                                   j.workload,
                                   "--size",
                                   std::to_string(j.size_bytes),
                                   "--dtype",
                                   j.dtype,
                                   "--check-every",
                                   std::to_string(j.check_every),
                                   "--collective-timeout",
                                   std::to_string(j.collective_timeout_ns) + "ns",
                                   "--first-iteration",
                                   std::to_string(first_iteration)};
  if (j.iterations > 0)
    args.insert(args.end(), {"--iterations", std::to_string(j.iterations)});
  else
    args.insert(args.end(), {"--duration", std::to_string(j.duration_ns) + "ns"});
  if (!j.failover) args.push_back("--no-failover");
  if (j.command.empty() && j.on_rank_loss != "abort")
    args.insert(args.end(), {"--on-rank-loss", j.on_rank_loss});
  if (j.command.empty() && j.shrink_grace_ns > 0)
    args.insert(args.end(), {"--shrink-grace", std::to_string(j.shrink_grace_ns) + "ns"});
  for (const auto& [k, v] : j.workload_options)
    args.insert(args.end(), {"--workload-option", k + "=" + v});
  for (const auto& [k, v] : j.ccl_options) args.insert(args.end(), {"--ccl-option", k + "=" + v});
  // The ranks' environment: the CCL's defaults (NCCL_IB_TIMEOUT, ...) under job.env.
  const std::map<std::string, std::string> env = EffectiveJobEnv(scenario_, LabEnv(hosts_));
  for (const auto& [k, v] : env) args.insert(args.end(), {"--env", k + "=" + v});
  if (!j.command.empty()) {
    // A command job: the worker runs the command (after "--") as each rank. The workload's
    // arguments above are unused by it, but harmless; its own are these.
    args = {"--job-id",
            job_id_,
            store_spec_.rfind("tcp://", 0) == 0 ? "--store" : "--store-dir",
            store_spec_,
            "--first-iteration",
            std::to_string(first_iteration),
            "--progress-format",
            j.progress_format};
    if (j.iterations > 0) args.insert(args.end(), {"--iterations", std::to_string(j.iterations)});
    if (j.duration_ns > 0)
      args.insert(args.end(), {"--duration", std::to_string(j.duration_ns) + "ns"});
    // MASTER_ADDR: rank 0's data address (its first NIC), else its host's name.
    const HostSlot& first = hosts_.front();
    in_addr a;
    const bool ipv4 =
        !first.nics.empty() && inet_pton(AF_INET, first.nics.front().c_str(), &a) == 1;
    args.insert(args.end(), {"--master-addr", ipv4 ? first.nics.front() : first.name});
    if (lab_->kind() == "slurm") args.push_back("--slurm-env");
    for (const auto& [k, v] : env) args.insert(args.end(), {"--env", k + "=" + v});
    args.push_back("--");
    args.insert(args.end(), j.command.begin(), j.command.end());
  }
  nlohmann::json extra = args;
  int first_rank = 0;
  std::map<std::string, pb::CoordinatorMessage> launches;
  std::vector<std::string> launch_hosts;
  for (const HostSlot& slot : hosts_) {
    const std::string& host = slot.name;
    const std::vector<std::string>& nics = slot.nics;
    pb::CoordinatorMessage m;
    m.mutable_launch()->set_worker_args_json(extra.dump());
    for (int g = 0; g < slot.ranks; ++g) {
      auto* r = m.mutable_launch()->add_ranks();
      r->set_rank(first_rank + g);
      r->set_world_size(world_);
      // gloo binds one NIC per rank (local rank g on rail g); ftccl uses every NIC, rail order.
      if (j.ccl == "gloo" && !nics.empty())
        r->add_nics(nics[g % nics.size()]);
      else
        for (const auto& n : nics) r->add_nics(n);
    }
    launches[host] = std::move(m);
    launch_hosts.push_back(host);
    first_rank += slot.ranks;
  }
  FL_RETURN_IF_ERROR(FirstError(FanOut(
      launch_hosts, kFanOutWidth,
      [&](const std::string& host) -> Status {
        FL_ASSIGN_OR_RETURN(
            pb::Ack ack, server_->Call(host, launches.at(host), Deadline::After(30 * kNsPerSec)));
        if (!ack.ok())
          return Status(static_cast<Code>(ack.error_code()),
                        host + ": launch failed: " + ack.error());
        return OkStatus();
      },
      Deadline::After(30 * kNsPerSec))));
  Event("job_launch", {{"attempt", attempt}, {"first_iteration", first_iteration}});
  return OkStatus();
}

Status Runner::StopRanks() {
  std::vector<std::string> hosts;
  for (const HostSlot& slot : hosts_) hosts.push_back(slot.name);
  pb::CoordinatorMessage m;
  m.mutable_stop()->set_grace_ms(2000);
  return FirstError(FanOut(
      hosts, kFanOutWidth,
      [&](const std::string& host) {
        return server_->Call(host, m, Deadline::After(20 * kNsPerSec)).status();
      },
      Deadline::After(20 * kNsPerSec)));
}

namespace {

constexpr Nanos kSendAheadNs = 500 * kNsPerMs;

// What an agent's answer to a command says: the call's error, the agent's, or OK.
Status AckStatus(const StatusOr<pb::Ack>& ack) {
  if (!ack.ok()) return ack.status();
  if (!ack->ok()) return Status(static_cast<Code>(ack->error_code()), ack->error());
  return OkStatus();
}

// A fault the run still has to revert: in effect, or sent ahead and not answered yet.
bool Outstanding(const ActiveFault& f) {
  return f.ahead != nullptr || (f.injected && !f.reverted && !f.failed);
}

pb::CoordinatorMessage InjectMessage(const ActiveFault& f) {
  pb::CoordinatorMessage m;
  auto* in = m.mutable_inject();
  in->set_fault_id(f.plan.id);
  in->set_kind(f.plan.kind);
  in->set_target(f.plan.target);
  for (const auto& [k, v] : f.plan.params) (*in->mutable_params())[k] = v;
  in->set_duration_ms(f.plan.duration_ns / kNsPerMs);
  return m;
}

}  // namespace

Status Runner::InjectDue(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  Nanos sent = WallNowNs();
  f.record.requested_wall_ns = sent;
  f.injected = true;
  return FinishInject(f, server_->Call(f.agent, m, Deadline::After(30 * kNsPerSec)));
}

void Runner::SendAhead(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  const Nanos off = OffsetOf(f.agent);
  m.mutable_inject()->set_due_agent_wall_ns(*f.record.scheduled_wall_ns + off);
  f.record.requested_wall_ns = WallNowNs();
  if (*f.record.requested_wall_ns > *f.record.scheduled_wall_ns - kNsPerMs)
    FL_LOG(kWarn, "coord") << "fault " << f.plan.id << " sent "
                           << (*f.record.requested_wall_ns - *f.record.scheduled_wall_ns) / kNsPerUs
                           << " us after its time (the timeline loop was late)";
  ControlServer* server = server_.get();
  const std::string agent = f.agent;
  f.ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(std::async(
      std::launch::async,
      [server, agent, m] { return server->Call(agent, m, Deadline::After(30 * kNsPerSec)); }));
}

void Runner::ArmAtAgent(ActiveFault& f) {
  pb::CoordinatorMessage m = InjectMessage(f);
  m.mutable_inject()->set_after_iteration(f.plan.after_iteration);
  for (int r : ProgressRanksOn(f.agent)) m.mutable_inject()->add_iteration_ranks(r);
  f.record.requested_wall_ns = WallNowNs();
  ControlServer* server = server_.get();
  const std::string agent = f.agent;
  // Answered when it fired, which may be long from now; a revert (the run's end) cancels it
  // and is answered at once, and a broken session ends the call.
  f.ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(
      std::async(std::launch::async, [server, agent, m] {
        return server->Call(agent, m, Deadline::After(24 * 3600 * kNsPerSec));
      }));
}

void Runner::RevertAhead(ActiveFault& f) {
  pb::CoordinatorMessage m;
  m.mutable_revert()->set_fault_id(f.plan.id);
  const Nanos off = OffsetOf(f.agent);
  // Its time: in effect for its duration (the coordinator's clock), on the agent's clock.
  m.mutable_revert()->set_due_agent_wall_ns(*f.record.effective_wall_ns + f.plan.duration_ns + off);
  ControlServer* server = server_.get();
  const std::string agent = f.agent;
  f.revert_ahead = std::make_shared<std::future<StatusOr<pb::Ack>>>(std::async(
      std::launch::async,
      [server, agent, m] { return server->Call(agent, m, Deadline::After(30 * kNsPerSec)); }));
}

Status Runner::FinishInject(ActiveFault& f, StatusOr<pb::Ack> ack) {
  f.injected = true;
  Status st = AckStatus(ack);
  if (!st.ok()) {
    f.failed = true;
    Keep(store_->PutFault(f.record), "fault record " + f.plan.id);
    return st.Prepend("fault " + f.plan.id + " (" + f.plan.kind + " on " + f.plan.target + ")");
  }
  Nanos off = offsets_[f.agent].offset_ns;
  f.handle_id = ack->handle();
  if (ack->requested_wall_ns()) f.record.requested_wall_ns = ack->requested_wall_ns() - off;
  f.record.effective_wall_ns =
      ack->effective_wall_ns() ? ack->effective_wall_ns() - off : WallNowNs();
  if (f.plan.duration_ns > 0)
    f.revert_at_mono =
        MonoNowNs() + f.plan.duration_ns - (WallNowNs() - *f.record.effective_wall_ns);
  FL_RETURN_IF_ERROR(store_->PutFault(f.record));
  return OkStatus();
}

Status Runner::RevertFault(ActiveFault& f) {
  if (!Outstanding(f)) return OkStatus();
  pb::CoordinatorMessage m;
  m.mutable_revert()->set_fault_id(f.plan.id);
  return FinishRevert(f, server_->Call(f.agent, m, Deadline::After(30 * kNsPerSec)));
}

void Runner::RevertAll() {
  std::vector<ActiveFault*> todo;
  std::vector<std::string> agents;
  for (auto& f : faults_) {
    if (!Outstanding(f)) continue;
    todo.push_back(&f);
    if (std::find(agents.begin(), agents.end(), f.agent) == agents.end()) agents.push_back(f.agent);
  }
  std::vector<StatusOr<pb::Ack>> acks(todo.size(), UnavailableError("revert not sent"));
  FanOut(
      agents, kFanOutWidth,
      [&](const std::string& agent) {
        for (size_t i = 0; i < todo.size(); ++i) {
          if (todo[i]->agent != agent) continue;
          pb::CoordinatorMessage m;
          m.mutable_revert()->set_fault_id(todo[i]->plan.id);
          acks[i] = server_->Call(agent, m, Deadline::After(30 * kNsPerSec));
        }
        return OkStatus();
      },
      Deadline::After(30 * kNsPerSec));
  for (size_t i = 0; i < todo.size(); ++i) {
    Status st = FinishRevert(*todo[i], std::move(acks[i]));
    if (!st.ok()) FL_LOG(kError, "coord") << st.ToUserString();
  }
}

Status Runner::FinishRevert(ActiveFault& f, StatusOr<pb::Ack> ack) {
  // A revert sent ahead that another revert overtook (the run's end): the agent answers it
  // alike once it has reverted the fault.
  if (f.revert_ahead) {
    f.revert_ahead->wait();
    f.revert_ahead.reset();
  }
  const bool ahead = f.ahead != nullptr;
  if (ahead) {
    // Sent ahead and not answered yet (the run ends before its time): the revert cancelled
    // it on the agent (nothing applied, no journal entry; its inject is answered
    // "cancelled"), or it had fired and the revert reverted it (recorded as usual).
    StatusOr<pb::Ack> fired = f.ahead->get();
    f.ahead.reset();
    if (!fired.ok() || !fired->ok()) {
      FL_LOG(kInfo, "coord") << "fault " << f.plan.id << " not injected: "
                             << (fired.ok() ? fired->error() : fired.status().ToString());
      return OkStatus();
    }
    if (Status st = FinishInject(f, std::move(fired)); !st.ok())
      FL_LOG(kError, "coord") << st.ToUserString();
  }
  f.reverted = true;
  Status st = AckStatus(ack);
  f.record.revert_verified = st.ok();
  f.record.reverted_wall_ns = st.ok() && ack->effective_wall_ns()
                                  ? ack->effective_wall_ns() - offsets_[f.agent].offset_ns
                                  : WallNowNs();
  Keep(store_->PutFault(f.record), "fault record " + f.plan.id);
  if (st.ok())
    Say("[fault] " + f.plan.id + " reverted after " +
            FormatDuration(*f.record.reverted_wall_ns -
                           f.record.effective_wall_ns.value_or(*f.record.reverted_wall_ns)),
        Tone::kGood);
  return st.Prepend("reverting fault " + f.plan.id);
}

void Runner::Say(const std::string& line, Tone tone) {
  if (GetVerbosity() == Verbosity::kQuiet) return;
  const std::string text = Tint(line, tone, colour_);
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s\n", text.c_str());
  else
    std::fprintf(stderr, "%s\n", text.c_str());
  last_progress_print_ = 0;  // redraw the progress line at once
}

void Runner::PrintFaultEvents(bool all) {
  {
    std::lock_guard lock(progress_.mu);
    for (auto& n : progress_.notable) unsaid_.push_back(std::move(n));
    progress_.notable.clear();
  }
  // Events reach us some 10-50 ms after they happen (the agents flush every 50 ms): whatever
  // happened before an event 300 ms old has arrived, so it can be judged first or not.
  constexpr Nanos kSettle = 300 * kNsPerMs;
  Nanos settled = WallNowNs() - kSettle;
  // A fault fired ahead whose answer is not in yet (a switch over SSH takes a second) may own
  // what came after its time: those events wait for its answer.
  for (const auto& f : faults_)
    if (f.ahead && f.record.scheduled_wall_ns)
      settled = std::min(settled, *f.record.scheduled_wall_ns - 1);
  std::vector<reports::EventRecord> events;
  for (auto it = unsaid_.begin(); it != unsaid_.end();) {
    if (all || it->wall_ns <= settled) {
      events.push_back(std::move(*it));
      it = unsaid_.erase(it);
    } else {
      ++it;
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.wall_ns < b.wall_ns; });
  for (const reports::EventRecord& e : events) {
    if (e.kind == "rank_exit") {
      if (stopping_) continue;
      auto d = nlohmann::json::parse(e.detail_json, nullptr, false);
      std::string how = d.contains("signal")
                            ? "was killed by signal " + d["signal"].dump()
                            : "exited with code " + d.value("code", nlohmann::json(0)).dump();
      Say("[rank] rank " + std::to_string(e.rank) + " " + how, Tone::kBad);
      // The end of its log (rank-N.log): at most the last 8 lines here; the store keeps 4 KiB.
      if (d.contains("log_tail") && d["log_tail"].is_string()) {
        std::vector<std::string> lines;
        std::string t = d["log_tail"].get<std::string>();
        for (size_t at = 0; at < t.size();) {
          size_t nl = t.find('\n', at);
          if (nl == std::string::npos) nl = t.size();
          if (nl > at) lines.push_back(t.substr(at, std::min<size_t>(nl - at, 200)));
          at = nl + 1;
        }
        for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i)
          Say("  | " + lines[i], Tone::kDim);
      }
      continue;
    }
    // The faults it answers (docs/metrics.md): those whose window holds it — the latest one
    // injected by then, and the faults it is nested in (after_event / during).
    const bool restored = e.kind == reports::kEventPathRestored;
    for (auto& f : faults_) {
      if (f.failed || !InWindow(f, e.kind, e.wall_ns) || !f.told.insert(e.kind).second) continue;
      const Nanos since = std::max<Nanos>(
          0, e.wall_ns - (restored ? *f.record.reverted_wall_ns : *f.record.effective_wall_ns));
      const std::string who = "rank " + std::to_string(e.rank);
      if (e.kind == reports::kEventFaultDetected)
        Say("[fault] " + f.plan.id + " detected by " + who + " after " + FormatDuration(since),
            Tone::kFault);
      else if (e.kind == reports::kEventFailoverDone)
        Say("[fault] " + f.plan.id + " " + who + " failed over after " + FormatDuration(since),
            Tone::kGood);
      else
        Say("[fault] " + f.plan.id + " path restored (" + who + ") " + FormatDuration(since) +
                " after the revert",
            Tone::kGood);
    }
  }
}

void Runner::PrintProgress(const std::string& phase, bool force) {
  if (GetVerbosity() == Verbosity::kQuiet) return;
  Nanos now = MonoNowNs();
  if (!force && now - last_progress_print_ < (tty_ ? 250 * kNsPerMs : 5 * kNsPerSec)) return;
  last_progress_print_ = now;
  double rate = 0;
  {
    std::lock_guard lock(progress_.mu);
    progress_.rate.emplace_back(now, progress_.samples);
    while (progress_.rate.size() > 2 && now - progress_.rate.front().first > 2 * kNsPerSec)
      progress_.rate.pop_front();
    auto& [t0, s0] = progress_.rate.front();
    if (now > t0)
      rate = static_cast<double>(progress_.samples - s0) / (static_cast<double>(now - t0) / 1e9) /
             std::max(1, world_);
  }
  int64_t it = progress_.MinIteration(ProgressRanks());
  std::string next = "none";
  for (const auto& f : faults_) {
    if (f.injected || f.skipped) continue;
    if (!f.plan.anchor.empty())
      next = f.plan.id + " " + f.plan.kind + (f.plan.during ? " during " : " after ") +
             f.plan.anchor + (f.plan.during ? "" : "'s " + f.plan.anchor_event);
    else if (f.plan.after_iteration_trigger)
      next = f.plan.id + " " + f.plan.kind + " after iteration " +
             std::to_string(f.plan.after_iteration) + (f.ahead ? ", armed at " + f.agent : "");
    else if (steady_mono_ > 0)
      next = f.plan.id + " " + f.plan.kind + " in " +
             FormatDuration(std::max<Nanos>(0, steady_mono_ + f.plan.at_ns - now));
    else
      next = f.plan.id + " " + f.plan.kind + " after warm-up";
    break;
  }
  // The fault in effect (the latest injected, with how many more there are) and its time left.
  std::string active;
  int in_effect = 0;
  for (const auto& f : faults_) {
    if (!f.injected || f.reverted || f.failed || f.ahead) continue;
    ++in_effect;
    active = f.plan.id + " " + f.plan.kind + " on " + f.plan.target +
             (f.revert_at_mono > 0
                  ? ", " + FormatDuration(std::max<Nanos>(0, f.revert_at_mono - now)) + " left"
                  : ", until the end");
  }
  if (in_effect > 1) active += " (+" + std::to_string(in_effect - 1) + " more)";
  std::string done = "iteration " + std::to_string(it + 1);
  if (scenario_.job.iterations)
    done += "/" + std::to_string(scenario_.job.iterations);
  else if (steady_mono_ > 0)
    done += " (" + FormatDuration(now - steady_mono_) + " of steady state)";
  char line[512];
  std::snprintf(line, sizeof line, "[%s] %s  %.1f it/s  %s%snext fault: %s", phase.c_str(),
                done.c_str(), rate,
                active.empty() ? "" : "active: ", active.empty() ? "" : (active + "  ").c_str(),
                next.c_str());
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s", line);
  else
    std::fprintf(stderr, "%s\n", line);
}

// The interpreter of the pure timeline (timeline.h): it looks (clock, telemetry), asks
// NextTimelineStep what to do, does it over the control plane, prints, and sleeps until the
// step's wake time (at most 5 ms, so that progress and fault events are printed as they come).
int Runner::Timeline() {
  const JobSpec& j = scenario_.job;
  TimelineConfig cfg;
  // Warm-up: every rank past warmup_iterations (or the whole job, if it is shorter).
  cfg.warmup_iterations = std::min<uint64_t>(j.warmup_iterations,
                                             j.iterations ? j.iterations - 1 : j.warmup_iterations);
  // A command job that reports no progress (progress.format exit) has no warm-up to wait for.
  cfg.wait_for_warmup = !(!j.command.empty() && j.progress_format == "exit");
  cfg.warmup_limit_ns = 120 * kNsPerSec + j.hang_timeout_ns;
  cfg.hang_timeout_ns = j.hang_timeout_ns;
  cfg.send_ahead_ns = kSendAheadNs;
  cfg.restart_enabled = scenario_.restart.enabled;
  cfg.max_restarts = static_cast<int>(scenario_.restart.max_restarts);
  cfg.tolerate_rank_loss = j.command.empty() && j.on_rank_loss == "shrink";
  TimelineState state;
  state.start = MonoNowNs();

  auto announce = [&](const ActiveFault& f) {
    Say("[fault] " + f.plan.id + " " + f.plan.kind + " on " + f.plan.target + ": injected" +
            (f.record.scheduled_wall_ns
                 ? " " +
                       FormatDuration(std::max<Nanos>(
                           0, *f.record.effective_wall_ns - *f.record.scheduled_wall_ns)) +
                       " after its time"
                 : "") +
            (f.plan.duration_ns > 0 ? ", for " + FormatDuration(f.plan.duration_ns) : ""),
        Tone::kFault);
  };
  auto inject_failed = [&](const ActiveFault& f, const Status& st) {
    std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
    Event("inject_failed", {{"fault", f.plan.id}, {"error", st.ToUserString()}});
    return kExitInfra;
  };

  while (true) {
    LabEvents();
    if (!g_interrupted) {
      if (auto host = LostAgent()) {
        std::fprintf(stderr, "\nfaultline run: lost the agent of host %s; ending the run\n",
                     host->c_str());
        return kExitInfra;
      }
    }
    // Faults sent ahead whose agent has answered (it fired them, or could not).
    for (auto& f : faults_) {
      if (!f.ahead || f.ahead->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        continue;
      StatusOr<pb::Ack> fired = f.ahead->get();
      f.ahead.reset();
      // Armed at its agent: its time is when the ranks there passed the iteration.
      if (fired.ok() && fired->triggered_wall_ns() > 0)
        f.record.scheduled_wall_ns = fired->triggered_wall_ns() - OffsetOf(f.agent);
      if (Status st = FinishInject(f, std::move(fired)); !st.ok()) return inject_failed(f, st);
      announce(f);
    }
    // Reverts sent ahead that the agent has carried out.
    for (auto& f : faults_) {
      if (!f.revert_ahead ||
          f.revert_ahead->wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        continue;
      StatusOr<pb::Ack> done = f.revert_ahead->get();
      f.revert_ahead.reset();
      if (Status st = FinishRevert(f, std::move(done)); !st.ok()) {
        std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
        return kExitInfra;
      }
    }

    TimelineInput in;
    in.now = MonoNowNs();
    in.min_iteration = progress_.MinIteration(ProgressRanks(), cfg.tolerate_rank_loss);
    in.exited = progress_.Exited();
    in.world = world_;
    in.failed = progress_.FirstFailure().has_value();
    in.failed_ranks = progress_.FailedRanks();
    {
      std::lock_guard lock(progress_.mu);
      in.last_sample = progress_.last_sample_mono;
    }
    in.interrupted = g_interrupted;
    state.steady = steady_mono_;
    state.restarts = restarts_;
    state.faults.resize(faults_.size());
    for (size_t i = 0; i < faults_.size(); ++i) {
      ActiveFault& f = faults_[i];
      TimelineFault& t = state.faults[i];
      if (t.plan.id.empty()) {
        t.plan = f.plan;
        t.agent = f.agent;
      }
      if (!f.plan.anchor.empty() && f.anchor_due_wall == 0 && !f.injected && !f.skipped)
        f.anchor_due_wall = AnchorDueWall(f);
      t.anchor_due = f.anchor_due_wall ? in.now - (WallNowNs() - f.anchor_due_wall) : 0;
      t.phase = f.ahead      ? FaultPhase::kSentAhead
                : f.skipped  ? FaultPhase::kSkipped
                : f.failed   ? FaultPhase::kFailed
                : f.reverted ? FaultPhase::kReverted
                : f.injected ? FaultPhase::kInjected
                             : FaultPhase::kPending;
      t.revert_at = f.revert_at_mono;
      t.revert_sent = f.revert_ahead != nullptr;
      t.armable = f.plan.after_iteration_trigger && !cfg.tolerate_rank_loss &&
                  !ProgressRanksOn(f.agent).empty();
    }

    const TimelineStep step = NextTimelineStep(state, cfg, in);
    for (const TimelineAction& a : step.actions) {
      switch (a.kind) {
        case TimelineActionKind::kBeginSteady:
          BeginSteady();
          break;
        case TimelineActionKind::kSendAhead:
          SendAhead(faults_[a.fault]);
          break;
        case TimelineActionKind::kArm:
          ArmAtAgent(faults_[a.fault]);
          break;
        case TimelineActionKind::kInject: {
          ActiveFault& f = faults_[a.fault];
          if (f.plan.after_iteration_trigger) f.record.scheduled_wall_ns = WallNowNs();
          if (f.anchor_due_wall) f.record.scheduled_wall_ns = f.anchor_due_wall;
          if (Status st = InjectDue(f); !st.ok()) return inject_failed(f, st);
          announce(f);
          break;
        }
        case TimelineActionKind::kRevertAhead:
          RevertAhead(faults_[a.fault]);
          break;
        case TimelineActionKind::kRevert:
          if (Status st = RevertFault(faults_[a.fault]); !st.ok()) {
            std::fprintf(stderr, "\nfaultline run: %s\n", st.ToUserString().c_str());
            return kExitInfra;
          }
          break;
        case TimelineActionKind::kSkip: {
          ActiveFault& f = faults_[a.fault];
          f.skipped = true;
          Say("[fault] " + f.plan.id + " " + f.plan.kind + " on " + f.plan.target + ": skipped, " +
                  f.plan.anchor + " was no longer in effect",
              Tone::kBad);
          Event("fault_skipped", {{"fault", f.plan.id}, {"anchor", f.plan.anchor}});
          break;
        }
        case TimelineActionKind::kRestart:
          if (int rc = RestartJob(); rc >= 0) return rc;
          break;
        case TimelineActionKind::kEndPass:
          return kExitPass;
        case TimelineActionKind::kEndHung: {
          Event("job_hung", {{"idle_ns", in.now - in.last_sample}});
          return kExitPass;  // analysed as hung
        }
        case TimelineActionKind::kEndWarmupTimeout:
          Event("warmup_timeout", {{"limit_ns", cfg.warmup_limit_ns}});
          std::fprintf(stderr, "\nfaultline run: ranks did not finish warm-up within %s\n",
                       FormatDuration(cfg.warmup_limit_ns).c_str());
          return kExitInfra;
        case TimelineActionKind::kEndInterrupted:
          return kExitInterrupted;
      }
    }
    if (steady_mono_ > 0) PrintFaultEvents();
    PrintProgress(steady_mono_ > 0 ? "running" : "warm-up");
    const Nanos wait = step.wake_at - MonoNowNs();
    if (wait <= 0) continue;
    // A fault timed by another's event is injected as soon as that event is in: its arrival
    // ends the wait.
    bool anchored_pending = false;
    for (const auto& f : faults_)
      anchored_pending = anchored_pending || (!f.plan.anchor.empty() && !f.injected && !f.skipped);
    // A revert at its agent whose time has come: its answer ends the wait (a fault timed by
    // that revert, and the revert's line, go at once).
    std::shared_ptr<std::future<StatusOr<pb::Ack>>> reverting;
    for (const auto& f : faults_)
      if (f.revert_ahead && f.revert_at_mono <= MonoNowNs() + wait) reverting = f.revert_ahead;
    if (reverting) {
      reverting->wait_for(std::chrono::nanoseconds(wait));
      continue;
    }
    if (!anchored_pending) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      continue;
    }
    std::unique_lock lock(progress_.mu);
    const size_t seen = progress_.anchor_events.size();
    progress_.anchor_event_cv.wait_for(lock, std::chrono::nanoseconds(wait),
                                       [&] { return progress_.anchor_events.size() != seen; });
  }
}

// The steady state starts: its times, and the plan's faults as the timeline tracks them.
void Runner::BeginSteady() {
  steady_mono_ = MonoNowNs();
  steady_wall_ = WallNowNs();
  Event("steady_state", {{"iteration", progress_.MinIteration(ProgressRanks())}});
  for (const PlannedFault& pf : plan_.faults) {
    ActiveFault f;
    f.plan = pf;
    f.agent = lab_->AgentFor(pf.kind, pf.target);
    f.record.run_id = run_id_;
    f.record.fault_id = pf.id;
    f.record.kind = pf.kind;
    f.record.target = pf.target;
    f.record.params_json = nlohmann::json(pf.params).dump();
    f.record.anchor = pf.anchor;
    if (!pf.anchor.empty()) anchor_of_[pf.id] = pf.anchor;
    if (pf.time_triggered()) f.record.scheduled_wall_ns = steady_wall_ + pf.at_ns;
    faults_.push_back(f);
  }
}

bool Runner::InWindow(const ActiveFault& a, const std::string& kind, Nanos wall,
                      bool fired_ahead_counts) const {
  // A fault sent ahead whose answer is not in yet fired at its time (its agent fires it then):
  // its events may come before the answer does.
  const bool fired_ahead = fired_ahead_counts && a.ahead && a.record.scheduled_wall_ns &&
                           WallNowNs() >= *a.record.scheduled_wall_ns &&
                           kind != reports::kEventPathRestored;
  if (!fired_ahead && (!a.injected || !a.record.effective_wall_ns)) return false;
  const Nanos start = fired_ahead ? *a.record.scheduled_wall_ns : *a.record.effective_wall_ns;
  Nanos from = a.record.requested_wall_ns ? std::min(*a.record.requested_wall_ns, start) : start;
  if (kind == reports::kEventPathRestored) {
    if (!a.record.reverted_wall_ns) return false;
    from = *a.record.reverted_wall_ns;
  }
  if (wall < from) return false;
  for (const auto& b : faults_) {
    if (&b == &a || !b.injected || !b.record.effective_wall_ns ||
        reports::NestedIn(anchor_of_, b.plan.id, a.plan.id))
      continue;
    // b's window from its request on (a fault made in steps, over SSH, bites before its
    // effective time)
    const Nanos t = b.record.requested_wall_ns
                        ? std::min(*b.record.requested_wall_ns, *b.record.effective_wall_ns)
                        : *b.record.effective_wall_ns;
    if (*b.record.effective_wall_ns > start && t <= wall) return false;
  }
  return true;
}

Nanos Runner::AnchorDueWall(const ActiveFault& f) {
  const ActiveFault* a = nullptr;
  for (const auto& g : faults_)
    if (g.plan.id == f.plan.anchor) a = &g;
  if (!a) return 0;
  std::optional<Nanos> at;
  const std::string& kind = f.plan.anchor_event;
  if (!a->injected || !a->record.effective_wall_ns) {
    // Sent ahead and due: a rank's detection may come before the agent's answer does.
    if (kind != reports::kEventFaultDetected && kind != reports::kEventFailoverDone) return 0;
  }
  if (kind == "injected") {
    at = a->record.effective_wall_ns;
  } else if (kind == "reverted") {
    if (a->reverted) at = a->record.reverted_wall_ns;
  } else {
    std::lock_guard lock(progress_.mu);
    for (const auto& e : progress_.anchor_events)
      if (e.kind == kind && InWindow(*a, kind, e.wall_ns, /*fired_ahead_counts=*/true) &&
          (!at || e.wall_ns < *at))
        at = e.wall_ns;
  }
  return at ? *at + f.plan.anchor_delay_ns : 0;
}

// A rank failed and the restart policy allows another attempt: stop the ranks, wait the
// policy's delay, launch again from the last iteration every rank completed, and record the
// restart's cost (failure to the first new sample). -1: the run goes on; else its exit code.
int Runner::RestartJob() {
  const Nanos failure_mono = MonoNowNs();
  auto fail = progress_.FirstFailure();
  Event("job_failed", {{"rank", fail ? fail->first : -1}, {"code", fail ? fail->second : 0}});
  StopRanks().IgnoreError();
  // faults that target processes are gone with the job; network faults stay
  if (scenario_.restart.delay_ns > 0 &&
      WaitUntil([] { return g_interrupted.load(); }, Deadline::After(scenario_.restart.delay_ns),
                10 * kNsPerMs))
    return kExitInterrupted;  // Ctrl-C during the delay
  int64_t resume = progress_.MinIteration(ProgressRanks()) + 1;
  restarts_++;
  Nanos relaunch = MonoNowNs();
  uint64_t samples_before;
  {
    std::lock_guard lock(progress_.mu);
    samples_before = progress_.samples;
    progress_.last_iteration.clear();
  }
  Status st = Launch(restarts_, static_cast<uint64_t>(std::max<int64_t>(resume, 0)));
  if (!st.ok()) {
    std::fprintf(stderr, "\nfaultline run: restart failed: %s\n", st.ToUserString().c_str());
    return kExitInfra;
  }
  bool back = WaitUntil(
      [&] {
        std::lock_guard lock(progress_.mu);
        return progress_.samples > samples_before || g_interrupted;
      },
      Deadline::After(60 * kNsPerSec), 5 * kNsPerMs);
  if (back) {
    restart_cost_ms_ = static_cast<double>(MonoNowNs() - failure_mono) / 1e6;
    Event("job_restarted", {{"attempt", restarts_},
                            {"resume_iteration", resume},
                            {"failure_to_first_sample_ms", *restart_cost_ms_},
                            {"relaunch_ms", static_cast<double>(MonoNowNs() - relaunch) / 1e6}});
  }
  return -1;
}

// An agent that ended on its own (crash, kill -9). A lab that could revert its faults from
// its journal (the local lab: the same machine) did; the faults it held are recorded as
// reverted (verified when the journal's revert was).
std::optional<std::string> Runner::LostAgent() {
  if (auto lost = lab_ ? lab_->PollLostAgent() : std::nullopt) {
    const std::string& host = lost->name;
    lost_hosts_.insert(host);
    for (auto& f : faults_) {
      if (f.agent != host || !f.injected || f.reverted || f.failed) continue;
      f.reverted = true;
      f.record.reverted_wall_ns = WallNowNs();
      f.record.revert_verified = std::find(lost->reverted.begin(), lost->reverted.end(),
                                           f.handle_id) != lost->reverted.end();
      Keep(store_->PutFault(f.record), "fault record " + f.plan.id);
    }
    Event("agent_lost", {{"host", host},
                         {"how", lost->how},
                         {"reverted_from_journal", lost->reverted},
                         {"revert_failed", lost->failed}});
    FL_LOG(kWarn, "coord") << "agent " << host << " ended (" << lost->how << "); reverted "
                           << lost->reverted.size() << " fault(s) from the journal";
    for (const auto& e : lost->failed)
      std::fprintf(stderr, "faultline run: could not revert from the journal: %s\n", e.c_str());
    return host + " (" + lost->how + ")";
  }
  // An agent that dialled in (no process of the lab's) is lost when the control plane has had
  // no session from it for a lease, or a restarted instance claimed its host
  // (control_server.h). Its own lease makes it revert what it holds; calls to it fail fast.
  while (server_) {
    auto lost = server_->TakeLostAgent();
    if (!lost) break;
    if (!lost_hosts_.insert(lost->host).second) continue;  // its process was reported already
    Event("agent_lost", {{"host", lost->host}, {"how", lost->reason}});
    return lost->host + " (" + lost->reason + ")";
  }
  return std::nullopt;
}

void Runner::Teardown(bool keep_run_dir) {
  while (LostAgent()) {
  }
  RevertAll();
  if (server_) {
    pb::CoordinatorMessage m;
    m.mutable_shutdown()->set_reason("run over");
    FanOut(
        agent_hosts_, kFanOutWidth,
        [&](const std::string& host) {
          return server_->Call(host, m, Deadline::After(15 * kNsPerSec)).status();
        },
        Deadline::After(15 * kNsPerSec));
  }
  if (lab_) lab_->StopAgents(Deadline::After(10 * kNsPerSec));
  if (server_) server_->Shutdown();
  if (rendezvous_) rendezvous_->Stop();
  if (lab_ && provisioned_) {
    Status st = lab_->Teardown();
    if (!st.ok())
      std::fprintf(stderr, "faultline run: lab teardown: %s\n", st.ToUserString().c_str());
  }
  // Removed in-process (no rm: nothing is looked up in PATH or the working directory).
  auto remove_tree = [](const std::string& dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec)
      std::fprintf(stderr, "faultline run: cannot remove %s: %s\n", dir.c_str(),
                   ec.message().c_str());
  };
  if (!run_dir_.empty()) {
    unlink((run_dir_ + "/token").c_str());
    if (keep_run_dir)
      Narrate("[teardown] kept the run directory %s (--keep-run-dir)", run_dir_.c_str());
    else
      remove_tree(run_dir_);
  }
}

int Runner::Analyse(const std::string& end_reason, reports::RunStatus infra_status) {
  if (uint64_t bad =
          [&] {
            std::lock_guard lock(progress_.mu);
            return progress_.bad_telemetry;
          }();
      bad > 0) {
    FL_LOG(kWarn, "coord") << bad << " bad telemetry record(s) from agents were dropped";
    Event("telemetry_dropped", {{"source", "coordinator"}, {"count", bad}});
  }
  if (writer_) Keep(writer_->Flush(Deadline::After(30 * kNsPerSec)), "telemetry rows");
  const uint64_t dropped =
      dropped_telemetry_.load() + (writer_ ? writer_->GetStats().dropped_rows : 0);
  auto data = store_->LoadRun(run_id_);
  if (!data.ok()) {
    std::fprintf(stderr, "faultline run: cannot read the run back: %s\n",
                 data.status().ToUserString().c_str());
    return kExitInfra;
  }
  reports::AnalysisInput in;
  in.run_id = run_id_;
  in.samples = data->samples;
  in.events = data->events;
  in.faults = data->faults;
  in.num_ranks = ProgressRanks();
  if (scenario_.job.iterations)
    in.expected_iterations = static_cast<int64_t>(scenario_.job.iterations);
  // Exit codes are cleared at each relaunch: a failure here is one of the last attempt.
  if (auto fail = progress_.FirstFailure()) {
    in.job_failed = true;
    in.job_failure =
        "rank " + std::to_string(fail->first) + " exited with " + std::to_string(fail->second);
  }
  reports::AnalysisOptions ao;
  ao.warmup_iterations = static_cast<int64_t>(scenario_.job.warmup_iterations);
  ao.hang_timeout = scenario_.job.hang_timeout_ns;
  ao.black_box = !scenario_.job.command.empty();
  auto metrics = reports::ComputeMetrics(in, ao);
  if (!metrics.ok()) {
    std::fprintf(stderr, "faultline run: analysis failed: %s\n",
                 metrics.status().ToUserString().c_str());
    return kExitInfra;
  }
  // What a black box could not tell: stored with the run (the report shows it) and printed.
  for (const auto& note : metrics->absent_notes) Event("black_box_note", {{"text", note}});
  if (writer_ && !metrics->absent_notes.empty())
    Keep(writer_->Flush(Deadline::After(30 * kNsPerSec)), "notes");
  std::vector<reports::MetricRecord> rows = metrics->ToRecords();
  rows.push_back({"", std::nullopt, "telemetry_dropped", static_cast<double>(dropped), "rows"});
  for (auto& r : rows) r.run_id = run_id_;
  Keep(store_->ReplaceMetrics(run_id_, rows), "metrics");
  reports::Expectations ex;
  ex.survives = scenario_.expect.survives;
  ex.max_detection_ms = scenario_.expect.max_detection_ms;
  ex.max_recovery_ms = scenario_.expect.max_recovery_ms;
  ex.min_degraded_ratio = scenario_.expect.min_degraded_ratio;
  ex.max_throughput_loss_s = scenario_.expect.max_throughput_loss_s;
  ex.exact_correctness = scenario_.expect.exact_correctness;
  std::vector<reports::VerdictRecord> verdicts = reports::EvaluateExpectations(*metrics, ex);
  // A planned fault that never fired (the job ended first) tested nothing: say so, and fail.
  for (const auto& pf : plan_.faults) {
    bool fired = false;
    for (const auto& f : faults_) fired = fired || (f.plan.id == pf.id && f.injected);
    if (fired) continue;
    reports::VerdictRecord v;
    v.fault_id = pf.id;
    v.expectation = "fault_fired";
    v.passed = false;
    bool skipped = false;
    for (const auto& f : faults_) skipped = skipped || (f.plan.id == pf.id && f.skipped);
    if (skipped)
      v.message = pf.id + " never fired: it was timed during " + pf.anchor + ", which was over " +
                  "before its " + pf.anchor_event + " came";
    else if (!pf.anchor.empty())
      v.message = pf.id + " never fired: no " + pf.anchor_event + " of " + pf.anchor +
                  " was seen before the job ended";
    else
      v.message =
          "the job ended before " + pf.id + " fired: make the job longer or the fault earlier";
    verdicts.push_back(v);
  }
  for (auto& v : verdicts) v.run_id = run_id_;
  if (dropped > 0) {
    reports::VerdictRecord v;
    v.run_id = run_id_;
    v.expectation = "telemetry_complete";
    v.passed = false;
    v.message = std::to_string(dropped) + " telemetry row(s) were dropped: the metrics are " +
                "computed from an incomplete record";
    verdicts.push_back(v);
  }
  Keep(store_->ReplaceVerdicts(run_id_, verdicts), "verdicts");
  bool all_passed = true;
  for (const auto& v : verdicts) all_passed = all_passed && v.passed;
  reports::RunStatus status =
      infra_status != reports::RunStatus::kRunning
          ? infra_status
          : (all_passed ? reports::RunStatus::kPassed : reports::RunStatus::kFailed);
  Keep(store_->FinishRun(run_id_, status, WallNowNs(), end_reason), "the run's final status");

  // The summary is the stored run's, rendered as `faultline report RUN` does (text or JSON):
  // one text summary of a run, whichever command prints it.
  reports::RunData& view = *data;
  view.run.status = status;
  view.run.end_wall_ns = WallNowNs();
  view.run.message = end_reason;
  view.metrics = rows;
  view.verdicts = verdicts;
  for (const auto& note : metrics->absent_notes) {
    reports::EventRecord e;
    e.run_id = run_id_;
    e.kind = "black_box_note";
    e.detail_json = nlohmann::json({{"text", note}}).dump();
    view.events.push_back(std::move(e));
  }
  if (opts_.json) {
    std::printf("%s\n", reports::render::RunJson(view).c_str());
  } else {
    if (tty_) std::fprintf(stderr, "\n");
    std::printf("\n%s", reports::render::RenderTextSummary(view).c_str());
    if (dropped > 0)
      std::printf("telemetry: %llu row(s) dropped\n", static_cast<unsigned long long>(dropped));
    std::printf("results in %s (run %s; faultline report %s --html FILE)\n", opts_.db_path.c_str(),
                run_id_.c_str(), run_id_.c_str());
  }
  {
    std::lock_guard lock(lost_mu_);
    if (!lost_.empty()) {
      std::fprintf(stderr, "faultline run: results incomplete; lost:\n");
      for (const auto& l : lost_) std::fprintf(stderr, "  %s\n", l.c_str());
      return kExitInfra;
    }
  }
  if (infra_status != reports::RunStatus::kRunning) return kExitInfra;
  return all_passed ? kExitPass : kExitExpectation;
}

int Runner::Run() {
  // Absolute: the process layer runs programs only from absolute paths.
  bin_dir_ =
      opts_.bin_dir.empty() ? SelfExeDir() : std::filesystem::absolute(opts_.bin_dir).string();
  if (opts_.dry_run) {
    auto plan = PlanOnly();
    if (!plan.ok()) return BadInput(plan.status());
    std::printf("scenario %s: %d ranks on %d hosts, seed %llu, %zu fault firing(s)\n%s",
                scenario_.name.c_str(), world_, static_cast<int>(hosts_.size()),
                static_cast<unsigned long long>(seed_), plan_.faults.size(), plan->c_str());
    for (const std::string& w : LintTimeouts(scenario_, EffectiveJobEnv(scenario_, LabEnv(hosts_))))
      std::printf("warning: timeouts: %s\n", w.c_str());
    return kExitPass;
  }
  // Bad input must change nothing, not even create the results file: validate first (a
  // replay reads its scenario from an existing results file).
  if (!opts_.replay_of.empty()) {
    auto store = reports::Store::Open(opts_.db_path, {.create = false});
    if (!store.ok()) {
      Status st = store.status();
      return BadInput(st.Prepend("results file " + opts_.db_path));
    }
    store_ = std::move(*store);
  }
  if (Status s = Prepare(); !s.ok()) {
    if (s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound) return BadInput(s);
    std::fprintf(stderr, "faultline run: %s\n", s.ToUserString().c_str());
    return kExitInfra;
  }
  CleanUpDeadRuns(opts_.db_path);
  if (!store_) {
    auto store = reports::Store::Open(opts_.db_path);
    if (!store.ok()) {
      std::fprintf(stderr, "faultline run: cannot open %s: %s\n", opts_.db_path.c_str(),
                   store.status().ToUserString().c_str());
      return kExitInfra;
    }
    store_ = std::move(*store);
  }
  if (Status st = lab_->Preflight(); !st.ok()) {
    std::fprintf(stderr, "faultline run: %s\n", st.ToUserString().c_str());
    return kExitInfra;
  }
  // From here on something exists to undo: Ctrl-C, a kill and a closed terminal all revert,
  // tear down and mark the run aborted.
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  run_id_ = NewRunId();
  lab_name_ = LabNameOf(run_id_);
  run_dir_ = injectors::StateDir() + "/runs/" + run_id_;
  reports::RunRecord rr;
  rr.id = run_id_;
  rr.scenario_name = scenario_.name;
  rr.scenario_text = scenario_.text;
  rr.lab_source = lab_->source();
  rr.lab_text = lab_->text();
  rr.seed = seed_;
  rr.start_wall_ns = WallNowNs();
  rr.coordinator_pid = getpid();
  rr.coordinator_host = CoordinatorHost();
  rr.tags = opts_.tags;
  // The CCL and its tuning as tags, so runs can be selected and compared by them
  // (faultline compare tag:ccl.dead_timeout_ms=900 ...).
  rr.tags["ccl"] = scenario_.job.ccl;
  for (const auto& [k, v] : scenario_.job.ccl_options) rr.tags["ccl." + k] = v;
  // The ranks' environment (the CCL's defaults under job.env), as env.NAME=VALUE.
  for (const auto& [k, v] : EffectiveJobEnv(scenario_, LabEnv(hosts_))) rr.tags["env." + k] = v;
  if (!opts_.replay_of.empty()) rr.tags["replay_of"] = opts_.replay_of;
  // The build's revision (a run from a git clone stores it); FAULTLINE_GIT_REVISION names
  // another (the revision of the user's stack under test, say).
  rr.git_revision = std::string(BuildGitRevision());
  if (const char* rev = std::getenv("FAULTLINE_GIT_REVISION"); rev && *rev) rr.git_revision = rev;
  // A CI system's commit and pipeline, as tags: runs can be traced back to the build that
  // made them (GitLab, GitHub Actions, Jenkins).
  for (const char* k : {"CI_COMMIT_SHA", "GITHUB_SHA", "BUILD_URL", "CI_PIPELINE_URL"})
    if (const char* v = std::getenv(k); v && *v && !rr.tags.count(k))
      rr.tags[k] = std::string(v).substr(0, 512);
  // The cluster, so that runs of many clusters in one shared store can be told apart
  // (--tag cluster=NAME, else $FAULTLINE_CLUSTER, else this host's name).
  if (!rr.tags.count("cluster")) {
    const char* c = std::getenv("FAULTLINE_CLUSTER");
    rr.tags["cluster"] = c != nullptr && *c != '\0' ? std::string(c) : Hostname();
  }
  // A run id is unique in the store; one drawn twice (another coordinator, the same second,
  // the same random part) is drawn again.
  for (int attempt = 0;; ++attempt) {
    Status s = store_->CreateRun(rr);
    if (s.ok()) break;
    if (attempt < 3 && s.code() == Code::kInvalidArgument && store_->GetRun(rr.id).ok()) {
      run_id_ = NewRunId();
      lab_name_ = LabNameOf(run_id_);
      run_dir_ = injectors::StateDir() + "/runs/" + run_id_;
      rr.id = run_id_;
      continue;
    }
    std::fprintf(stderr, "faultline run: %s\n", s.ToUserString().c_str());
    return kExitInfra;
  }
  auto writer = reports::BatchWriter::Open(opts_.db_path);
  if (!writer.ok()) {
    std::fprintf(stderr, "faultline run: %s\n", writer.status().ToUserString().c_str());
    store_
        ->FinishRun(run_id_, reports::RunStatus::kError, WallNowNs(),
                    writer.status().ToUserString())
        .IgnoreError();
    return kExitInfra;
  }
  writer_ = std::move(*writer);
  log::SetContext({run_id_, "", -1});
  Narrate("faultline run %s: scenario %s, seed %llu, %d ranks on %d hosts, %zu fault(s)",
          run_id_.c_str(), scenario_.name.c_str(), static_cast<unsigned long long>(seed_), world_,
          static_cast<int>(hosts_.size()), plan_.faults.size());
  if (GetVerbosity() != Verbosity::kQuiet) std::fputs(DescribePlan(plan_).c_str(), stderr);
  for (const std::string& w : LintTimeouts(scenario_, EffectiveJobEnv(scenario_, LabEnv(hosts_))))
    std::fprintf(stderr, "warning: timeouts: %s\n", w.c_str());

  std::string failure;
  int rc = kExitPass;
  auto phase = [&](const char* what, Status s) {
    if (!s.ok() && failure.empty()) {
      failure = std::string(what) + ": " + s.ToUserString();
      rc = kExitInfra;
    }
    return s.ok();
  };
  // Whatever escapes the phases still goes through the revert and teardown below: the run
  // ends as an error (exit 3) with the lab gone and no fault left applied.
  try {
    provisioned_ = true;  // a half-built lab is torn down as well
    bool ok = phase("provisioning the lab", Provision()) && !g_interrupted;
    if (ok) ok = phase("starting agents", StartAgents()) && !g_interrupted;
    if (ok) ok = phase("launching ranks", Launch(0, 0)) && !g_interrupted;
    if (ok) {
      rc = Timeline();
      if (rc == kExitInfra && failure.empty()) failure = "the timeline failed";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faultline: internal error: %s\n", e.what());
    failure = std::string("internal error: ") + e.what();
    rc = kExitInfra;
  }
  if (g_interrupted) {
    rc = kExitInterrupted;
    failure = "interrupted";
  }
  // Faults are reverted before the ranks stop: a job is never ended under a fault still
  // applied (a revert that needs the job, e.g. a path check, still sees it).
  while (LostAgent()) {
  }
  RevertAll();
  PrintFaultEvents(/*all=*/true);
  stopping_ = true;  // the ranks' exits from here on are ours, not news
  if (server_) StopRanks().IgnoreError();
  PrintFaultEvents(/*all=*/true);
  int exit_code;
  if (rc == kExitPass) {
    exit_code = Analyse("", reports::RunStatus::kRunning);
  } else {
    if (!failure.empty() && rc != kExitInterrupted)
      std::fprintf(stderr, "\nfaultline run: %s\n", failure.c_str());
    reports::RunStatus st =
        rc == kExitInterrupted ? reports::RunStatus::kAborted : reports::RunStatus::kError;
    if (writer_) Keep(writer_->Flush(Deadline::After(10 * kNsPerSec)), "telemetry rows");
    Keep(store_->FinishRun(run_id_, st, WallNowNs(), failure), "the run's final status");
    std::lock_guard lock(lost_mu_);
    for (const auto& l : lost_) std::fprintf(stderr, "faultline run: lost %s\n", l.c_str());
    exit_code = rc;
  }
  Narrate("[teardown] reverting, stopping ranks and agents, releasing %s lab %s",
          std::string(lab_->kind()).c_str(), lab_->name().c_str());
  Teardown(opts_.keep_run_dir && exit_code != kExitPass);
  if (writer_) {
    if (Status st = writer_->Close(Deadline::After(30 * kNsPerSec)); !st.ok()) {
      std::fprintf(stderr, "faultline run: telemetry rows lost at the end: %s\n",
                   st.ToUserString().c_str());
      if (exit_code == kExitPass || exit_code == kExitExpectation) exit_code = kExitInfra;
    }
  }
  return exit_code;
}

}  // namespace

std::vector<std::string> CleanUpDeadRuns(const std::string& db_path) {
  if (!reports::sql::IsPostgresTarget(db_path) && access(db_path.c_str(), F_OK) != 0) return {};
  auto store = reports::Store::Open(db_path);
  if (!store.ok()) return {};
  auto marked = (*store)->MarkDeadRunsAborted(CoordinatorHost());
  if (!marked.ok()) return {};
  for (const auto& id : *marked) {
    std::fprintf(stderr,
                 "faultline: run %s was left running by a coordinator that died: marked aborted\n",
                 id.c_str());
    auto removed = lab::RemoveLeftoverLab(LabNameOf(id));
    if (!removed.ok() || *removed)
      std::fprintf(stderr, "faultline: removed its lab %s%s\n", LabNameOf(id).c_str(),
                   removed.ok() ? "" : (": " + removed.status().ToUserString()).c_str());
    // Its run directory (token, rendezvous store, sockets) went with nobody either.
    std::error_code ec;
    std::filesystem::remove_all(injectors::StateDir() + "/runs/" + id, ec);
    if (ec)
      std::fprintf(stderr, "faultline: could not remove its run directory: %s\n",
                   ec.message().c_str());
  }
  return *marked;
}

StatusOr<std::string> DescribeRunPlan(const RunOptions& options) {
  Runner runner(options);
  return runner.PlanOnly();
}

int RunScenario(const RunOptions& options) {
  Runner runner(options);
  return runner.Run();
}

}  // namespace fl::harness
