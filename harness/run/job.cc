#include "harness/run/job.h"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "common/clock.h"
#include "common/units.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

int ProgressRanks(const Prepared& p) {
  const JobSpec& j = p.scenario.job;
  return !j.command.empty() && j.progress_format == "nccl-tests" ? 1 : p.world;
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
  return !(!j.command.empty() && j.progress_format == "exit");
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
  std::vector<std::string> args = {"--job-id",
                                   job_id,
                                   store_spec.rfind("tcp://", 0) == 0 ? "--store" : "--store-dir",
                                   store_spec,
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
  const std::map<std::string, std::string> env = p.JobEnv();
  for (const auto& [k, v] : env) args.insert(args.end(), {"--env", k + "=" + v});
  if (!j.command.empty()) {
    // A command job: the worker runs the command (after "--") as each rank. The workload's
    // arguments above are unused by it, but harmless; its own are these.
    args = {"--job-id",
            job_id,
            store_spec.rfind("tcp://", 0) == 0 ? "--store" : "--store-dir",
            store_spec,
            "--first-iteration",
            std::to_string(first_iteration),
            "--progress-format",
            j.progress_format};
    if (j.iterations > 0) args.insert(args.end(), {"--iterations", std::to_string(j.iterations)});
    if (j.duration_ns > 0)
      args.insert(args.end(), {"--duration", std::to_string(j.duration_ns) + "ns"});
    // MASTER_ADDR: rank 0's data address (its first NIC), else its host's name.
    const lab::JobHost& first = p.hosts.front();
    in_addr a;
    const bool ipv4 =
        !first.nics.empty() && inet_pton(AF_INET, first.nics.front().c_str(), &a) == 1;
    args.insert(args.end(), {"--master-addr", ipv4 ? first.nics.front() : first.name});
    if (p.lab->kind() == "slurm") args.push_back("--slurm-env");
    for (const auto& [k, v] : env) args.insert(args.end(), {"--env", k + "=" + v});
    args.push_back("--");
    args.insert(args.end(), j.command.begin(), j.command.end());
  }
  nlohmann::json extra = args;
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
  return FirstError(FanOut(
      hosts, kFanOutWidth,
      [&](const std::string& host) {
        return run_.session.server->Call(host, m, Deadline::After(20 * kNsPerSec)).status();
      },
      Deadline::After(20 * kNsPerSec)));
}

int Job::Restart() {
  const Nanos failure_mono = MonoNowNs();
  auto fail = progress_.FirstFailure();
  run_.Event("job_failed", {{"rank", fail ? fail->first : -1}, {"code", fail ? fail->second : 0}});
  StopRanks().IgnoreError();
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
  bool back = WaitUntil(
      [&] {
        std::lock_guard lock(progress_.mu);
        return progress_.samples > samples_before || Interrupted();
      },
      Deadline::After(60 * kNsPerSec), 5 * kNsPerMs);
  if (back) {
    const double restart_cost_ms = static_cast<double>(MonoNowNs() - failure_mono) / 1e6;
    run_.Event("job_restarted",
               {{"attempt", restarts_},
                {"resume_iteration", resume},
                {"failure_to_first_sample_ms", restart_cost_ms},
                {"relaunch_ms", static_cast<double>(MonoNowNs() - relaunch) / 1e6}});
  }
  return -1;
}

}  // namespace fl::harness::run
