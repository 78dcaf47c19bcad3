// `faultline project`: the goodput (ETTR) of a job of N GPUs from the measured costs of
// stored runs' faults and a fleet's failure rates (reports/analysis/goodput.h,
// docs/goodput.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "common/units.h"
#include "harness/cli/cli.h"
#include "reports/analysis/goodput.h"
#include "reports/compare/measured_faults.h"
#include "reports/compare/run_metrics.h"

namespace fl::harness {

void AddProjectCommands(CLI::App& app, int* exit_code) {
  struct Args {
    std::vector<std::string> runs;
    std::string db, rates, scenario, checkpoint = "1h", restart = "10min";
    int64_t gpus = 0;
    double days = 30;
    int trials = 10000;
    uint64_t seed = 1;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand(
      "project",
      "project the goodput of a large job from measured recovery costs: the faults of the\n"
      "selected runs give what one failure of each kind costs (its throughput loss; a relaunch\n"
      "and the work since the last checkpoint when the job restarted or died), the failure\n"
      "rates file says how often each class of component fails; a seeded simulation gives the\n"
      "effective training time ratio (ETTR) of a job of --cluster-size GPUs, its spread, and\n"
      "which class costs the most. Method: docs/goodput.md. Exit 0 projected, 2 bad input\n"
      "(nothing selected, a bad file, a class no selected run measured), 3 store error");
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
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    reports::analysis::ProjectionOptions o;
    o.cluster_gpus = a->gpus;
    o.job_days = a->days;
    o.trials = a->trials;
    o.seed = a->seed;
    for (auto [flag, text, out] :
         {std::tuple{"--checkpoint-interval", &a->checkpoint, &o.checkpoint_interval_s},
          std::tuple{"--restart-time", &a->restart, &o.restart_s}}) {
      auto d = ParseDuration(*text);
      if (!d.ok()) {
        *exit_code = ErrorExit("project", Status(d.status()).Prepend(flag));
        return;
      }
      *out = static_cast<double>(*d) / kNsPerSec;
    }
    auto rates = reports::analysis::LoadFailureRates(a->rates);
    if (!rates.ok()) {
      *exit_code = ErrorExit("project", rates.status());
      return;
    }
    auto reader = reports::compare::RunReader::Open(a->db);
    if (!reader.ok()) {
      *exit_code = ErrorExit("project", reader.status());
      return;
    }
    std::optional<std::string> scenario;
    if (!a->scenario.empty()) scenario = a->scenario;
    auto selected = (*reader)->SelectAll(a->runs, scenario);
    if (!selected.ok()) {
      *exit_code = ErrorExit("project", selected.status());
      return;
    }
    const std::vector<reports::compare::RunMetricSet>& runs = *selected;
    auto measured = reports::compare::LoadMeasuredFaults(**reader, runs);
    if (!measured.ok()) {
      *exit_code = ErrorExit("project", measured.status());
      return;
    }
    std::fprintf(stderr, "faultline project: %zu run(s), %zu applied fault(s)\n", runs.size(),
                 measured->size());
    auto p = reports::analysis::ProjectGoodput(*rates, *measured, o);
    if (!p.ok()) {
      *exit_code = ErrorExit("project", p.status());
      return;
    }
    std::string out = a->json ? reports::analysis::ProjectionJson(*p) + "\n"
                              : reports::analysis::RenderProjectionText(*p);
    std::fwrite(out.data(), 1, out.size(), stdout);
    *exit_code = 0;
  });
}

}  // namespace fl::harness
