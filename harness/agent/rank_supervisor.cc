#include "harness/agent/rank_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/json_util.h"
#include "common/log.h"
#include "harness/agent/telemetry_line.h"
#include "injectors/container_runtime.h"
#include "injectors/sys.h"
#include "workloads/worker_args.h"

namespace fl::harness {

namespace pb = faultline::v1;

namespace {

// The last lines of a rank's log (at most max_bytes, from a line start when cut); "" when
// there is none. The log can be large (a CCL that warns per retry): only the end is read.
std::string LogTail(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const off_t size = lseek(fd, 0, SEEK_END);
  const off_t from = size > static_cast<off_t>(max_bytes) ? size - max_bytes : 0;
  std::string out(static_cast<size_t>(size > 0 ? size - from : 0), '\0');
  const ssize_t n = out.empty() ? 0 : pread(fd, out.data(), out.size(), from);
  close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (from > 0) {
    const size_t nl = out.find('\n');
    out.erase(0, nl == std::string::npos ? 0 : nl + 1);
  }
  return out;
}

}  // namespace

RankSupervisor::RankSupervisor(RankSupervisorOptions options) : opts_(std::move(options)) {}

RankSupervisor::~RankSupervisor() {
  if (Status st = StopRanks(0); st.ok()) return;
  // Ranks that would not die keep their reaper threads; those outlive this object, so the
  // ranks they watch are let go of, not freed under them. The site's Close, the next agent's
  // KillLeftovers and the lab's teardown try their cgroups again.
  std::lock_guard lock(mu_);
  for (auto& r : ranks_) {
    if (r->reaper.joinable()) r->reaper.detach();
    (void)r.release();  // the detached reaper still reads it
  }
  ranks_.clear();
}

void RankSupervisor::KillLeftovers() {
  if (!opts_.site) return;
  for (const auto& r : opts_.site->KillLeftoverRanks())
    FL_LOG(kWarn, "agent") << "killed rank " << r << " left by an earlier agent of this host";
}

void RankSupervisor::Close() {
  if (opts_.site) opts_.site->Close();
}

uint32_t RankSupervisor::running() {
  std::lock_guard lock(mu_);
  uint32_t n = 0;
  for (auto& r : ranks_) n += !r->exited;
  return n;
}

Status RankSupervisor::Launch(const pb::LaunchRanks& l) {
  if (!opts_.policy->allow_ranks)
    return FailedPreconditionError("policy: this agent does not start ranks");
  lab::Site* site = opts_.site;
  if (!site) return FailedPreconditionError("agent has no site to start ranks in");
  FL_ASSIGN_OR_RETURN(nlohmann::json extra_json,
                      ParseJson(l.worker_args_json(), "launch: worker_args_json"));
  FL_ASSIGN_OR_RETURN(std::vector<std::string> extra,
                      JsonAs<std::vector<std::string>>(extra_json, "launch: worker_args_json"));
  for (const auto& spec : l.ranks()) {
    if (spec.world_size() < 1 || spec.world_size() > kMaxTelemetryRank + 1 || spec.rank() < 0 ||
        spec.rank() >= spec.world_size())
      return InvalidArgumentError("launch: rank " + std::to_string(spec.rank()) +
                                  " of world size " + std::to_string(spec.world_size()) +
                                  " is out of range");
    for (const auto& n : spec.nics())
      if (!injectors::IsSafeName(n))
        return InvalidArgumentError("launch: NIC name is not a safe name");
  }
  // Bounded by the policy before anything starts.
  FL_RETURN_IF_ERROR(CheckLaunch(*opts_.policy, l, extra, site->WorkerDirs(), site->disposable()));
  std::lock_guard lock(mu_);
  int local_index = 0;
  for (const auto& spec : l.ranks()) {
    // The rank's part of the worker's command line (workloads/worker_args.h), then the
    // coordinator's: a command job's argv ends it, after "--".
    workloads::WorkerRankArgs ra;
    ra.rank = spec.rank();
    ra.world_size = spec.world_size();
    ra.nics.assign(spec.nics().begin(), spec.nics().end());
    ra.telemetry = opts_.telemetry_socket;
    // The rank's place on this host (also its container slot: with a command job's
    // ranks_per_host below the lab's, rank % slots would name another host's slot), and
    // where a command job's output is kept.
    const int local = local_index++;
    ra.local_rank = local;
    ra.local_world_size = l.ranks_size();
    if (!opts_.run_dir.empty()) ra.log_dir = opts_.run_dir + "/ranks";
    // A TCP rendezvous store is authenticated with the control plane's token.
    const auto worker_end = std::find(extra.begin(), extra.end(), "--");
    if (std::find(extra.begin(), worker_end, "--store") != worker_end && !opts_.token_file.empty())
      ra.store_token_file = opts_.token_file;
    std::vector<std::string> argv = {opts_.worker_binary};
    for (auto& a : ra.ToArgv()) argv.push_back(std::move(a));
    argv.insert(argv.end(), extra.begin(), extra.end());
    FL_ASSIGN_OR_RETURN(injectors::ContainerInfo info, site->StartRank(local, argv));
    auto r = std::make_unique<Rank>();
    r->rank = spec.rank();
    r->container = info;
    Rank* raw = r.get();
    r->reaper = std::thread([this, raw] { Reap(raw); });
    ranks_.push_back(std::move(r));
    FL_LOG(kInfo, "agent") << "rank " << spec.rank() << " started in container " << info.name
                           << " (pid " << info.init_pid << ")";
  }
  return OkStatus();
}

void RankSupervisor::Reap(Rank* r) {
  int status = 0;
  while (waitpid(r->container.init_pid, &status, 0) < 0 && errno == EINTR) {
  }
  r->exited = true;
  nlohmann::json d = {{"container", r->container.name}};
  if (WIFEXITED(status)) d["code"] = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) d["signal"] = WTERMSIG(status);
  // A rank that ended badly brings the end of its log (rank-N.log, written by the worker
  // under --log-dir): the coordinator shows it, the store keeps it after the run directory
  // is gone.
  const bool bad = (WIFEXITED(status) && WEXITSTATUS(status) != 0) || WIFSIGNALED(status);
  if (bad && !opts_.run_dir.empty()) {
    std::string tail = LogTail(opts_.run_dir + "/ranks/rank-" + std::to_string(r->rank) + ".log",
                               kRankLogTailBytes);
    if (!tail.empty()) d["log_tail"] = std::move(tail);
  }
  if (opts_.on_event) opts_.on_event(r->rank, "rank_exit", d);
}

