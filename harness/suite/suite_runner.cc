#include "harness/suite/suite_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/ids.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/process.h"
#include "reports/compare/json.h"
#include "reports/render/json_view.h"
#include "reports/render/junit.h"

namespace fl::harness::suite {
namespace {

volatile sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

std::string CclLabel(const std::optional<CclSpec>& ccl) {
  if (!ccl) return "";
  std::string s = ccl->name;
  for (const auto& [k, v] : ccl->options) s += " " + k + "=" + v;
  return s;
}

std::string LastLines(const std::string& text, size_t n) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  for (size_t i = 0; i < n && pos > 0; ++i) {
    size_t nl = text.rfind('\n', pos - 1);
    pos = nl == std::string::npos ? 0 : nl;
    if (pos == 0) break;
  }
  std::string s = text.substr(pos, end - pos);
  while (!s.empty() && s[0] == '\n') s.erase(0, 1);
  return s;
}

struct Child {
  int exit_code = 0;
  bool timed_out = false;
  bool interrupted = false;
};

// Runs argv with stdout/stderr into files, in its own process group; forwards a stop request
// as one SIGINT; bounded by timeout (SIGINT, then SIGKILL 60 s later).
StatusOr<Child> RunChild(const std::vector<std::string>& argv, const std::string& out_path,
                         const std::string& err_path, Nanos timeout) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.in.kind = Stdio::kNull;
  spec.out = {Stdio::kFile, out_path};
  spec.err = {Stdio::kFile, err_path};
  spec.new_process_group = true;  // the child starts with default signal handling
  auto proc = Spawn(spec);
  if (!proc.ok()) return InternalError("cannot start " + argv[0] + ": " + proc.status().message());
  const pid_t pid = proc->pid();
  Child c;
  Deadline deadline = Deadline::After(timeout);
  Deadline kill_at = Deadline::Never();
  bool sent_int = false;
  for (;;) {
    auto exit = WaitExit(pid, Deadline::After(50 * kNsPerMs));
    if (exit.ok()) {
      c.exit_code = exit->Code();
      return c;
    }
    if (exit.status().code() != Code::kDeadlineExceeded) return exit.status();
    if (!sent_int && (g_stop || deadline.Expired())) {
      c.interrupted = g_stop;
      c.timed_out = !g_stop;
      kill(pid, SIGINT);  // the coordinator reverts, tears down and marks the run aborted
      sent_int = true;
      kill_at = Deadline::After(60 * kNsPerSec);
    }
    if (kill_at.Expired()) {
      kill(pid, SIGKILL);
      kill_at = Deadline::Never();
    }
  }
}

}  // namespace

