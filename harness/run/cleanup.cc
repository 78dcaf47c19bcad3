#include "harness/run/cleanup.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/narrate.h"
#include "harness/coordinator/fan_out.h"
#include "harness/lab/open_lab.h"
#include "harness/run/agents.h"
#include "harness/run/fault_book.h"
#include "harness/run/lab_claim.h"
#include "harness/run/run_context.h"
#include "harness/run/run_record.h"
#include "reports/store/sql.h"

namespace fl::harness {

namespace pb = faultline::v1;

namespace run {

void Teardown(RunContext& run, FaultBook& book, bool keep_run_dir) {
  while (LostAgent(run, book)) {
  }
  book.RevertAll();
  Session& session = run.session;
  lab::Lab* lab = run.prepared.lab.get();
  const std::string& run_dir = run.ids.run_dir;
  if (session.server) {
    pb::CoordinatorMessage m;
    m.mutable_shutdown()->set_reason("run over");
    FanOut(
        session.agent_hosts, kFanOutWidth,
        [&](const std::string& host) {
          return session.server->Call(host, m, Deadline::After(15 * kNsPerSec)).status();
        },
        Deadline::After(15 * kNsPerSec));
  }
  if (lab)
    if (Status st = lab->StopAgents(Deadline::After(10 * kNsPerSec)); !st.ok())
      std::fprintf(stderr, "faultline run: stopping the agents: %s\n", st.ToUserString().c_str());
  if (session.server) session.server->Shutdown();
  if (session.rendezvous) session.rendezvous->Stop();
  if (lab) {
    Status st = lab->Teardown();
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
  if (!run_dir.empty()) {
    unlink((run_dir + "/token").c_str());
    if (keep_run_dir)
      Narrate("[teardown] kept the run directory %s (--keep-run-dir)", run_dir.c_str());
    else
      remove_tree(run_dir);
  }
}

}  // namespace run

std::vector<std::string> CleanUpDeadRuns(const std::string& db_path) {
  if (!reports::sql::IsPostgresTarget(db_path) && access(db_path.c_str(), F_OK) != 0) return {};
  // Whatever it cannot do is said: a dead run left as "running" or its lab left up would
  // otherwise go unnoticed until the next night finds the machine in use.
  auto cannot = [&](const std::string& what, const Status& st) {
    std::fprintf(stderr, "faultline: clean-up of dead runs in %s: cannot %s: %s\n", db_path.c_str(),
                 what.c_str(), st.ToUserString().c_str());
  };
  auto store = reports::Store::Open(db_path);
  if (!store.ok()) {
    cannot("open the results", store.status());
    return {};
  }
  // The claim files of coordinators killed -9 (their locks went with them).
  if (auto stale = run::RemoveStaleClaims(); !stale.ok())
    cannot("remove the claims of dead runs", stale.status());
  auto marked = (*store)->MarkDeadRunsAborted(run::CoordinatorHost());
  if (!marked.ok()) {
    cannot("mark the runs of dead coordinators aborted", marked.status());
    return {};
  }
  for (const auto& id : *marked) {
    std::fprintf(stderr,
                 "faultline: run %s was left running by a coordinator that died: marked aborted\n",
                 id.c_str());
    const run::RunIds ids = run::RunIds::Of(id);
    auto removed = lab::RemoveLeftoverLab(ids.lab_name);
    if (!removed.ok())
      cannot("remove its lab " + ids.lab_name + " (`faultline lab down " + ids.lab_name + "`)",
             removed.status());
    else if (*removed)
      std::fprintf(stderr, "faultline: removed its lab %s\n", ids.lab_name.c_str());
    // Its run directory (token, rendezvous store, sockets) went with nobody either.
    std::error_code ec;
    std::filesystem::remove_all(ids.run_dir, ec);
    if (ec)
      cannot("remove its run directory " + ids.run_dir, ErrnoStatus(ec.value(), ec.message()));
  }
  return *marked;
}

}  // namespace fl::harness
