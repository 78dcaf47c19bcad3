#include "harness/scenario/timeout_lint.h"

#include <set>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/units.h"
#include "common/yaml_util.h"
#include "harness/scenario/job_env.h"
#include "injectors/injector.h"

namespace fl::harness {
namespace {

struct Timeout {
  std::string name;
  Nanos value = 0;
  std::string source;
};

std::string Show(const Timeout& t) {
  return t.name + " (" + FormatQuantity(static_cast<double>(t.value), Unit::kDuration) + ", " +
         t.source + ")";
}

bool StopsAPath(const std::string& kind) {
  const injectors::InjectorInfo* info = injectors::BuiltinInjectors().Describe(kind);
  return info != nullptr && info->takes_path_down;
}

}  // namespace

std::vector<std::string> LintTimeouts(const Scenario& s,
                                      const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  // The outer timeouts.
  std::optional<Timeout> collective, pg;
  const Timeout hang{"job.hang_timeout", s.job.hang_timeout_ns, "the scenario"};
  if (s.job.command.empty())
    collective = Timeout{"job.collective_timeout", s.job.collective_timeout_ns, "the scenario"};
  if (auto it = env.find(kPgTimeoutEnv); it != env.end()) {
    auto v = ParseDuration(it->second);
    if (!v.ok()) {
      out.push_back(std::string(kPgTimeoutEnv) + "='" + it->second +
                    "' is not a duration (30s, 1800000ms): the lint cannot check it");
    } else {
      pg = Timeout{kPgTimeoutEnv, *v, "job.env"};
    }
  }
  std::vector<Timeout> outers;
  if (collective) outers.push_back(*collective);
  if (pg) outers.push_back(*pg);
  outers.push_back(hang);

  // Rule 2: the harness's hang timeout is the outermost.
  for (const auto& o : {collective, pg}) {
    if (o && hang.value <= o->value)
      out.push_back(Show(hang) + " fires before " + Show(*o) +
                    ": the run is called hung before the job's own timeout reports the error");
  }

  // The CCL's inner timeouts, from its plug-in.
  auto plugin = ccl::FindCclPlugin(s.job.ccl);
  if (!plugin.ok() || !(*plugin)->timeouts) return out;
  auto values = (*plugin)->options.Parse(s.job.ccl_options);
  if (!values.ok()) return out;  // the loader reports bad options
  const ccl::CclTimeouts inner = (*plugin)->timeouts(*values, env, s.job.failover);
  auto source_of = [&](const ccl::CclTimeout& t) {
    if (!t.source.empty()) return t.source;
    std::string src;
    for (const auto& var : t.env_vars) {
      std::string one = JobEnvSource(s, var);
      if (one.empty()) one = s.job.ccl + "'s built-in default";
      src += (src.empty() ? "" : ", ") + var + " from " + one;
    }
    return src;
  };
  for (const ccl::CclTimeout& t : inner.timeouts) {
    const Timeout in{t.name, t.value, source_of(t)};
    if (t.kind == ccl::CclTimeout::Kind::kDetect) {
      // Rule 1.
      for (const Timeout& o : outers) {
        if (o.value <= in.value)
          out.push_back(Show(o) + " fires before " + Show(in) +
                        " can detect a silent fault: the job fails on the outer timeout instead "
                        "of the CCL's recovery");
      }
      continue;
    }
    // Rule 3 (kGiveUp).
    if (inner.routes_around_path_faults) continue;
    for (const FaultSpec& f : s.faults) {
      if (f.duration_ns <= 0 || !StopsAPath(f.kind)) continue;
      const Timeout fault{"fault " + f.kind + (f.target.empty() ? "" : " on " + f.target),
                          f.duration_ns, f.where};
      if (fault.value >= in.value) {
        out.push_back(Show(fault) + " lasts longer than " + Show(in) + ": " + s.job.ccl +
                      " gives up before the path is back");
        continue;
      }
      for (const Timeout& o : outers) {
        if (o.value < fault.value)
          out.push_back(Show(o) + " fires before " + Show(fault) + " ends: " + s.job.ccl +
                        " waits for the path (up to " + Show(in) +
                        ") and the outer timeout cuts the wait short");
      }
    }
  }
  return out;
}

std::vector<std::string> LintTimeouts(const Scenario& s) {
  return LintTimeouts(s, EffectiveJobEnv(s));
}

}  // namespace fl::harness