StopOnSignals::StopOnSignals() {
  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopOnSignals::~StopOnSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool StopOnSignals::Requested() { return g_stop != 0; }

std::string VerdictLine(const reports::VerdictRecord& v) {
  return v.expectation + (v.fault_id ? " " + *v.fault_id : "") + ": " + v.message;
}

RunOutcome RunChildScenario(const std::string& bin, const std::vector<std::string>& args,
                            const std::string& db_path, Nanos timeout, const std::string& tmp_dir,
                            const std::pair<std::string, std::string>& tag,
                            std::set<std::string>* seen, bool* interrupted) {
  RunOutcome o;
  std::vector<std::string> argv = {bin};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out_path = tmp_dir + "/run.json", err_path = tmp_dir + "/run.err";
  Nanos r0 = MonoNowNs();
  auto child = RunChild(argv, out_path, err_path, timeout);
  o.seconds = static_cast<double>(MonoNowNs() - r0) / 1e9;
  std::string out = ReadInputFile(out_path, InputKind::kJobOutput).value_or("");
  std::string err = ReadInputFile(err_path, InputKind::kJobOutput).value_or("");
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  if (!child.ok()) {
    o.exit_code = 3;
    o.error = child.status().ToUserString();
  } else {
    o.exit_code = child->exit_code;
    if (child->interrupted) *interrupted = true;
    if (child->timed_out) o.error = "stopped after the run timeout; ";
  }
  // The run id: from the JSON summary, else the newest run of this invocation not yet seen
  // (a run that failed before printing its summary still left its row).
  // (The child's stdout is read as outside data: anything but a short run id is ignored.)
  if (auto j = ParseJson(out, "faultline run output"); j.ok()) {
    auto id = JsonGet<std::string>(*j, "run_id", "faultline run output");
    if (id.ok() && !id->empty() && id->size() <= 128) o.run_id = *id;
  }
  auto reader = reports::compare::RunReader::Open(db_path);
  if (reader.ok()) {
    if (o.run_id.empty()) {
      reports::RunFilter f;
      f.tags[tag.first] = tag.second;
      auto runs = (*reader)->store().ListRuns(f);
      if (runs.ok())
        for (const auto& r : *runs)
          if (!seen->count(r.id)) {
            o.run_id = r.id;
            break;
          }
    }
    if (!o.run_id.empty()) {
      seen->insert(o.run_id);
      auto r = (*reader)->store().GetRun(o.run_id);
      if (r.ok()) {
        r->scenario_text.clear();
        o.run = std::move(*r);
      }
      auto v = (*reader)->Verdicts(o.run_id);
      if (v.ok()) o.verdicts = std::move(*v);
      auto f = (*reader)->store().LoadFaults(o.run_id);
      if (f.ok()) o.faults = std::move(*f);
    }
  }
  if (o.exit_code != 0 && o.exit_code != 1) {
    if (!o.error.empty() && !o.error.ends_with("; ")) o.error += "; ";
    o.error += "faultline run exited " + std::to_string(o.exit_code) +
               (o.exit_code < 0 ? " (signal)" : "") + ": " + LastLines(err + out, 5);
  }
  return o;
}

namespace {

int ExitCodeOf(const SuiteResult& r) {
  if (r.interrupted) return 130;
  bool failed = false, bad_input = false, error = false;
  for (const auto& run : r.runs) {
    if (run.exit_code == 1)
      failed = true;
    else if (run.exit_code == 2)
      bad_input = true;
    else if (run.exit_code != 0)
      error = true;
  }
  for (const auto& g : r.regressions)
    if (g.Failed()) failed = true;
  if (failed) return 1;
  if (bad_input) return 2;
  if (error) return 3;
  return 0;
}

// The groups of the runs, in the order of their first run.
std::vector<std::string> GroupsOf(const std::vector<RunOutcome>& runs) {
  std::vector<std::string> groups;
  for (const auto& r : runs)
    if (std::find(groups.begin(), groups.end(), r.plan.group) == groups.end())
      groups.push_back(r.plan.group);
  return groups;
}

}  // namespace

std::vector<PlannedRun> PlanSuite(const Suite& suite, const SuiteOptions& options,
                                  const std::string& suite_run) {
  std::vector<PlannedRun> out;
  for (size_t i = 0; i < suite.scenarios.size(); ++i) {
    const SuiteScenario& s = suite.scenarios[i];
    std::vector<std::optional<CclSpec>> ccls;
    for (const auto& c : s.ccls.empty() ? suite.ccls : s.ccls) ccls.push_back(c);
    if (ccls.empty()) ccls.push_back(std::nullopt);
    uint32_t reps = options.repeat ? options.repeat : (s.repeat ? s.repeat : suite.repeat);
    std::map<std::string, std::string> tags = suite.tags;
    for (const auto& [k, v] : s.tags) tags[k] = v;
    for (const auto& [k, v] : options.tags) tags[k] = v;
    tags["suite"] = suite.name;
    tags[kSuiteRunTag] = suite_run;
    for (const auto& ccl : ccls) {
      std::string label = CclLabel(ccl);
      for (uint32_t rep = 1; rep <= reps; ++rep) {
        PlannedRun p;
        p.scenario_index = i;
        p.ccl = ccl;
        p.group = s.path + (label.empty() ? "" : " [" + label + "]");
        p.rep = rep;
        p.reps = reps;
        p.args = {"run", s.path, "--json", "--db", options.db_path};
        for (const auto& [k, v] : tags) {
          p.args.push_back("--tag");
          p.args.push_back(k + "=" + v);
        }
        if (s.seed) {
          p.args.push_back("--seed");
          p.args.push_back(std::to_string(*s.seed));
        }
        if (ccl) {
          p.args.push_back("--ccl");
          p.args.push_back(ccl->name);
          for (const auto& [k, v] : ccl->options) {
            p.args.push_back("--ccl-option");
            p.args.push_back(k + "=" + v);
          }
        }
        for (const auto& a : options.extra_run_args) p.args.push_back(a);
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

SuiteResult RunSuite(const Suite& suite, const SuiteOptions& options) {
  StopOnSignals guard;
  SuiteResult result;
  result.suite_run = NewRunId();
  result.start_wall_ns = WallNowNs();
  Nanos t0 = MonoNowNs();
  auto say = [&](const std::string& line) {
    if (!options.progress) return;
    std::fprintf(options.progress, "%s\n", line.c_str());
    std::fflush(options.progress);
  };
  std::string bin =
      options.faultline_bin.empty() ? SelfExeDir() + "/faultline" : options.faultline_bin;
  std::vector<PlannedRun> plan = PlanSuite(suite, options, result.suite_run);
  std::string tmp_template = "/tmp/fl_suite_XXXXXX";
  std::string tmp = mkdtemp(tmp_template.data()) ? tmp_template : "/tmp";
  say("suite " + suite.name + ": " + std::to_string(plan.size()) + " run(s), results in " +
      options.db_path + " (suite_run=" + result.suite_run + ")");
  std::set<std::string> seen;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (g_stop) break;
    const PlannedRun& p = plan[i];
    char head[64];
    std::snprintf(head, sizeof head, "[%zu/%zu] ", i + 1, plan.size());
    say(std::string(head) + p.group + "  rep " + std::to_string(p.rep) + "/" +
        std::to_string(p.reps) + " ...");
    RunOutcome o = RunChildScenario(bin, p.args, options.db_path, suite.run_timeout_ns, tmp,
                                    {kSuiteRunTag, result.suite_run}, &seen, &result.interrupted);
    o.plan = p;
    std::string verdict;
    if (o.exit_code == 0) {
      verdict = "PASS";
    } else if (o.exit_code == 1) {
      verdict = "FAIL";
      for (const auto& v : o.verdicts)
        if (!v.passed) {
          verdict += "  " + VerdictLine(v);
          break;
        }
    } else if (o.exit_code == 130) {
      verdict = "INTERRUPTED";
    } else {
      verdict = "ERROR (exit " + std::to_string(o.exit_code) + ") " + LastLines(o.error, 1);
    }
    char tail[96];
    std::snprintf(tail, sizeof tail, "  (run %s, %.1f s)",
                  o.run_id.empty() ? "-" : o.run_id.c_str(), o.seconds);
    say(std::string(head) + p.group + "  rep " + std::to_string(p.rep) + "/" +
        std::to_string(p.reps) + ": " + verdict + tail);
    result.runs.push_back(std::move(o));
  }
  if (g_stop) result.interrupted = true;
  rmdir(tmp.c_str());

  // One reader of the store for the repeats and the regression checks below.
  auto reader = reports::compare::RunReader::Open(options.db_path);
  // Repeats, group by group: each metric's median, spread and interval, and how many of the
  // repeats met each expectation (reports/compare/repeats.h).
  if (!result.interrupted) {
    for (const auto& g : GroupsOf(result.runs)) {
      std::vector<reports::compare::RunMetricSet> sets;
      for (const auto& r : result.runs) {
        if (r.plan.group != g || !r.run || !reader.ok()) continue;
        if (r.run->status != reports::RunStatus::kPassed &&
            r.run->status != reports::RunStatus::kFailed)
          continue;
        auto set = (*reader)->Load(*r.run);
        if (set.ok()) sets.push_back(std::move(*set));
      }
      if (sets.size() < 2) continue;
      auto summary = reports::compare::SummariseRepeats(**reader, sets, suite.policies);
      if (!summary.ok()) {
        say("repeats of " + g + ": " + summary.status().ToUserString());
        continue;
      }
      say("repeats " + g + ":\n" + reports::compare::RenderRepeatsText(*summary));
      result.repeats.push_back({g, std::move(*summary)});
    }
  }

  // Regression checks, group by group, over the finished runs of this invocation.
  if (suite.regression.enabled && !result.interrupted) {
    for (const auto& g : GroupsOf(result.runs)) {
      std::vector<reports::RunRecord> current;
      for (const auto& r : result.runs)
        if (r.plan.group == g && r.run &&
            (r.run->status == reports::RunStatus::kPassed ||
             r.run->status == reports::RunStatus::kFailed))
          current.push_back(*r.run);
      if (current.empty() || !reader.ok()) continue;
      auto reg = CheckRegression(**reader, g, current, suite.regression, suite.policies);
      if (!reg.ok()) {
        say("regression check of " + g + ": " + reg.status().ToUserString());
        continue;
      }
      if (reg->baseline_runs.empty()) {
        say("regression " + g +
            ": no earlier passing run with the same tags (first run: " + "nothing to compare)");
      } else {
        auto regressed = reg->Regressed();
        say("regression " + g + ": against " + std::to_string(reg->baseline_runs.size()) +
            " baseline run(s): " +
            (regressed.empty() ? std::string("no metric regressed")
                               : std::to_string(regressed.size()) + " metric(s) REGRESSED"));
        for (const auto* m : regressed)
          say("  " + m->key + ": " + reports::compare::FormatQuantity(m->median_a, m->unit) +
              " -> " + reports::compare::FormatQuantity(m->median_b, m->unit) + " (allowed " +
              reports::compare::FormatQuantity(m->allowed, m->unit) + ")");
      }
      for (const auto& sh : reg->shifts) say("regression " + g + ": SHIFTED " + sh.Text());
      result.regressions.push_back(std::move(*reg));
    }
  }
  result.seconds = static_cast<double>(MonoNowNs() - t0) / 1e9;
  result.exit_code = ExitCodeOf(result);
  if (!options.junit_path.empty()) {
    Status st = WriteFileAtomic(options.junit_path, SuiteJUnit(suite, result, options.db_path));
    if (!st.ok()) {
      say("cannot write " + options.junit_path + ": " + st.ToUserString());
      if (result.exit_code == 0) result.exit_code = 3;
    } else {
      say("JUnit: " + options.junit_path);
    }
  }
  int passed = 0, failed = 0, errors = 0;
  for (const auto& r : result.runs)
    (r.exit_code == 0 ? passed : r.exit_code == 1 ? failed : errors)++;
  int regressed = 0;
  for (const auto& g : result.regressions) regressed += g.Failed();
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "suite %s: %d passed, %d failed, %d error(s), %d group(s) regressed%s; %.1f s; "
                "exit %d",
                suite.name.c_str(), passed, failed, errors, regressed,
                result.interrupted ? ", interrupted" : "", result.seconds, result.exit_code);
  say(summary);
  return result;
}

// A level shift in the --json output: its fields under their own names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LevelShift, key, unit, night, nights_ago, before, after, allowed,
                                   changed)

std::string SuiteResultJson(const Suite& suite, const SuiteResult& result) {
  using nlohmann::json;
  json runs = json::array();
  for (const auto& r : result.runs) {
    json verdicts = json::parse(reports::render::VerdictListJson(r.verdicts));
    json status = r.run ? json(std::string(reports::RunStatusName(r.run->status))) : json(nullptr);
    runs.push_back({{"group", r.plan.group},
                    {"rep", r.plan.rep},
                    {"run_id", r.run_id.empty() ? json(nullptr) : json(r.run_id)},
                    {"exit_code", r.exit_code},
                    {"seconds", r.seconds},
                    {"error", r.error},
                    {"status", status},
                    {"verdicts", verdicts}});
  }
  json regressions = json::array();
  for (const auto& g : result.regressions) {
    json keys = json::array();
    for (const auto* m : g.Regressed()) keys.push_back(m->key);
    json comparison = g.baseline_runs.empty()
                          ? json(nullptr)
                          : json::parse(reports::compare::ComparisonJson(g.comparison));
    regressions.push_back({{"group", g.group},
                           {"baseline_runs", g.baseline_runs},
                           {"current_runs", g.current_runs},
                           {"regressed", keys},
                           {"shifts", json(g.shifts)},
                           {"comparison", comparison}});
  }
  json repeats = json::array();
  for (const auto& g : result.repeats)
    repeats.push_back(
        {{"group", g.group}, {"summary", json::parse(reports::compare::RepeatsJson(g.summary))}});
  json j = {{"suite", suite.name},
            {"suite_run", result.suite_run},
            {"seconds", result.seconds},
            {"exit_code", result.exit_code},
            {"interrupted", result.interrupted},
            {"runs", runs},
            {"regressions", regressions},
            {"repeats", repeats}};
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string SuiteJUnit(const Suite& suite, const SuiteResult& result, const std::string& db_path) {
  using Doc = reports::render::JUnitDocument;
  Doc w("faultline suite " + suite.name);
  for (const auto& g : GroupsOf(result.runs)) {
    Doc::Suite& ts = w.AddSuite(g);
    ts.properties.emplace_back("suite_run", result.suite_run);
    for (const auto& r : result.runs) {
      if (r.plan.group != g) continue;
      std::string cls = "rep" + std::to_string(r.plan.rep);
      if (!r.run_id.empty()) cls += "." + r.run_id;
      if (r.verdicts.empty() || (r.exit_code != 0 && r.exit_code != 1)) {
        Doc::Case c;
        c.classname = cls;
        c.name = "run";
        c.seconds = r.seconds;
        c.error = r.error.empty() ? "the run gave no verdicts" : r.error;
        c.system_out = r.run_id.empty()
                           ? "run -"
                           : "run: " + r.run_id +
                                 "\nreplay: " + reports::render::ReplayCommand(r.run_id, db_path);
        ts.cases.push_back(std::move(c));
        if (r.verdicts.empty()) continue;
      }
      reports::RunData d;
      if (r.run) d.run = *r.run;
      d.run.id = r.run_id;
      d.faults = r.faults;
      d.verdicts = r.verdicts;
      if (!r.run) d.run.status = reports::RunStatus::kFailed;  // no "run" case of its own
      for (auto& c : reports::render::JUnitCasesForRun(d, cls, {db_path, {}}))
        if (c.name != "run") ts.cases.push_back(std::move(c));
    }
    for (const auto& reg : result.regressions) {
      if (reg.group != g) continue;
      Doc::Case c;
      c.classname = "history";
      c.name = "regression";
      std::string msg;
      for (const auto* m : reg.Regressed())
        msg += m->key + ": " + reports::compare::FormatQuantity(m->median_a, m->unit) + " -> " +
               reports::compare::FormatQuantity(m->median_b, m->unit) + " (allowed " +
               reports::compare::FormatQuantity(m->allowed, m->unit) + ")\n";
      for (const auto& sh : reg.shifts) msg += "shifted " + sh.Text() + "\n";
      if (!msg.empty()) c.failure = msg;
      if (reg.baseline_runs.empty()) {
        if (msg.empty()) c.skipped = "no earlier passing run with the same tags";
      } else {
        c.system_out = reports::compare::RenderText(reg.comparison);
      }
      ts.cases.push_back(std::move(c));
    }
  }
  return w.Xml();
}

}  // namespace fl::harness::suite
