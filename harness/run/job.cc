#include "harness/run/job.h"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/clock.h"
#include "common/units.h"
#include "harness/coordinator/fan_out.h"
#include "workloads/progress/formats.h"
#include "workloads/worker_args.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

int ProgressRanks(const Prepared& p) {
  const JobSpec& j = p.scenario.job;
  if (j.command.empty()) return p.world;
  const workloads::progress::ProgressFormat* f =
      workloads::progress::FindProgressFormat(j.progress_format);
  return f != nullptr && f->reporting_ranks == workloads::progress::ReportingRanks::kRankZero
             ? 1
             : p.world;
}

std::vector<int> ProgressRanksOn(const Prepared& p, const std::string& agent) {
  std::vector<int> out;
  int first = 0;
  for (const lab::JobHost& slot : p.hosts) {
    if (slot.name == agent)
      for (int r = first; r < first + slot.ranks && r < ProgressRanks(p); ++r) out.push_back(r);
    first += slot.ranks;
  }
  return out;
}

bool WaitsForWarmup(const JobSpec& j) {
  if (j.command.empty()) return true;
  const workloads::progress::ProgressFormat* f =
      workloads::progress::FindProgressFormat(j.progress_format);
  return f == nullptr || f->has_warmup;
}

bool ToleratesRankLoss(const JobSpec& j) { return j.command.empty() && j.on_rank_loss == "shrink"; }

Status Job::Launch(int attempt, uint64_t first_iteration) {
  {
    std::lock_guard lock(progress_.mu);
    progress_.exit_code.clear();
  }
  const std::string job_id = run_.ids.run_id + "-" + std::to_string(attempt);
  const Prepared& p = run_.prepared;
  const JobSpec& j = p.scenario.job;
  const std::string& store_spec = run_.session.store_spec;
  // The job's part of the worker's command line (workloads/worker_args.h defines it once; the
  // agent adds each rank's part).
  workloads::WorkerJobArgs w;
  w.job_id = job_id;
  w.store = store_spec;
  w.first_iteration = first_iteration;
  w.iterations = j.iterations;
  // The ranks' environment: the CCL's defaults (NCCL_IB_TIMEOUT, ...) under job.env.
  w.env = p.JobEnv();
  if (j.command.empty()) {
    w.ccl = j.ccl;
    w.workload = j.workload;
    w.size_bytes = j.size_bytes;
    w.dtype = j.dtype;
    w.check_every = j.check_every;
    w.collective_timeout_ns = j.collective_timeout_ns;
    w.duration_ns = j.iterations > 0 ? 0 : j.duration_ns;
    w.failover = j.failover;
    w.on_rank_loss = j.on_rank_loss;
    if (j.shrink_grace_ns > 0) w.shrink_grace_ns = j.shrink_grace_ns;
    w.workload_options = j.workload_options;
    w.ccl_options = j.ccl_options;
  } else {
    // A command job: the worker runs the command (after "--") as each rank.
    w.duration_ns = j.duration_ns;
    w.failover = j.failover;
    w.progress_format = j.progress_format;
    // MASTER_ADDR: rank 0's data address (its first NIC), else its host's name.
    const lab::JobHost& first = p.hosts.front();
    in_addr a;
    const bool ipv4 =
        !first.nics.empty() && inet_pton(AF_INET, first.nics.front().c_str(), &a) == 1;
    w.master_addr = ipv4 ? first.nics.front() : first.name;
    w.slurm_env = p.lab->ranks_get_slurm_env();
    w.command = j.command;
  }
  const std::vector<std::string> args = w.ToArgv();
  nlohmann::json extra = args;
  // How the CCL binds NICs: every rank on every rail, or one rail per local rank.
  auto plugin = ccl::FindCclPlugin(j.ccl);
  const ccl::NicBinding binding = plugin.ok() ? (*plugin)->nic_binding : ccl::NicBinding::kAllRails;
  int first_rank = 0;
  std::map<std::string, pb::CoordinatorMessage> launches;
  std::vector<std::string> launch_hosts;
  for (const lab::JobHost& slot : p.hosts) {
    const std::string& host = slot.name;
    const std::vector<std::string>& nics = slot.nics;
    pb::CoordinatorMessage m;
    m.mutable_launch()->set_worker_args_json(extra.dump());
    for (int g = 0; g < slot.ranks; ++g) {
      auto* r = m.mutable_launch()->add_ranks();
      r->set_rank(first_rank + g);
      r->set_world_size(p.world);
      // One NIC per rank (local rank g on rail g), or every NIC in rail order.
      if (binding == ccl::NicBinding::kOnePerRank && !nics.empty())
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
            pb::Ack ack,
            run_.session.server->Call(host, launches.at(host), Deadline::After(30 * kNsPerSec)));
        if (!ack.ok())
          return Status(static_cast<Code>(ack.error_code()),
                        host + ": launch failed: " + ack.error());
        return OkStatus();
      },
      Deadline::After(30 * kNsPerSec))));
  run_.Event("job_launch", {{"attempt", attempt}, {"first_iteration", first_iteration}});
  return OkStatus();
}

