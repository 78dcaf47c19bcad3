#include "harness/run/run_context.h"

#include "common/clock.h"
#include "common/log.h"
#include "harness/scenario/job_env.h"
#include "injectors/journal.h"

namespace fl::harness::run {

namespace {

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

}  // namespace

std::map<std::string, std::string> Prepared::JobEnv() const {
  return EffectiveJobEnv(scenario, LabEnv(hosts));
}

RunIds RunIds::Of(const std::string& run_id) {
  RunIds ids;
  ids.run_id = run_id;
  ids.lab_name = "fl" + run_id.substr(run_id.size() - 6);
  ids.run_dir = injectors::StateDir() + "/runs/" + run_id;
  return ids;
}

lab::LabRun RunIds::LabRun(const RunOptions& opts) const {
  lab::LabRun r;
  r.run_id = run_id;
  r.run_dir = run_dir;
  r.lab_name = lab_name;
  r.tls_dir = opts.tls_dir;
  r.no_tls = opts.no_tls;
  return r;
}

void Results::Keep(const Status& st, const std::string& what) {
  if (st.ok()) return;
  FL_LOG(kError, "coord") << "lost " << what << ": " << st.ToUserString();
  std::lock_guard lock(lost_mu_);
  lost_.push_back(what + " (" + st.ToUserString() + ")");
}

void Results::Finish(const std::string& run_id, reports::RunStatus status,
                     const std::string& message) {
  if (!writer) {
    Keep(store->FinishRun(run_id, status, WallNowNs(), message), "the run's final status");
    return;
  }
  Keep(writer->PushRunEnd({run_id, status, WallNowNs(), message}, Deadline::After(5 * kNsPerSec)),
       "the run's final status");
}

void Results::PushEvent(reports::EventRecord e) {
  if (writer && !writer->Push(std::move(e), Deadline::After(kNsPerSec)).ok()) dropped_telemetry++;
}

void Results::PutFault(const reports::FaultRecord& f) {
  Status st = writer ? writer->PushFault(f, Deadline::After(5 * kNsPerSec)) : store->PutFault(f);
  Keep(st, "fault record " + f.fault_id);
}

std::vector<std::string> Results::Lost() const {
  std::lock_guard lock(lost_mu_);
  return lost_;
}

Nanos Session::OffsetOf(const std::string& agent) const {
  auto it = offsets.find(agent);
  return it == offsets.end() ? 0 : it->second.offset_ns;
}

void RunContext::Event(const std::string& kind, nlohmann::json detail, int rank) {
  reports::EventRecord e;
  e.run_id = ids.run_id;
  e.rank = rank;
  e.wall_ns = WallNowNs();
  e.kind = kind;
  e.detail_json = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  results.PushEvent(std::move(e));
}

void RunContext::LabEvents() {
  if (!prepared.lab) return;
  for (auto& ev : prepared.lab->TakeEvents()) {
    reports::EventRecord e;
    e.run_id = ids.run_id;
    e.rank = -1;
    e.wall_ns = ev.wall_ns;
    e.kind = std::move(ev.kind);
    e.detail_json = std::move(ev.detail_json);
    results.PushEvent(std::move(e));
  }
}

}  // namespace fl::harness::run
