// What the phases of one `faultline run` share (harness/run/): the prepared scenario and lab,
// the run's ids, where its results go, and the control-plane session with the agents.
//
// Ownership: run_driver.cc owns one RunContext for the run; every phase gets it by reference
// and none keeps it past the run.
// Thread-safety: Results (Keep, PushEvent) and RunContext::Event may be called from any thread
// (the control server's telemetry handler, FanOut's threads); the server's own calls are
// thread-safe (control_server.h); everything else only from the driver's thread.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ccl_under_test/api/tcp_store.h"
#include "common/clock.h"
#include "common/status.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "harness/lab/lab.h"
#include "harness/run/run_options.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"
#include "reports/store/batch_writer.h"
#include "reports/store/store.h"

namespace fl::harness::run {

// Exit codes (run_driver.h).
inline constexpr int kExitPass = 0, kExitExpectation = 1, kExitBadInput = 2, kExitInfra = 3,
                     kExitInterrupted = 130;

// Set by SIGINT, SIGTERM and SIGHUP once run_driver.cc installed its handler; every wait of
// the run looks at it.
inline std::atomic<bool> g_interrupted{false};
inline bool Interrupted() { return g_interrupted.load(); }

// The scenario on its lab, checked and planned (prepare.h). Changed once more by Provision
// (the lab's real hosts, and the plan drawn again on their names); read-only afterwards.
struct Prepared {
  RunOptions opts;
  Scenario scenario;
  std::unique_ptr<lab::Lab> lab;
  std::vector<lab::JobHost> hosts;  // with job.ranks_per_host applied
  Plan plan;
  uint64_t seed = 0;
  int world = 0;  // ranks over all hosts

  // The ranks' environment: the CCL's defaults (NCCL_IB_TIMEOUT, ...) under job.env.
  std::map<std::string, std::string> JobEnv() const;
};

// The names one run's id gives (the id may be drawn again: run_record.h).
struct RunIds {
  std::string run_id;
  std::string lab_name;  // "fl" + the id's tail: a LocalLab's objects
  std::string run_dir;   // StateDir()/runs/<id>: token, rendezvous folder, sockets

  static RunIds Of(const std::string& run_id);
  lab::LabRun LabRun(const RunOptions& opts) const;
};

// Where the run's results go. Nothing is lost silently: telemetry rows the writer would not
// take (queue full past its deadline) are counted, and every other write of the run's results
// that failed is listed (Keep); either fails the run (exit 3) with what was lost.
class Results {
 public:
  std::unique_ptr<reports::Store> store;
  std::unique_ptr<reports::BatchWriter> writer;  // from CreateRun on
  std::atomic<uint64_t> dropped_telemetry{0};

  // A write of the run's results: logged and listed when it failed.
  void Keep(const Status& st, const std::string& what);
  // An event row, through the writer (counted as dropped when it would not take it).
  void PushEvent(reports::EventRecord e);
  // A fault's row, through the writer in order with the rest (no database write on the fault
  // path); straight to the store before the writer exists. A failure is kept (Keep).
  void PutFault(const reports::FaultRecord& f);
  // The run's final status: through the writer when there is one (in order after its rows,
  // and spooled with them while the store is out), else straight to the store.
  void Finish(const std::string& run_id, reports::RunStatus status, const std::string& message);
  std::vector<std::string> Lost() const;

 private:
  mutable std::mutex lost_mu_;
  std::vector<std::string> lost_;
};

// The control plane of the run: the server the agents dial, the ranks' rendezvous, and what
// was learnt of each agent.
struct Session {
  std::optional<TlsMaterial> tls;  // the coordinator's, when the lab speaks mutual TLS
  std::unique_ptr<ControlServer> server;
  std::unique_ptr<ccl::TcpStoreServer> rendezvous;  // when the ranks meet over TCP
  std::string store_spec;                           // what the workers get as --store
  std::vector<std::string> agent_hosts;
  std::map<std::string, ClockOffset> offsets;  // written once, before the job is launched
  std::set<std::string> lost_hosts;            // agents reported lost (once each)

  // The agent's clock minus the coordinator's (measured at registration; 0 if not measured).
  Nanos OffsetOf(const std::string& agent) const;
};

struct RunContext {
  Prepared prepared;
  RunIds ids;
  Results results;
  Session session;

  // An event of the coordinator's own (job_launch, fault_skipped, ...) into the events table.
  void Event(const std::string& kind, nlohmann::json detail, int rank = -1);
  // The lab's own events (Lab::TakeEvents: a routed lab's route changes) into the events table.
  void LabEvents();
};

}  // namespace fl::harness::run
