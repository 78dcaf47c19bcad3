#include "harness/suite/shrink.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "common/yaml_util.h"

#include <algorithm>
#include <filesystem>

#include "common/file_util.h"
#include "common/ids.h"
#include "common/input_file.h"
#include "common/units.h"
#include "harness/suite/suite_runner.h"
#include "reports/compare/run_metrics.h"
#include "reports/store/store.h"

namespace fl::harness::suite {

namespace {

constexpr Nanos kShortest = 100 * kNsPerMs;

// The scenario with only the faults whose indices are in keep, their anchors (after_event /
// during: "fN", a fault's index) renumbered; a null node when a kept fault's anchor is not
// kept (that candidate is not a scenario).
YAML::Node WithFaults(const YAML::Node& scenario, const std::vector<size_t>& keep) {
  YAML::Node copy = YAML::Clone(scenario);
  YAML::Node faults(YAML::NodeType::Sequence);
  std::map<std::string, std::string> renamed;  // "f3" -> "f1"
  for (size_t k = 0; k < keep.size(); ++k)
    renamed["f" + std::to_string(keep[k])] = "f" + std::to_string(k);
  for (size_t i : keep) {
    YAML::Node f = YAML::Clone(scenario["faults"][i]);
    for (const char* key : {"after_event", "during"}) {
      YAML::Node a = f[key];
      if (!a) continue;
      YAML::Node at = a.IsMap() ? a["fault"] : a;
      if (!at || !at.IsScalar()) continue;
      auto it = renamed.find(at.Scalar());
      if (it == renamed.end()) return YAML::Node();
      if (a.IsMap())
        f[key]["fault"] = it->second;
      else
        f[key] = it->second;
    }
    faults.push_back(f);
  }
  copy["faults"] = faults;
  return copy;
}

std::string Ms(Nanos ns) { return std::to_string(ns / kNsPerMs) + "ms"; }

class Reducer {
 public:
  Reducer(const FailsSame& fails, const ShrinkBudget& budget, ShrinkResult* result)
      : fails_(fails), budget_(budget), result_(result) {}

  // Asks whether candidate still fails; true keeps it as the new best. Errors end the shrink.
  StatusOr<bool> Try(const YAML::Node& candidate, const std::string& what) {
    if (candidate.IsNull()) return false;  // not a scenario (WithFaults)
    std::string yaml = EmitYaml(candidate);
    if (!tried_.insert(yaml).second) return false;  // asked before: it did not fail then
    if (Spent()) return false;
    ++result_->runs;
    FL_ASSIGN_OR_RETURN(bool failed, fails_(yaml, what));
    if (failed) {
      result_->yaml = std::move(yaml);
      result_->kept.push_back(what);
    }
    return failed;
  }
  bool Spent() {
    if (result_->runs >= budget_.max_runs || budget_.deadline.Expired() ||
        (budget_.stop && budget_.stop())) {
      result_->budget_spent = true;
      return true;
    }
    return false;
  }

 private:
  const FailsSame& fails_;
  const ShrinkBudget& budget_;
  ShrinkResult* result_;
  std::set<std::string> tried_;  // candidates asked about (a kept one is never asked again)
};

}  // namespace

StatusOr<ShrinkResult> ShrinkScenario(const std::string& yaml,
                                      const std::map<size_t, std::string>& fault_targets,
                                      const FailsSame& fails, const ShrinkBudget& budget) {
  YAML::Node best;
  try {
    best = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("scenario: ") + e.what());
  }
  if (!best.IsMap() || !best["faults"] || !best["faults"].IsSequence()) {
    return InvalidArgumentError("scenario: no faults sequence to shrink");
  }
  ShrinkResult result;
  result.yaml = EmitYaml(best);
  result.faults_before = best["faults"].size();
  Reducer r(fails, budget, &result);
  // The fault indices into the original list still in `best` (for the targets of step 2).
  std::vector<size_t> alive(result.faults_before);
  for (size_t i = 0; i < alive.size(); ++i) alive[i] = i;

  // 1. Fewer faults (ddmin over the list).
  size_t chunk = std::max<size_t>(1, (alive.size() + 1) / 2);
  while (!alive.empty() && !r.Spent()) {
    bool removed = false;
    for (size_t start = 0; start < alive.size() && !r.Spent();) {
      const size_t end = std::min(alive.size(), start + chunk);
      std::vector<size_t> keep_pos, keep_orig;
      for (size_t i = 0; i < alive.size(); ++i) {
        if (i < start || i >= end) {
          keep_pos.push_back(i);
          keep_orig.push_back(alive[i]);
        }
      }
      std::string what = end - start == 1 ? "without fault " + std::to_string(alive[start])
                                          : "without faults " + std::to_string(alive[start]) +
                                                ".." + std::to_string(alive[end - 1]);
      what += " (" + std::to_string(keep_pos.size()) + " left)";
      FL_ASSIGN_OR_RETURN(bool still, r.Try(WithFaults(best, keep_pos), what));
      if (still) {
        best = WithFaults(best, keep_pos);  // not null: Try kept it
        alive = keep_orig;
        removed = true;
      } else {
        start = end;
      }
    }
    if (!removed) {
      if (chunk == 1) break;
      chunk = (chunk + 1) / 2;
    }
    chunk = std::min(chunk, std::max<size_t>(1, alive.size()));
  }

