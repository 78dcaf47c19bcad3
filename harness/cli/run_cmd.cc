// `faultline run`, `faultline replay`, `faultline runs`.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <set>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/narrate.h"
#include "common/units.h"
#include "common/yaml_util.h"
#include "harness/cli/cli.h"
#include "harness/run/cleanup.h"
#include "harness/run/run_driver.h"
#include "reports/render/json_view.h"
#include "reports/store/store.h"

namespace fl::harness {

// --lease bounds (docs/control_plane.md).
constexpr double kMinLeaseS = 0.1, kMaxLeaseS = 300;

void AddRunCommands(CLI::App& app, int* exit_code) {
  struct Args {
    std::string scenario, db, run_id, policy, tls_dir, lab, on_lab, metrics_listen;
    bool no_tls = false;
    uint64_t seed = 0;
    std::vector<std::string> tags, ccl_options;
    std::string ccl;
    bool json = false;
    bool dry_run = false;
    bool keep_run_dir = false;
    bool quiet = false, verbose = false;
    double lease_s = 3;
    size_t limit = 20;
  };
  auto args = std::make_shared<Args>();

  auto* run = app.add_subcommand("run", HelpText(R"(
run a resilience scenario on a lab (the scenario's, or --lab FILE): the local lab of
network namespaces, an inventory of real hosts whose agents dial in, or a Slurm
allocation. Provision or attach, start or await the agents, launch the job, inject the
scenario's faults on their timeline, measure, judge, revert and tear down.
Exit codes: 0 passed, 1 an expectation failed, 2 bad input, 3 infrastructure error (the
lab, an agent, or results the store did not take in time: those wait in
STATE_DIR/spool/RUN.spool, the message names it, for `faultline store replay FILE`))"));
  run->add_option("scenario", args->scenario, "scenario file (configs/scenarios/*.yaml)")
      ->required();
  auto add_common = [&](CLI::App* c) {
    AddDbOption(c, &args->db);
    c->add_option("--lab", args->lab,
                  "run on this lab instead of the scenario's: a topology (configs/labs/*.yaml,\n"
                  "the local lab) or an inventory of real hosts (configs/inventories/*.yaml;\n"
                  "launcher: slurm starts the agents with srun). Stored with the run; a replay\n"
                  "without --lab reuses the stored lab")
        ->check(CLI::ExistingFile);
    c->add_option("--on-lab", args->on_lab,
                  "run on the local lab NAME that is already up (`faultline lab up`, or the one a\n"
                  "sweep keeps up) instead of building one: it must come from the same topology,\n"
                  "is checked to be as it was built before the run, and stays up after it");
    c->add_option("--metrics-listen", args->metrics_listen,
                  "serve the run's live metrics for Prometheus on HOST:PORT while it runs\n"
                  "(GET /metrics: iterations, wrong results, failed ranks; docs/detectors.md)");
    c->add_option("--seed", args->seed,
                  "seed for target draws and jitter (default: the scenario's)");
    c->add_option("--tag", args->tags, "k=v tag stored with the run (repeatable), e.g. fw=22.39");
    std::string ccl_names;
    for (const auto& n : ccl::CclNames()) ccl_names += (ccl_names.empty() ? "" : " | ") + n;
    c->add_option("--ccl", args->ccl,
                  "run the job on this CCL instead of the scenario's: " + ccl_names);
    c->add_option("--ccl-option", args->ccl_options,
                  "the CCL's option key=value (repeatable), checked against its schema\n"
                  "(`faultline ccls` lists types, ranges and defaults): " +
                      ccl::CclOptionSummary() + ".\nStored as tags ccl=NAME and ccl.KEY=VALUE");
    c->add_flag("--json", args->json, "print the summary as JSON");
    c->add_flag("--dry-run", args->dry_run,
                "validate and print the seeded fault plan; create nothing");
    c->add_option("--policy", args->policy,
                  "agent policy for the agents the coordinator starts itself (local lab, Slurm;\n"
                  "default configs/policies/local_lab.yaml on the local lab). Agents of an\n"
                  "inventory read their own, on their host");
    c->add_option("--lease", args->lease_s,
                  "fault lease in seconds: agents revert when the coordinator is silent this long")
        ->capture_default_str();
    c->add_option("--tls-dir", args->tls_dir,
                  "labs of real hosts: the lab's certificates (faultline certs) for mutual TLS\n"
                  "with the agents (default: tls/ beside the lab's token file)");
    c->add_flag("--no-tls", args->no_tls, "labs of real hosts: plaintext with the token only");
    c->add_flag("--keep-run-dir", args->keep_run_dir,
                "keep a failed run's directory (/run/faultline/runs/ID) for inspection");
    auto* q =
        c->add_flag("-q,--quiet", args->quiet,
                    "print only the summary (and errors): no phases, fault lines or progress");
    c->add_flag("-v,--verbose", args->verbose,
                "also the coordinator's and agents' log lines at info (FAULTLINE_LOG=info)")
        ->excludes(q);
  };
  add_common(run);
  // run and replay share every option; replay takes the scenario and seed from the store.
  auto run_with = [args, exit_code](CLI::App* cmd, bool replay) {
    if (args->verbose) {
      setenv("FAULTLINE_LOG", "info", /*overwrite=*/0);  // the agents it starts inherit it
      // A bad FAULTLINE_LOG was already reported at start-up and keeps the levels it had.
      log::Configure(std::getenv("FAULTLINE_LOG")).IgnoreError();
      SetVerbosity(Verbosity::kVerbose);
    }
    if (args->quiet) SetVerbosity(Verbosity::kQuiet);
    QuietLogsUnlessAsked();
    // Numbers from the command line are bounded before anything is read, created or stored:
    // a lease of 0 would lapse at once (every fault reverted as applied), one of hours would
    // leave faults behind a dead coordinator for hours. The agents cap it again (their policy).
    if (std::string p = BoundsProblem("--lease (seconds)", args->lease_s, kMinLeaseS, kMaxLeaseS);
        !p.empty()) {
      std::fprintf(stderr, "faultline %s: %s\n", replay ? "replay" : "run", p.c_str());
      *exit_code = 2;
      return;
    }
    RunOptions o;
    if (replay) {
      o.replay_of = args->run_id;
      o.scenario_path = "replay of " + args->run_id;
    } else {
      o.scenario_path = args->scenario;
    }
    o.db_path = args->db;
    if (cmd->count("--seed")) o.seed = args->seed;
    if (!ParseKeyValues(replay ? "replay" : "run", "--tag", args->tags, &o.tags) ||
        !ParseKeyValues(replay ? "replay" : "run", "--ccl-option", args->ccl_options,
                        &o.ccl_options)) {
      *exit_code = 2;
      return;
    }
    o.ccl = args->ccl;
    o.json = args->json;
    o.dry_run = args->dry_run;
    o.keep_run_dir = args->keep_run_dir;
    o.policy_path = args->policy;
    o.lease_ns = static_cast<Nanos>(args->lease_s * 1e9);
    o.tls_dir = args->tls_dir;
    o.lab_file = args->lab;
    o.on_lab = args->on_lab;
    o.metrics_listen = args->metrics_listen;
    o.no_tls = args->no_tls;
    *exit_code = RunScenario(o);
  };
  run->callback([run_with, run] { run_with(run, false); });

  auto* replay = app.add_subcommand(
      "replay", "rerun a stored run's scenario with its seed (same targets, same times)");
  replay->add_option("run_id", args->run_id, "run id (see faultline runs)")->required();
  add_common(replay);
  replay->callback([run_with, replay] { run_with(replay, true); });

  auto* runs = app.add_subcommand("runs", "list the runs in the results database, newest first");
  AddDbOption(runs, &args->db);
  runs->add_option("--limit", args->limit, "how many")->capture_default_str();
  runs->add_flag("--json", args->json, "print the runs as a JSON array");
  runs->callback([args, exit_code] {
    CleanUpDeadRuns(args->db);
    auto store = reports::Store::Open(args->db, {.create = false});
    if (!store.ok()) {
      std::fprintf(stderr, "faultline runs: %s\n", store.status().ToUserString().c_str());
      *exit_code = 2;
      return;
    }
    if (std::string p = BoundsProblem<size_t>("--limit", args->limit, 1, 100000); !p.empty()) {
      std::fprintf(stderr, "faultline runs: %s\n", p.c_str());
      *exit_code = 2;
      return;
    }
    reports::RunFilter f;
    f.limit = args->limit;
    auto list = (*store)->ListRuns(f);
    if (!list.ok()) {
      std::fprintf(stderr, "faultline runs: %s\n", list.status().ToUserString().c_str());
      *exit_code = 3;
      return;
    }
    if (args->json) {
      std::printf("%s\n", reports::render::RunListJson(*list).c_str());
      *exit_code = 0;
      return;
    }
    std::printf("%-24s %-20s %-8s %-24s %8s  %s\n", "run", "scenario", "status", "started", "seed",
                "tags");
    for (const auto& r : *list) {
      std::string tags;
      for (const auto& [k, v] : r.tags) tags += (tags.empty() ? "" : ",") + k + "=" + v;
      std::printf("%-24s %-20s %-8s %-24s %8llu  %s\n", r.id.c_str(), r.scenario_name.c_str(),
                  std::string(reports::RunStatusName(r.status)).c_str(),
                  FormatWallIso(r.start_wall_ns).c_str(), static_cast<unsigned long long>(r.seed),
                  tags.c_str());
    }
    *exit_code = 0;
  });

  struct ImportArgs {
    std::string from, db;
    std::vector<std::string> select;
  };
  auto imp = std::make_shared<ImportArgs>();
  auto* import = app.add_subcommand("import", HelpText(R"(
copy runs from another results database into --db (e.g. a lab's local SQLite history
into the PostgreSQL store all clusters share): every finished run, or those named.
Each run is copied whole in one transaction; runs already in --db are left as they are)"));
  import
      ->add_option("from", imp->from,
                   "the results database to copy from (a SQLite file or "
                   "postgresql://...)")
      ->required();
  import->add_option("runs", imp->select,
                     "run ids or tag selections (tag:KEY=VALUE[,KEY=VALUE]); default: all");
  AddDbOption(import, &imp->db);
  import->callback([imp, exit_code] {
    auto fail = [&](const char* what, const Status& s, int code) {
      std::fprintf(stderr, "faultline import: %s: %s\n", what, s.ToUserString().c_str());
  *exit_code = code;
};
auto from = reports::Store::Open(imp->from, {.create = false});
if (!from.ok()) return fail("source", from.status(), 2);
std::vector<reports::RunRecord> runs;
if (imp->select.empty()) imp->select.push_back("");
for (const auto& sel : imp->select) {
  reports::RunFilter f;
  if (sel.rfind("tag:", 0) == 0) {
    if (Status s = reports::ParseTagSelector(sel, f); !s.ok()) return fail("selection", s, 2);
  } else if (!sel.empty()) {
    auto r = (*from)->GetRun(sel);
    if (!r.ok()) return fail("source", r.status(), 2);
    runs.push_back(std::move(*r));
    continue;
  }
  auto list = (*from)->ListRuns(f);
  if (!list.ok()) return fail("source", list.status(), 3);
  runs.insert(runs.end(), list->rbegin(), list->rend());  // oldest first
}
auto to = reports::Store::Open(imp->db);
if (!to.ok()) return fail("destination", to.status(), 3);
int copied = 0, present = 0, running = 0;
std::set<std::string> seen;
for (size_t i = 0; i < runs.size(); ++i) {
  const auto& r = runs[i];
  if (!seen.insert(r.id).second) continue;
  const char* what = "imported";
  if (r.status == reports::RunStatus::kRunning) {
    what = "skipped: still running";
    ++running;
  } else if ((*to)->GetRun(r.id).ok()) {
    what = "already there";
    ++present;
  } else {
    auto data = (*from)->LoadRun(r.id);
    if (!data.ok()) return fail(r.id.c_str(), data.status(), 3);
    if (Status s = (*to)->ImportRun(*data); !s.ok()) return fail(r.id.c_str(), s, 3);
    ++copied;
  }
  std::fprintf(stderr, "[%zu/%zu] %s %s: %s\n", i + 1, runs.size(), r.id.c_str(),
               r.scenario_name.c_str(), what);
}
std::printf("imported %d run(s) into %s; %d already there, %d still running (skipped)\n", copied,
            (*to)->path().c_str(), present, running);
*exit_code = 0;
}  // namespace fl::harness
);
}

}  // namespace fl::harness
