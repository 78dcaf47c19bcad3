// `faultline project`: the goodput (ETTR) of a job of N GPUs from the measured costs of
// stored runs' faults and a fleet's failure rates (reports/analysis/goodput.h,
// docs/goodput.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "common/units.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "reports/analysis/goodput.h"
#include "reports/compare/measured_faults.h"
#include "reports/compare/run_metrics.h"

namespace fl::harness {

namespace {

struct ProjectArgs {
  std::vector<std::string> runs;
  std::string db, rates, scenario, checkpoint = "1h", restart = "10min";
  int64_t gpus = 0;
  double days = 30;
  int trials = 10000;
  uint64_t seed = 1;
  bool json = false;
};

Status Project(const ProjectArgs& a) {
  reports::analysis::ProjectionOptions o;
  o.cluster_gpus = a.gpus;
  o.job_days = a.days;
  o.trials = a.trials;
  o.seed = a.seed;
  FL_ASSIGN_OR_RETURN(Nanos checkpoint, ParseDurationFlag("--checkpoint-interval", a.checkpoint));
  FL_ASSIGN_OR_RETURN(Nanos restart, ParseDurationFlag("--restart-time", a.restart));
  o.checkpoint_interval_s = static_cast<double>(checkpoint) / kNsPerSec;
  o.restart_s = static_cast<double>(restart) / kNsPerSec;
  FL_ASSIGN_OR_RETURN(auto rates, reports::analysis::LoadFailureRates(a.rates));
  FL_ASSIGN_OR_RETURN(auto reader, reports::compare::RunReader::Open(a.db));
  FL_ASSIGN_OR_RETURN(auto runs, reader->SelectAll(a.runs, OptionalFlag(a.scenario)));
  FL_ASSIGN_OR_RETURN(auto measured, reports::compare::LoadMeasuredFaults(*reader, runs));
  std::fprintf(stderr, "faultline project: %zu run(s), %zu applied fault(s)\n", runs.size(),
               measured.size());
  FL_ASSIGN_OR_RETURN(auto p, reports::analysis::ProjectGoodput(rates, measured, o));
  std::string out = a.json ? reports::analysis::ProjectionJson(p) + "\n"
                           : reports::analysis::RenderProjectionText(p);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return OkStatus();
}

}  // namespace

void AddProjectCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ProjectArgs>();
  auto* c = app.add_subcommand("project", HelpText(R"(
project the goodput of a large job from measured recovery costs: the faults of the
selected runs give what one failure of each kind costs (its throughput loss; a relaunch
and the work since the last checkpoint when the job restarted or died), the failure
rates file says how often each class of component fails; a seeded simulation gives the
effective training time ratio (ETTR) of a job of --cluster-size GPUs, its spread, and
which class costs the most. Method: docs/goodput.md. Exit 0 projected, 2 bad input
(nothing selected, a bad file, a class no selected run measured), 3 store error)"));
  c->add_option("--runs", a->runs,
                "runs whose faults are measured (repeatable): a run id, 'latest', or\n"
                "tag:k=v[,k=v] (every finished run with those tags)")
      ->required();
  c->add_option("--cluster-size", a->gpus, "GPUs in the projected job")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  c->add_option("--failure-rates", a->rates,
                "YAML file of failure classes: fault_kind or cost, gpus_per_component,\n"
                "failures_per_day (configs/failure_rates/example.yaml)")
      ->required();
  AddDbOption(c, &a->db);
  c->add_option("--scenario", a->scenario, "only runs of this scenario (for tag selectors)");
  c->add_option("--job-days", a->days, "the job's wall time in days")->capture_default_str();
  c->add_option("--checkpoint-interval", a->checkpoint,
                "time between checkpoints: a restart loses U(0, this) of work")
      ->capture_default_str();
  c->add_option("--restart-time", a->restart,
                "time to relaunch a job that died, to its first step again")
      ->capture_default_str();
  c->add_option("--trials", a->trials, "simulated jobs")->capture_default_str();
  c->add_option("--seed", a->seed, "simulation seed (same seed, same figures)")
      ->capture_default_str();
  c->add_flag("--json", a->json, "print the projection as JSON");
  RunStatusAfterParse(c, a, exit_code, "project", Project);
}

}  // namespace fl::harness