  // 2-5. Per remaining fault: a target instead of a class, one firing, shorter, earlier.
  for (size_t pos = 0; pos < alive.size() && !r.Spent(); ++pos) {
    const std::string name = "fault " + std::to_string(alive[pos]);
    auto edit = [&](const std::function<void(YAML::Node)>& change,
                    const std::string& what) -> StatusOr<bool> {
      YAML::Node candidate = YAML::Clone(best);
      change(candidate["faults"][pos]);
      FL_ASSIGN_OR_RETURN(bool still, r.Try(candidate, name + ": " + what));
      if (still) best = candidate;
      return still;
    };
    YAML::Node f = best["faults"][pos];
    if (f["target_class"] && fault_targets.count(alive[pos])) {
      const std::string target = fault_targets.at(alive[pos]);
      FL_ASSIGN_OR_RETURN(bool ok, edit(
                                       [&](YAML::Node n) {
                                         n.remove("target_class");
                                         n["target"] = target;
                                       },
                                       "target " + target + " instead of its class"));
      (void)ok;
    }
    if (best["faults"][pos]["count"] && best["faults"][pos]["count"].as<std::string>() != "1") {
      FL_ASSIGN_OR_RETURN(bool ok, edit([](YAML::Node n) { n["count"] = 1; }, "count 1"));
      (void)ok;
    }
    for (const char* key : {"duration", "at"}) {
      for (int halvings = 0; halvings < 4 && !r.Spent(); ++halvings) {
        YAML::Node v = best["faults"][pos][key];
        if (!v || !v.IsScalar()) break;
        auto ns = ParseDuration(v.as<std::string>());
        if (!ns.ok() || *ns / 2 < kShortest) break;
        const std::string half = Ms(*ns / 2);
        FL_ASSIGN_OR_RETURN(
            bool still, edit([&](YAML::Node n) { n[key] = half; }, std::string(key) + " " + half));
        if (!still) break;
      }
    }
  }
  result.faults_after = alive.size();
  return result;
}

// ---- the runner ----

namespace {

// The expectations a run failed.
std::set<std::string> FailedExpectations(const std::vector<reports::VerdictRecord>& verdicts) {
  std::set<std::string> out;
  for (const auto& v : verdicts)
    if (!v.passed) out.insert(v.expectation);
  return out;
}

}  // namespace