Status RankSupervisor::StopRanks(Nanos grace) {
  std::vector<std::unique_ptr<Rank>> ranks;
  {
    std::lock_guard lock(mu_);
    ranks.swap(ranks_);
  }
  if (ranks.empty()) return OkStatus();
  for (auto& r : ranks)
    if (!r->exited) kill(r->container.init_pid, SIGTERM);
  Deadline d = Deadline::After(grace);
  WaitUntil(
      [&] {
        for (auto& r : ranks)
          if (!r->exited) return false;
        return true;
      },
      d, 5 * kNsPerMs);
  injectors::LocalContainerRuntime rt;
  std::vector<std::unique_ptr<Rank>> alive;
  std::string why;
  for (auto& r : ranks) {
    Status k = rt.Kill(r->container.cgroup_path, Deadline::After(5 * kNsPerSec));
    // An empty cgroup is not enough: a rank moved out of it (by hand, or by a tool of the
    // job's own) escapes cgroup.kill. Its reaper says whether it is gone.
    if (k.ok() &&
        !WaitUntil([&] { return r->exited.load(); }, Deadline::After(2 * kNsPerSec), 5 * kNsPerMs))
      k = UnavailableError("pid " + std::to_string(r->container.init_pid) + " left container " +
                           r->container.name + " and is still running");
    if (!k.ok() && !r->exited) {
      // Still running: its reaper cannot be joined. The rank stays ours (a later stop tries
      // again) and the caller hears of it: a second job must not land on top of it.
      FL_LOG(kError, "agent") << "cannot kill container " << r->container.name << ": "
                              << k.message();
      why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(r->rank) + ": " + k.message());
      alive.push_back(std::move(r));
      continue;
    }
    if (r->reaper.joinable()) r->reaper.join();
    // A cgroup left behind holds no process (or the kill above said so); the site's Close
    // and the next agent's start (KillLeftovers) remove it.
    if (Status rm = rt.Remove(r->container.cgroup_path); !rm.ok())
      FL_LOG(kWarn, "agent") << "cannot remove container " << r->container.name << ": "
                             << rm.message();
  }
  FL_LOG(kInfo, "agent") << "stopped " << ranks.size() - alive.size() << " rank(s)";
  if (alive.empty()) return OkStatus();
  const size_t n = alive.size();
  {
    std::lock_guard lock(mu_);
    for (auto& r : alive) ranks_.push_back(std::move(r));
  }
  return UnavailableError(std::to_string(n) + " rank(s) did not stop: " + why);
}

}  // namespace fl::harness
