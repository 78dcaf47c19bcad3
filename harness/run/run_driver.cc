#include "harness/run/run_driver.h"

#include <signal.h>

#include <array>
#include <cstdio>
#include <exception>

#include "common/log.h"
#include "common/narrate.h"
#include "harness/run/agents.h"
#include "harness/run/analyse.h"
#include "harness/run/cleanup.h"
#include "harness/run/console.h"
#include "harness/run/fault_book.h"
#include "harness/run/job.h"
#include "harness/run/lab_claim.h"
#include "harness/run/live_metrics.h"
#include "harness/run/prepare.h"
#include "harness/run/run_context.h"
#include "harness/run/run_record.h"
#include "harness/run/telemetry_sink.h"
#include "harness/run/timeline_loop.h"
#include "harness/scenario/timeout_lint.h"
#include "injectors/journal.h"

namespace fl::harness {

namespace {

using namespace run;  // NOLINT: the phases of this folder

void OnInterrupt(int) { g_interrupted = true; }

int BadInput(const Status& s) {
  std::fprintf(stderr, "faultline run: %s\n", s.ToUserString().c_str());
  return kExitBadInput;
}

int Infra(const Status& s) {
  std::fprintf(stderr, "faultline run: %s\n", s.ToUserString().c_str());
  return kExitInfra;
}

// From the run's creation on, something exists to undo: Ctrl-C, a kill and a closed terminal
// set g_interrupted (every wait looks at it), so that the run reverts, tears down and is
// marked aborted. The scope's end puts the old handlers back.
class SignalScope {
 public:
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalScope() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// The lab and the agents, from provisioning on (a half-built lab is torn down as well): torn
// down at End, or when the scope ends without it (an early return, an exception).
class LabScope {
 public:
  LabScope(RunContext& run, FaultBook& book) : run_(run), book_(book) {}
  ~LabScope() { End(false); }
  LabScope(const LabScope&) = delete;
  LabScope& operator=(const LabScope&) = delete;

  void End(bool keep_run_dir) {
    if (ended_) return;
    ended_ = true;
    Narrate("[teardown] reverting, stopping ranks and agents, releasing %s lab %s",
            std::string(run_.prepared.lab->kind()).c_str(), run_.prepared.lab->name().c_str());
    Teardown(run_, book_, keep_run_dir);
  }

 private:
  RunContext& run_;
  FaultBook& book_;
  bool ended_ = false;
};

// The faults and the job: every fault reverted, then the ranks stopped, at End or when the
// scope ends without it. Faults are reverted before the ranks stop: a job is never ended under
// a fault still applied (a revert that needs the job, e.g. a path check, still sees it).
class JobScope {
 public:
  JobScope(RunContext& run, FaultBook& book, Console& console, Job& job)
      : run_(run), book_(book), console_(console), job_(job) {}
  ~JobScope() { End(); }
  JobScope(const JobScope&) = delete;
  JobScope& operator=(const JobScope&) = delete;

  void End() {
    if (ended_) return;
    ended_ = true;
    while (LostAgent(run_, book_)) {
    }
    book_.RevertAll();
    console_.PrintFaultEvents(book_, /*all=*/true);
    console_.Stopping();
    if (run_.session.server)
      if (Status st = job_.StopRanks(); !st.ok())
        FL_LOG(kWarn, "coord") << st.message() << " (the lab's teardown ends what is left)";
    console_.PrintFaultEvents(book_, /*all=*/true);
  }

