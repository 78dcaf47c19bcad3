#include "harness/run/prepare.h"

#include "harness/lab/open_lab.h"

#include "harness/scenario/scenario_loader.h"
#include "injectors/injector.h"

namespace fl::harness::run {

namespace {

// A command job's ranks_per_host: at most the lab's ranks per host (its containers).
Status ApplyRanksPerHost(Prepared& p) {
  const uint32_t n = p.scenario.job.ranks_per_host;
  for (auto& h : p.hosts) {
    if (n > 0 && static_cast<int>(n) > h.ranks)
      return InvalidArgumentError(p.scenario.path + ": job.ranks_per_host " + std::to_string(n) +
                                  " is more than host " + h.name + " has rank slots (" +
                                  std::to_string(h.ranks) + ")");
    if (n > 0) h.ranks = static_cast<int>(n);
  }
  p.world = 0;
  for (const auto& h : p.hosts) p.world += h.ranks;
  return OkStatus();
}

}  // namespace

StatusOr<Prepared> Prepare(const RunOptions& opts, reports::Store* store) {
  Prepared p;
  p.opts = opts;
  Scenario& scenario = p.scenario;
  if (!opts.replay_of.empty()) {
    FL_ASSIGN_OR_RETURN(reports::RunRecord old, store->GetRun(opts.replay_of));
    FL_ASSIGN_OR_RETURN(scenario, ParseScenario(old.scenario_text, opts.scenario_path));
    p.seed = opts.seed.value_or(old.seed);
    // The stored run's lab file, as it was then, unless this replay names its own.
    if (opts.lab_file.empty() && !old.lab_text.empty()) {
      scenario.lab = LabSpec{};
      scenario.lab.file = old.lab_source;
      scenario.lab.file_text = old.lab_text;
      scenario.lab.where = "the lab of run " + opts.replay_of;
    }
    // The stored run's command-line CCL overrides (tags), unless this replay names its own.
    if (opts.ccl.empty() && opts.ccl_options.empty()) {
      std::map<std::string, std::string> old_options;
      for (const auto& [k, v] : old.tags)
        if (k.rfind("ccl.", 0) == 0) old_options[k.substr(4)] = v;
      auto it = old.tags.find("ccl");
      FL_RETURN_IF_ERROR(
          ApplyCclOverrides(scenario, it == old.tags.end() ? "" : it->second, old_options));
    }
  } else {
    FL_ASSIGN_OR_RETURN(scenario, LoadScenarioFile(opts.scenario_path));
    p.seed = opts.seed.value_or(scenario.seed);
  }
  FL_RETURN_IF_ERROR(ApplyCclOverrides(scenario, opts.ccl, opts.ccl_options));
  injectors::InjectorRegistry registry("injector");
  FL_RETURN_IF_ERROR(injectors::RegisterBuiltinInjectors(registry));
  ApplyLabOverride(scenario, opts.lab_file);
  lab::LabSource source{scenario.lab.file.empty() ? scenario.path : scenario.lab.file,
                        scenario.lab.file_text, scenario.lab.slurm_yaml, scenario.lab.where};
  auto opened = lab::OpenLab(source, "check");
  if (!opened.ok()) {
    Status st = opened.status();
    return scenario.lab.where.empty() ? st : st.Prepend(scenario.lab.where + ": lab");
  }
  p.lab = std::move(*opened);
  p.hosts = p.lab->hosts();
  FL_RETURN_IF_ERROR(ApplyRanksPerHost(p));
  const FaultCatalog* catalog = &p.lab->catalog();
  FL_RETURN_IF_ERROR(ValidateAgainstCatalog(scenario, *catalog));
  FL_ASSIGN_OR_RETURN(p.plan, MakePlan(scenario, *catalog, p.seed));
  // Each injector checks its own parameters now, before anything exists.
  for (const PlannedFault& pf : p.plan.faults) {
    FL_ASSIGN_OR_RETURN(auto inj, registry.Create(pf.kind));
    injectors::FaultSpec spec{pf.kind, pf.target, pf.params, pf.duration_ns, p.seed};
    Status v = inj->Validate(spec);
    if (v.ok()) v = p.lab->CheckFault(pf.kind, pf.params);
    if (!v.ok())
      return InvalidArgumentError(scenario.faults[pf.spec_index].where + ": " + v.message());
  }
  if (Status st = p.lab->CheckJob(scenario.job); !st.ok()) return st.Prepend(scenario.path);
  return p;
}

Status Provision(Prepared& p, const lab::LabRun& run) {
  FL_RETURN_IF_ERROR(p.lab->Provision(run));
  p.hosts = p.lab->hosts();  // now with the NICs' addresses (and an allocation's node names)
  FL_RETURN_IF_ERROR(ApplyRanksPerHost(p));
  // A lab whose names are known only now (a Slurm node count) validates and plans again: the
  // same seed picks the same positions, now with real names.
  FL_RETURN_IF_ERROR(ValidateAgainstCatalog(p.scenario, p.lab->catalog()));
  FL_ASSIGN_OR_RETURN(p.plan, MakePlan(p.scenario, p.lab->catalog(), p.seed));
  return OkStatus();
}

}  // namespace fl::harness::run