Status Job::StopRanks() {
  std::vector<std::string> hosts;
  for (const lab::JobHost& slot : run_.prepared.hosts) hosts.push_back(slot.name);
  pb::CoordinatorMessage m;
  m.mutable_stop()->set_grace_ms(2000);
  std::vector<Status> stopped = FanOut(
      hosts, kFanOutWidth,
      [&](const std::string& host) {
        return run_.session.server->Call(host, m, Deadline::After(20 * kNsPerSec)).status();
      },
      Deadline::After(20 * kNsPerSec));
  std::string failed;
  for (size_t i = 0; i < stopped.size() && i < hosts.size(); ++i)
    if (!stopped[i].ok())
      failed += (failed.empty() ? "" : "; ") + hosts[i] + ": " + stopped[i].message();
  if (failed.empty()) return OkStatus();
  return UnavailableError("the job's ranks did not stop on " + failed);
}

int Job::Restart() {
  // A relaunch whose ranks failed before their first sample: the cost runs from the first
  // failure on.
  const Nanos failure_mono = pending_ ? pending_->failure_mono : MonoNowNs();
  auto fail = progress_.FirstFailure();
  run_.Event("job_failed", {{"rank", fail ? fail->first : -1}, {"code", fail ? fail->second : 0}});
  // A host whose ranks did not stop (or did not answer) would get a second job on top of the
  // first: the run ends here instead, and the clean-up's stop and the lab's teardown try again.
  if (Status stopped = StopRanks(); !stopped.ok()) {
    run_.Event("restart_refused", {{"reason", stopped.message()}});
    std::fprintf(stderr, "\nfaultline run: no restart: %s\n", stopped.ToUserString().c_str());
    return kExitInfra;
  }
  // faults that target processes are gone with the job; network faults stay
  if (run_.prepared.scenario.restart.delay_ns > 0 &&
      WaitUntil([] { return Interrupted(); },
                Deadline::After(run_.prepared.scenario.restart.delay_ns), 10 * kNsPerMs))
    return kExitInterrupted;  // Ctrl-C during the delay
  int64_t resume = progress_.MinIteration(ProgressRanks(run_.prepared)) + 1;
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
  pending_ = PendingRestart{failure_mono, relaunch, samples_before, resume};
  {
    // The hang timeout counts from the relaunch: the new ranks have not completed anything yet.
    std::lock_guard lock(progress_.mu);
    if (progress_.last_sample_mono > 0) progress_.last_sample_mono = MonoNowNs();
  }
  return -1;
}

void Job::PollRestart() {
  if (!pending_) return;
  {
    std::lock_guard lock(progress_.mu);
    if (progress_.samples <= pending_->samples_before) return;
  }
  const Nanos now = MonoNowNs();
  run_.Event(
      "job_restarted",
      {{"attempt", restarts_},
       {"resume_iteration", pending_->resume},
       {"failure_to_first_sample_ms", static_cast<double>(now - pending_->failure_mono) / 1e6},
       {"relaunch_ms", static_cast<double>(now - pending_->relaunch_mono) / 1e6}});
  pending_.reset();
}

}  // namespace fl::harness::run