 private:
  RunContext& run_;
  FaultBook& book_;
  Console& console_;
  Job& job_;
  bool ended_ = false;
};

// Provisioning, agents, launch and the timeline; the exit code (kExitPass: the job ran to its
// end) and, when not, why (failure).
int Drive(RunContext& run, Progress& progress, FaultBook& book, Console& console, Job& job,
          std::string& failure) {
  int rc = kExitPass;
  auto phase = [&](const char* what, Status s) {
    if (!s.ok() && failure.empty()) {
      failure = std::string(what) + ": " + s.ToUserString();
      rc = kExitInfra;
    }
    return s.ok();
  };
  // Whatever escapes the phases still goes through the revert and teardown of the scopes: the
  // run ends as an error (exit 3) with the lab gone and no fault left applied.
  try {
    bool ok =
        phase("provisioning the lab", Provision(run.prepared, run.ids.LabRun(run.prepared.opts))) &&
        !Interrupted();
    if (ok) ok = phase("starting agents", StartAgents(run, progress)) && !Interrupted();
    if (ok) ok = phase("launching ranks", job.Launch(0, 0)) && !Interrupted();
    if (ok) {
      rc = RunTimeline(run, progress, book, console, job);
      if (rc == kExitInfra && failure.empty()) failure = "the timeline failed";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faultline: internal error: %s\n", e.what());
    failure = std::string("internal error: ") + e.what();
    rc = kExitInfra;
  }
  if (Interrupted()) {
    rc = kExitInterrupted;
    failure = "interrupted";
  }
  return rc;
}

void PrintLint(FILE* out, const Prepared& p) {
  for (const std::string& w : LintTimeouts(p.scenario, p.JobEnv()))
    std::fprintf(out, "warning: timeouts: %s\n", w.c_str());
}

// Opens the store only when replaying (the scenario is read from it): bad input must change
// nothing, not even create the results file.
StatusOr<std::unique_ptr<reports::Store>> OpenReplayStore(const RunOptions& opts) {
  if (opts.replay_of.empty()) return std::unique_ptr<reports::Store>();
  auto store = reports::Store::Open(opts.db_path, {.create = false});
  if (!store.ok()) {
    Status st = store.status();
    return st.Prepend("results file " + opts.db_path);
  }
  return std::move(*store);
}

int DryRun(const RunOptions& opts) {
  auto store = OpenReplayStore(opts);
  if (!store.ok()) return BadInput(store.status());
  auto prepared = Prepare(opts, store->get());
  if (!prepared.ok()) return BadInput(prepared.status());
  const Prepared& p = *prepared;
  std::printf("scenario %s: %d ranks on %d hosts, seed %llu, %zu fault firing(s)\n%s",
              p.scenario.name.c_str(), p.world, static_cast<int>(p.hosts.size()),
              static_cast<unsigned long long>(p.seed), p.plan.faults.size(),
              DescribePlan(p.plan).c_str());
  PrintLint(stdout, p);
  return kExitPass;
}

int Run(const RunOptions& opts) {
  if (opts.dry_run) return DryRun(opts);
  RunContext run;
  {
    auto store = OpenReplayStore(opts);
    if (!store.ok()) return BadInput(store.status());
    run.results.store = std::move(*store);
  }
  {
    auto prepared = Prepare(opts, run.results.store.get());
    if (!prepared.ok()) {
      const Status& s = prepared.status();
      if (s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound) return BadInput(s);
      return Infra(s);
    }
    run.prepared = std::move(*prepared);
  }
  CleanUpDeadRuns(opts.db_path);
  if (!run.results.store) {
    auto store = reports::Store::Open(opts.db_path);
    if (!store.ok()) {
      std::fprintf(stderr, "faultline run: cannot open %s: %s\n", opts.db_path.c_str(),
                   store.status().ToUserString().c_str());
      return kExitInfra;
    }
    run.results.store = std::move(*store);
  }
  if (Status st = run.prepared.lab->Preflight(); !st.ok()) return Infra(st);
  if (!opts.on_lab.empty())
    if (Status st = run.prepared.lab->UseRunningLab(opts.on_lab); !st.ok()) {
      if (st.code() == Code::kNotFound) return BadInput(st);
      return Infra(st);
    }
  // Before the run is recorded or anything provisioned: a lab another run holds refuses this
  // one, naming the holder.
  std::unique_ptr<LabClaim> claim;
  if (run.prepared.lab->exclusive()) {
    auto taken = LabClaim::Take(std::string(run.prepared.lab->kind()), run.prepared.lab->name());
    if (!taken.ok()) return Infra(taken.status());
    claim = std::move(*taken);
  }

  // Listening before the run is recorded: an address that cannot be bound fails it cleanly.
  std::unique_ptr<LiveMetrics> live;
  if (!opts.metrics_listen.empty()) {
    auto m = LiveMetrics::Start(opts.metrics_listen);
    if (!m.ok()) {
      Status st = m.status();
      st = st.Prepend("--metrics-listen");
      if (st.code() == Code::kInvalidArgument) return BadInput(st);
      return Infra(st);
    }
    live = std::move(*m);
    Narrate("[metrics] live metrics at http://%s/metrics", opts.metrics_listen.c_str());
  }

  SignalScope signals;
  {
    auto ids = CreateRun(*run.results.store, NewRunRecord(run.prepared));
    if (!ids.ok()) return Infra(ids.status());
    run.ids = std::move(*ids);
  }
  if (claim)
    if (Status st = claim->SetRun(run.ids.run_id); !st.ok())
      // Only a refused run's message reads it; the claim itself (the lock) holds.
      FL_LOG(kWarn, "coord") << st.message();
  {
    // While the store does not take writes, rows wait in the run's spool (docs/store.md).
    reports::BatchWriter::Options wo;
    wo.run_id = run.ids.run_id;
    wo.spool_path = injectors::StateDir() + "/spool/" + run.ids.run_id + ".spool";
    auto writer = reports::BatchWriter::Open(opts.db_path, wo);
    if (!writer.ok()) {
      std::fprintf(stderr, "faultline run: %s\n", writer.status().ToUserString().c_str());
      // The run is failing with exit 3 for this very reason, said above; a store that cannot
      // take its final status either leaves it "running", which the next run's clean-up marks.
      Status finished = run.results.store->FinishRun(run.ids.run_id, reports::RunStatus::kError,
                                                     WallNowNs(), writer.status().ToUserString());
      if (!finished.ok())
        FL_LOG(kWarn, "coord") << "run " << run.ids.run_id
                               << " stays 'running': " << finished.message();
      return kExitInfra;
    }
    run.results.writer = std::move(*writer);
  }
  const Prepared& p = run.prepared;
  log::SetContext({run.ids.run_id, "", -1});
  Narrate("faultline run %s: scenario %s, seed %llu, %d ranks on %d hosts, %zu fault(s)",
          run.ids.run_id.c_str(), p.scenario.name.c_str(), static_cast<unsigned long long>(p.seed),
          p.world, static_cast<int>(p.hosts.size()), p.plan.faults.size());
  if (GetVerbosity() != Verbosity::kQuiet) std::fputs(DescribePlan(p.plan).c_str(), stderr);
  PrintLint(stderr, p);

  Progress progress;
  // The page shows the job from here on, and stops reading it before progress goes.
  struct LiveScope {
    LiveMetrics* live;
    ~LiveScope() {
      if (live) live->Detach();
    }
  } live_scope{live.get()};
  if (live) live->Attach(run.ids.run_id, p.scenario.name, p.world, &progress);
  Console console(run, progress);
  FaultBook book(run, progress,
                 [&console](const std::string& line, Tone tone) { console.Say(line, tone); });
  Job job(run, progress);
  int exit_code;
  {
    LabScope lab(run, book);
    {
      JobScope job_scope(run, book, console, job);
      std::string failure;
      const int rc = Drive(run, progress, book, console, job, failure);
      job_scope.End();
      exit_code = rc == kExitPass ? Analyse(run, progress, book, console)
                                  : FinishUnanalysed(run, rc, failure);
    }
    lab.End(opts.keep_run_dir && exit_code != kExitPass);
  }
  // A store that is out now has had its chance (Analyse waits for it): a short last one.
  const Nanos close_within =
      run.results.writer->GetStats().spool_pending > 0 ? 5 * kNsPerSec : 30 * kNsPerSec;
  if (Status st = run.results.writer->Close(Deadline::After(close_within)); !st.ok()) {
    const bool spooled = run.results.writer->GetStats().spool_pending > 0;
    std::fprintf(
        stderr, "faultline run: %s: %s\n",
        spooled ? "the results are not all in the store" : "telemetry rows lost at the end",
        st.ToUserString().c_str());
    if (exit_code == kExitPass || exit_code == kExitExpectation) exit_code = kExitInfra;
  }
  return exit_code;
}

}  // namespace

StatusOr<std::string> DescribeRunPlan(const RunOptions& options) {
  FL_ASSIGN_OR_RETURN(std::unique_ptr<reports::Store> store, OpenReplayStore(options));
  FL_ASSIGN_OR_RETURN(Prepared p, Prepare(options, store.get()));
  return DescribePlan(p.plan);
}

int RunScenario(const RunOptions& options) { return Run(options); }

}  // namespace fl::harness