ShrinkOutcome RunShrink(const ShrinkOptions& o) {
  ShrinkOutcome out;
  auto say = [&](const std::string& line) {
    if (!o.progress) return;
    std::fprintf(o.progress, "%s\n", line.c_str());
    std::fflush(o.progress);
  };
  auto fail = [&](int code, std::string message) {
    out.exit_code = code;
    out.message = std::move(message);
    return out;
  };
  auto reader = reports::compare::RunReader::Open(o.db_path);
  if (!reader.ok()) return fail(2, reader.status().ToUserString());
  auto run = (*reader)->store().GetRun(o.run_id);
  if (!run.ok()) return fail(2, run.status().ToUserString());
  auto verdicts = (*reader)->Verdicts(run->id);
  if (!verdicts.ok()) return fail(3, verdicts.status().ToUserString());
  const std::set<std::string> target = FailedExpectations(*verdicts);
  if (target.empty()) {
    return fail(2, "run " + run->id + " (" + std::string(reports::RunStatusName(run->status)) +
                       ") failed no expectation: nothing to shrink");
  }
  auto faults = (*reader)->store().LoadFaults(run->id);
  if (!faults.ok()) return fail(3, faults.status().ToUserString());
  std::map<size_t, std::string> targets;  // "f3" or "f3.0" -> 3
  for (const auto& f : *faults) {
    if (f.fault_id.size() < 2 || f.fault_id[0] != 'f') continue;
    size_t idx = std::strtoul(f.fault_id.c_str() + 1, nullptr, 10);
    if (!targets.count(idx) && !f.target.empty()) targets[idx] = f.target;
  }
  std::string expectations;
  for (const auto& e : target) expectations += (expectations.empty() ? "" : ", ") + e;

  std::string tmp_template = "/tmp/fl_shrink_XXXXXX";
  if (!mkdtemp(tmp_template.data())) return fail(3, "cannot make a directory under /tmp");
  const std::string tmp = tmp_template;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmp};

  // The run's lab as it was: its file when unchanged, else its stored text.
  std::string lab;
  if (!run->lab_text.empty()) {
    auto now = ReadInputFile(run->lab_source, InputKind::kLabFile);
    if (now.ok() && *now == run->lab_text) {
      lab = run->lab_source;
    } else {
      lab = tmp + "/lab" + std::filesystem::path(run->lab_source).extension().string();
      if (Status s = WriteFileAtomic(lab, run->lab_text); !s.ok()) return fail(3, s.ToUserString());
    }
  }
  const std::string session = NewRunId();
  std::vector<std::string> base = {"--json",
                                   "--db",
                                   o.db_path,
                                   "--seed",
                                   std::to_string(run->seed),
                                   "--tag",
                                   "shrink_of=" + run->id,
                                   "--tag",
                                   "shrink_session=" + session};
  if (!lab.empty()) base.insert(base.end(), {"--lab", lab});
  for (const auto& [k, v] : run->tags) {
    if (k == "ccl") base.insert(base.end(), {"--ccl", v});
    if (k.rfind("ccl.", 0) == 0) base.insert(base.end(), {"--ccl-option", k.substr(4) + "=" + v});
  }
  const std::string bin = o.faultline_bin.empty() ? SelfExeDir() + "/faultline" : o.faultline_bin;

  StopOnSignals stop;
  bool interrupted = false;
  std::set<std::string> seen;
  int n = 0;
  const std::string candidate = tmp + "/candidate.yaml";
  FailsSame fails = [&](const std::string& yaml, const std::string& what) -> StatusOr<bool> {
    FL_RETURN_IF_ERROR(WriteFileAtomic(candidate, yaml));
    std::vector<std::string> args = {"run", candidate};
    args.insert(args.end(), base.begin(), base.end());
    char head[48];
    std::snprintf(head, sizeof head, "[%d/%d] ", ++n, o.max_runs);
    say(std::string(head) + what + " ...");
    RunOutcome r = RunChildScenario(bin, args, o.db_path, o.run_timeout, tmp,
                                    {"shrink_session", session}, &seen, &interrupted);
    if (interrupted) return CancelledError("interrupted");
    bool same = false;
    std::string verdict;
    if (r.exit_code == 0) {
      verdict = "passes";
    } else if (r.exit_code == 1) {
      for (const auto& v : r.verdicts)
        if (!v.passed && target.count(v.expectation)) {
          same = true;
          verdict = "FAILS " + VerdictLine(v);
          break;
        }
      if (!same) verdict = "fails otherwise";
    } else {
      verdict = "error, exit " + std::to_string(r.exit_code) + ": " + r.error;
    }
    say(std::string(head) + what + ": " + verdict + (same ? " (kept)" : " (undone)") +
        (r.run_id.empty() ? "" : "  [run " + r.run_id + "]"));
    return same;
  };

  say("shrink " + run->id + " (" + run->scenario_name + ", seed " + std::to_string(run->seed) +
      "): looking for the smallest scenario that fails " + expectations + "; at most " +
      std::to_string(o.max_runs) + " replays");
  auto again = fails(run->scenario_text, "the run's own scenario, unchanged");
  if (!again.ok()) return fail(130, "interrupted");
  if (!*again) {
    return fail(1, "run " + run->id + " does not fail " + expectations +
                       " again when replayed: a flaky failure is not shrunk");
  }
  ShrinkBudget budget;
  budget.max_runs = o.max_runs - 1;
  budget.deadline = Deadline::After(o.time_limit);
  budget.stop = [] { return StopOnSignals::Requested(); };
  auto shrunk = ShrinkScenario(run->scenario_text, targets, fails, budget);
  if (!shrunk.ok()) {
    if (shrunk.status().code() != Code::kCancelled) return fail(2, shrunk.status().ToUserString());
    interrupted = true;
  }
  ShrinkResult result = shrunk.ok() ? *shrunk : ShrinkResult{};
  if (!shrunk.ok()) result.yaml = run->scenario_text;
  result.runs += 1;

  // The file: the smallest failing scenario with the run's seed.
  YAML::Node doc = YAML::Load(result.yaml);
  doc["seed"] = run->seed;
  out.out_path = o.out_path.empty() ? "shrunk-" + run->id + ".yaml" : o.out_path;
  std::string text = "# The smallest scenario found by `faultline shrink " + run->id +
                     "`: it fails " + expectations + " as that run did (" +
                     std::to_string(result.faults_before) + " fault(s) -> " +
                     std::to_string(result.faults_after) + ", " + std::to_string(result.runs) +
                     " replays).\n" + EmitYaml(doc);
  if (Status s = WriteFileAtomic(out.out_path, text); !s.ok()) return fail(3, s.ToUserString());
  out.result = std::move(result);
  out.exit_code = interrupted ? 130 : 0;
  out.message = "wrote " + out.out_path + ": " + std::to_string(out.result.faults_before) +
                " fault(s) -> " + std::to_string(out.result.faults_after) + " after " +
                std::to_string(out.result.runs) + " replay(s)" +
                (out.result.budget_spent ? " (budget spent: it may shrink further)" : "") +
                (interrupted ? " (interrupted)" : "");
  return out;
}

}  // namespace fl::harness::suite
