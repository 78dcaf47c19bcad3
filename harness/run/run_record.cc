#include "harness/run/run_record.h"

#include <unistd.h>

#include <cstdlib>

#include "common/build_info.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/ids.h"

namespace fl::harness::run {

namespace {

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

std::string CoordinatorHost() {
  std::string id;
  if (auto text = ReadFile("/etc/machine-id"); text.ok()) id = text->substr(0, 12);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id.empty() ? Hostname() : Hostname() + "#" + id;
}

reports::RunRecord NewRunRecord(const Prepared& p) {
  reports::RunRecord rr;
  rr.scenario_name = p.scenario.name;
  rr.scenario_text = p.scenario.text;
  rr.lab_source = p.lab->source();
  rr.lab_text = p.lab->text();
  rr.seed = p.seed;
  rr.start_wall_ns = WallNowNs();
  rr.coordinator_pid = getpid();
  rr.coordinator_host = CoordinatorHost();
  rr.tags = p.opts.tags;
  // The CCL and its tuning as tags, so runs can be selected and compared by them
  // (faultline compare tag:ccl.dead_timeout_ms=900 ...).
  rr.tags["ccl"] = p.scenario.job.ccl;
  for (const auto& [k, v] : p.scenario.job.ccl_options) rr.tags["ccl." + k] = v;
  // The ranks' environment (the CCL's defaults under job.env), as env.NAME=VALUE.
  for (const auto& [k, v] : p.JobEnv()) rr.tags["env." + k] = v;
  if (!p.opts.replay_of.empty()) rr.tags["replay_of"] = p.opts.replay_of;
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
  return rr;
}

StatusOr<RunIds> CreateRun(reports::Store& store, reports::RunRecord rr) {
  for (int attempt = 0;; ++attempt) {
    rr.id = NewRunId();
    Status s = store.CreateRun(rr);
    if (s.ok()) return RunIds::Of(rr.id);
    if (attempt < 3 && s.code() == Code::kInvalidArgument && store.GetRun(rr.id).ok()) continue;
    return s;
  }
}

}  // namespace fl::harness::run
