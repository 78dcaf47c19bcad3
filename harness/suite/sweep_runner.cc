#include "harness/suite/sweep_runner.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/ids.h"
#include "common/input_file.h"
#include "common/process.h"
#include "harness/lab/open_lab.h"
#include "harness/scenario/scenario_loader.h"
#include "injectors/journal.h"
#include "reports/compare/run_metrics.h"

namespace fl::harness::suite {

using reports::compare::SweepMapCell;
using reports::compare::SweepMapInput;

std::string PanelName(const CclSpec& ccl) {
  std::string s = ccl.name;
  for (const auto& [k, v] : ccl.options) s += " " + k + "=" + v;
  return s;
}

namespace {

constexpr const char* kSweepTag = "sweep";
constexpr int kMaxConsecutiveErrors = 3;

// Where a sweep records the lab it keeps up, with its pid: a sweep that died leaves its lab,
// which the next one removes (RemoveDeadSweepLabs).
std::string OwnersDir() { return injectors::StateDir() + "/sweeps"; }

void RemoveDeadSweepLabs(FILE* progress) {
  DIR* d = opendir(OwnersDir().c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 6 && n.ends_with(".owner")) names.push_back(n.substr(0, n.size() - 6));
  }
  closedir(d);
  for (const auto& name : names) {
    const std::string path = OwnersDir() + "/" + name + ".owner";
    auto text = ReadInputFile(path, InputKind::kLabState);
    unsigned long long pid = 0, start = 0;
    if (text.ok() && std::sscanf(text->c_str(), "%llu %llu", &pid, &start) == 2 &&
        ProcessAlive(static_cast<int>(pid), start))
      continue;
    auto removed = lab::RemoveLeftoverLab(name);
    if (removed.ok()) {
      if (*removed && progress)
        std::fprintf(progress, "removed lab %s of a sweep that died\n", name.c_str());
      unlink(path.c_str());
    } else if (progress) {
      std::fprintf(progress, "cannot remove lab %s of a sweep that died: %s\n", name.c_str(),
                   removed.status().ToUserString().c_str());
    }
  }
}

// The one lab of a sweep: built at the start, checked by each run, torn down at the end (or
// when this object goes, whatever way the sweep ends).
class SweepLab {
 public:
  ~SweepLab() { Down(); }
  const std::string& name() const { return name_; }
  bool up() const { return lab_ != nullptr; }

  Status Up(const Scenario& sc) {
    source_ = lab::LabSource{sc.lab.file.empty() ? sc.path : sc.lab.file, sc.lab.file_text,
                             sc.lab.slurm_yaml, sc.lab.where};
    name_ = "sw" + RandomHex(3);
    FL_RETURN_IF_ERROR(MakeDirs(OwnersDir(), 0700));
    const int pid = static_cast<int>(getpid());
    FL_RETURN_IF_ERROR(WriteFileAtomic(
        OwnerPath(), std::to_string(pid) + " " + std::to_string(ProcessStartTime(pid)) + "\n"));
    return Build();
  }
  Status Rebuild() {
    Status st = lab_ ? lab_->Teardown() : OkStatus();
    lab_.reset();
    FL_RETURN_IF_ERROR(st);
    return Build();
  }
  void Down() {
    if (lab_) {
      if (Status st = lab_->Teardown(); !st.ok())
        std::fprintf(stderr, "faultline sweep: tearing down lab %s: %s\n", name_.c_str(),
                     st.ToUserString().c_str());
      lab_.reset();
    }
    if (!name_.empty()) unlink(OwnerPath().c_str());
  }

 private:
  std::string OwnerPath() const { return OwnersDir() + "/" + name_ + ".owner"; }
  Status Build() {
    FL_ASSIGN_OR_RETURN(lab_, lab::OpenLab(source_, name_));
    lab::LabRun run;
    run.lab_name = name_;
    Status st = lab_->Provision(run);
    if (!st.ok()) lab_.reset();
    return st;
  }
  lab::LabSource source_;
  std::string name_;
  std::unique_ptr<lab::Lab> lab_;
};

struct Layout {
  std::vector<std::string> panels;  // CCL panels
  size_t third = 1;                 // values of a third axis (folded into the panel)
};

// The map's point and panel of a plan point.
std::pair<size_t, std::string> MapCell(const SweepSpec& spec, size_t point,
                                       const std::string& ccl_panel) {
  if (spec.axes.size() < 3) return {point, ccl_panel};
  const SweepAxis& a = spec.axes[2];
  const size_t n = a.values.size();
  std::string panel =
      ccl_panel + (ccl_panel.empty() ? "" : " ") + a.label + "=" + a.values[point % n];
  return {point / n, panel};
}

std::string FormatEta(double s) {
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(std::fmod(s, 3600) / 60));
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60),
                  static_cast<int>(std::fmod(s, 60)));
  return buf;
}

// Command start to first iteration and last iteration to exit, from the run's samples.
void MeasureOverhead(const std::string& db, const std::string& run_id, Nanos spawn_wall,
                     Nanos exit_wall, SweepRun* r) {
  r->overhead_s = r->start_s = r->end_s = std::numeric_limits<double>::quiet_NaN();
  auto store = reports::Store::Open(db, {.create = false});
  if (!store.ok()) return;
  auto data = (*store)->LoadRun(run_id);
  if (!data.ok() || data->samples.empty()) return;
  Nanos first = data->samples.front().start_ns, last = data->samples.front().end_ns;
  for (const auto& s : data->samples) {
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
  }
  r->start_s = static_cast<double>(first - spawn_wall) / 1e9;
  r->end_s = static_cast<double>(exit_wall - last) / 1e9;
  r->overhead_s = r->start_s + r->end_s;
}

// A short line of the run's results for the progress line.
std::string Brief(const std::map<std::string, double>& v) {
  std::string s;
  auto add = [&](const char* key, const char* title, const char* unit) {
    auto it = v.find(key);
    if (it == v.end()) return;
    s += std::string(s.empty() ? "" : ", ") + title + " " +
         reports::compare::FormatMapValue(it->second, unit);
  };
  add("recovery_ms", "recovery", "ms");
  add("throughput_loss_s", "loss", "s");
  add("failovers", "failovers", "count");
  if (auto it = v.find("hung"); it != v.end() && it->second > 0) s += ", HUNG";
  return s;
}

// The CCL panels' names: the CCLs of the sweep, or the scenario's own.
StatusOr<std::vector<std::string>> CclPanels(const SweepSpec& spec) {
  std::vector<std::string> out;
  if (spec.ccls.empty()) {
    FL_ASSIGN_OR_RETURN(Scenario sc, ParseScenario(spec.scenario_text, spec.scenario_path));
    out.push_back(sc.job.ccl);
  }
  for (const auto& c : spec.ccls) out.push_back(PanelName(c));
  return out;
}

// The point's text for CCL panel `panel`: its job.ccl and its `set:` keys applied (the
// scenario is checked with the CCL it runs on: a restart policy only a fail-stop one takes).
StatusOr<std::string> PanelYaml(const SweepSpec& spec, const SweepPoint& p, size_t panel) {
  if (panel >= spec.ccls.size()) return p.yaml;
  std::vector<std::pair<std::string, std::string>> sets = {{"job.ccl", spec.ccls[panel].name}};
  if (panel < spec.ccl_sets.size())
    sets.insert(sets.end(), spec.ccl_sets[panel].begin(), spec.ccl_sets[panel].end());
  return ApplySets(p.yaml, sets,
                   spec.source + ": ccls entry " + std::to_string(panel + 1) + " set");
}

// Why the scenario refuses the point's values on that CCL ("" when it takes them): the
// scenario's own loader says, with the CCL's name, as `faultline run --ccl` would check it.
std::string PointProblem(const SweepSpec& spec, const SweepPoint& p, size_t panel) {
  auto yaml = PanelYaml(spec, p, panel);
  if (!yaml.ok()) return yaml.status().message();
  auto sc = ParseScenario(*yaml, spec.scenario_path);
  return sc.ok() ? "" : sc.status().message();
}

}  // namespace

StatusOr<SweepMapInput> LoadSweepInput(const SweepSpec& spec, const std::string& db_path,
                                       const std::string& sweep_id) {
  FL_ASSIGN_OR_RETURN(std::vector<SweepPoint> points, PlanPoints(spec));
  SweepMapInput in;
  in.name = spec.name;
  in.sweep_id = sweep_id;
  for (size_t i = 0; i < std::min<size_t>(2, spec.axes.size()); ++i) {
    const SweepAxis& a = spec.axes[i];
    in.axes.push_back({a.label, a.path, a.values, a.log});
  }
  FL_ASSIGN_OR_RETURN(std::vector<std::string> ccl_panels, CclPanels(spec));
  std::map<std::pair<size_t, std::string>, SweepMapCell> cells;
  for (size_t pi = 0; pi < ccl_panels.size(); ++pi)
    for (const auto& p : points) {
      auto [mp, mpanel] = MapCell(spec, p.index, ccl_panels[pi]);
      if (std::find(in.panels.begin(), in.panels.end(), mpanel) == in.panels.end())
        in.panels.push_back(mpanel);
      SweepMapCell& c = cells[{mp, mpanel}];
      c.point = mp;
      c.panel = mpanel;
      c.invalid = PointProblem(spec, p, pi);
    }
  auto reader = reports::compare::RunReader::Open(db_path);
  std::map<std::pair<size_t, std::string>, std::vector<reports::compare::RunMetricSet>> sets;
  if (reader.ok()) {
    reports::RunFilter f;
    f.tags[kSweepTag] = sweep_id;
    FL_ASSIGN_OR_RETURN(std::vector<reports::RunRecord> runs, (*reader)->store().ListRuns(f));
    std::reverse(runs.begin(), runs.end());  // oldest first: repeats in run order
    for (auto& r : runs) {
      auto point = r.tags.find("sweep.point");
      auto panel = r.tags.find("sweep.panel");
      if (point == r.tags.end() || panel == r.tags.end()) continue;
      size_t pi = 0;
      if (std::sscanf(point->second.c_str(), "%zu", &pi) != 1 || pi >= points.size()) continue;
      auto [mp, mpanel] = MapCell(spec, pi, panel->second);
      auto it = cells.find({mp, mpanel});
      if (it == cells.end()) continue;
      if (r.status != reports::RunStatus::kPassed && r.status != reports::RunStatus::kFailed) {
        if (r.status != reports::RunStatus::kRunning) ++it->second.errors;
        continue;
      }
      FL_ASSIGN_OR_RETURN(reports::compare::RunMetricSet set, (*reader)->Load(r));
      it->second.run_ids.push_back(r.id);
      it->second.runs.push_back(reports::compare::SweepRunValues(set));
      sets[it->first].push_back(std::move(set));
    }
    // The repeats of each point as a suite shows a group's (repeats.h).
    for (auto& [key, group] : sets) {
      auto summary = reports::compare::SummariseRepeats(**reader, group, {});
      if (summary.ok()) cells[key].repeats = std::move(*summary);
    }
  }
  for (auto& [k, c] : cells) in.cells.push_back(std::move(c));
  return in;
}

SweepResult RunSweep(const SweepSpec& spec, const SweepOptions& options) {
  StopOnSignals stop;
  SweepResult result;
  const Nanos t0 = MonoNowNs();
  auto say = [&](const std::string& line) {
    if (!options.progress) return;
    std::fprintf(options.progress, "%s\n", line.c_str());
    std::fflush(options.progress);
  };
  auto fail = [&](int code, const std::string& message) {
    result.exit_code = code;
    result.message = message;
    result.seconds = static_cast<double>(MonoNowNs() - t0) / 1e9;
    return result;
  };
  auto points = PlanPoints(spec);
  if (!points.ok()) return fail(2, points.status().ToUserString());
  auto base = ParseScenario(spec.scenario_text, spec.scenario_path);
  if (!base.ok()) return fail(2, base.status().ToUserString());
  const std::string hash = PlanHash(spec);
  result.sweep_id = options.resume.empty() ? "s" + NewRunId().substr(1) : options.resume;

  std::vector<std::pair<std::string, std::optional<CclSpec>>> panels;
  if (spec.ccls.empty()) panels.push_back({base->job.ccl, std::nullopt});
  for (const auto& c : spec.ccls) panels.push_back({PanelName(c), c});

  // What an earlier invocation finished (resume).
  std::set<std::tuple<size_t, std::string, uint32_t>> done;
  if (!options.resume.empty()) {
    auto reader = reports::compare::RunReader::Open(options.db_path);
    if (!reader.ok())
      return fail(2, "--resume " + options.resume + ": " + reader.status().ToUserString());
    reports::RunFilter f;
    f.tags[kSweepTag] = options.resume;
    auto runs = (*reader)->store().ListRuns(f);
    if (!runs.ok()) return fail(3, runs.status().ToUserString());
    if (runs->empty())
      return fail(2, "--resume " + options.resume + ": no run of that sweep in " + options.db_path);
    for (const auto& r : *runs) {
      auto h = r.tags.find("sweep.plan");
      if (h == r.tags.end() || h->second != hash)
        return fail(2, "--resume " + options.resume +
                           ": that sweep planned other runs (another scenario text, axes, CCLs, "
                           "repeats, window or seed); start a new sweep instead");
      if (r.status != reports::RunStatus::kPassed && r.status != reports::RunStatus::kFailed)
        continue;
      size_t p = 0;
      uint32_t rep = 0;
      if (std::sscanf(r.tags.count("sweep.point") ? r.tags.at("sweep.point").c_str() : "", "%zu",
                      &p) == 1 &&
          std::sscanf(r.tags.count("sweep.rep") ? r.tags.at("sweep.rep").c_str() : "", "%u",
                      &rep) == 1 &&
          r.tags.count("sweep.panel"))
        done.insert({p, r.tags.at("sweep.panel"), rep});
    }
  }

  // The plan, in order: CCL by CCL, point by point, repeat by repeat.
  struct Job {
    size_t point;
    size_t panel;
    uint32_t rep;
  };
  std::vector<Job> jobs;
  // A point the scenario refuses is n/a; an axis that names no key the scenario knows (a
  // misspelt path: the loader says "unknown key") or one that makes every point refused is a
  // mistake of the sweep, said before anything runs. Each point is checked once.
  std::vector<std::vector<std::string>> problems(panels.size());
  {
    std::string first_problem;
    size_t refused = 0;
    for (size_t c = 0; c < panels.size(); ++c)
      for (const auto& pt : *points) {
        std::string why = PointProblem(spec, pt, c);
        problems[c].push_back(why);
        if (why.empty()) continue;
        ++refused;
        if (first_problem.empty()) first_problem = pt.label + ": " + why;
        if (why.find("unknown key") != std::string::npos)
          return fail(2, "point " + pt.label + ": " + why);
      }
    if (refused == points->size() * panels.size())
      return fail(2, "the scenario refuses every point, e.g. " + first_problem);
  }
  for (size_t c = 0; c < panels.size(); ++c)
    for (size_t i = 0; i < points->size(); ++i) {
      if (!problems[c][i].empty()) {
        ++result.invalid_points;
        continue;
      }
      for (uint32_t rep = 1; rep <= spec.repeats; ++rep) {
        if (done.count({i, panels[c].first, rep})) {
          ++result.already_done;
          continue;
        }
        jobs.push_back({i, c, rep});
      }
    }
  const std::string bin =
      options.faultline_bin.empty() ? SelfExeDir() + "/faultline" : options.faultline_bin;
  say("sweep " + spec.name + " " + result.sweep_id + ": " + std::to_string(points->size()) +
      " point(s) x " + std::to_string(panels.size()) + " CCL(s) x " + std::to_string(spec.repeats) +
      " repeat(s): " + std::to_string(jobs.size()) + " run(s) to go" +
      (result.already_done ? ", " + std::to_string(result.already_done) + " done before" : "") +
      (result.invalid_points
           ? ", " + std::to_string(result.invalid_points) + " point(s) the scenario refuses (n/a)"
           : "") +
      "; results in " + options.db_path);

  // One lab for every point (a local lab).
  SweepLab lab;
  if (options.keep_lab && !jobs.empty() && !base->lab.topology.empty()) {
    RemoveDeadSweepLabs(options.progress);
    if (Status st = lab.Up(*base); !st.ok())
      return fail(3, "building the sweep's lab: " + st.ToUserString());
    say("lab " + lab.name() + " is up for the sweep (each run checks it is as built)");
  }

  std::string tmp_template = "/tmp/fl_sweep_XXXXXX";
  const std::string tmp = mkdtemp(tmp_template.data()) ? tmp_template : "/tmp";
  const std::string point_file = tmp + "/point.yaml";
  std::set<std::string> seen;
  double spent = 0;
  int consecutive_errors = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    if (StopOnSignals::Requested()) break;
    const Job& j = jobs[k];
    const SweepPoint& pt = (*points)[j.point];
    const auto& [panel, ccl] = panels[j.panel];
    auto yaml = PanelYaml(spec, pt, j.panel);
    if (!yaml.ok()) return fail(2, yaml.status().ToUserString());
    if (Status st = WriteFileAtomic(point_file, *yaml); !st.ok()) {
      result.exit_code = 3;
      result.message = st.ToUserString();
      break;
    }
    std::vector<std::string> args = {"run", point_file, "--json", "-q", "--db", options.db_path};
    std::map<std::string, std::string> tags = options.tags;
    tags[kSweepTag] = result.sweep_id;
    tags["sweep.plan"] = hash;
    tags["sweep.point"] = std::to_string(pt.index);
    tags["sweep.panel"] = panel;
    tags["sweep.rep"] = std::to_string(j.rep);
    for (size_t a = 0; a < spec.axes.size(); ++a)
      tags["sweep." + spec.axes[a].label] = spec.axes[a].values[pt.coords[a]];
    for (const auto& [key, v] : tags) args.insert(args.end(), {"--tag", key + "=" + v});
    if (spec.seed) args.insert(args.end(), {"--seed", std::to_string(*spec.seed)});
    if (ccl) {
      args.insert(args.end(), {"--ccl", ccl->name});
      for (const auto& [key, v] : ccl->options)
        args.insert(args.end(), {"--ccl-option", key + "=" + v});
    }
    if (lab.up()) args.insert(args.end(), {"--on-lab", lab.name()});
    args.insert(args.end(), options.extra_run_args.begin(), options.extra_run_args.end());
    char head[64];
    std::snprintf(head, sizeof head, "[%zu/%zu] ", k + 1, jobs.size());
    const std::string what = std::string(head) + panel + " " + pt.label + " rep " +
                             std::to_string(j.rep) + "/" + std::to_string(spec.repeats);

    SweepRun r;
    r.point = pt.index;
    r.panel = panel;
    r.rep = j.rep;
    RunOutcome o;
    Nanos spawn = 0, exited = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
      spawn = WallNowNs();
      o = RunChildScenario(bin, args, options.db_path, spec.run_timeout_ns, tmp,
                           {kSweepTag, result.sweep_id}, &seen, &result.interrupted);
      exited = WallNowNs();
      // A lab an earlier run left dirty: rebuilt, and the run tried once more.
      if (lab.up() && o.exit_code == 3 &&
          o.error.find("is not as it was built") != std::string::npos && attempt == 0 &&
          !StopOnSignals::Requested()) {
        say(what + ": the lab was not clean (" + o.error.substr(0, 200) + "); rebuilding it");
        ++result.lab_rebuilds;
        if (Status st = lab.Rebuild(); !st.ok()) {
          o.error = "rebuilding the lab: " + st.ToUserString();
          break;
        }
        continue;
      }
      break;
    }
    r.exit_code = o.exit_code;
    r.run_id = o.run_id;
    r.seconds = o.seconds;
    r.error = o.error;
    spent += o.seconds;
    std::string verdict;
    if (o.exit_code == 0 || o.exit_code == 1) {
      MeasureOverhead(options.db_path, o.run_id, spawn, exited, &r);
      std::map<std::string, double> v;
      if (auto reader = reports::compare::RunReader::Open(options.db_path); reader.ok() && o.run)
        if (auto set = (*reader)->Load(*o.run); set.ok())
          v = reports::compare::SweepRunValues(*set);
      verdict = std::string(o.exit_code == 0 ? "PASS" : "FAIL") + " " + Brief(v);
    } else if (o.exit_code == 130) {
      verdict = "INTERRUPTED";
    } else {
      verdict = "ERROR (exit " + std::to_string(o.exit_code) + ") " + o.error.substr(0, 300);
    }
    const double eta =
        spent / static_cast<double>(k + 1) * static_cast<double>(jobs.size() - k - 1);
    char tail[128];
    std::snprintf(tail, sizeof tail, "  (run %s, %.1f s; %s left)",
                  o.run_id.empty() ? "-" : o.run_id.c_str(), o.seconds, FormatEta(eta).c_str());
    say(what + ": " + verdict + tail);
    const bool errored = r.exit_code != 0 && r.exit_code != 1 && r.exit_code != 130;
    result.runs.push_back(std::move(r));
    // Runs that error one after another (a lab or binary gone bad) end the sweep: what it
    // has is stored, and --resume goes on once the cause is fixed.
    consecutive_errors = errored ? consecutive_errors + 1 : 0;
    if (consecutive_errors >= kMaxConsecutiveErrors) {
      result.exit_code = 3;
      result.message = std::to_string(consecutive_errors) +
                       " runs in a row gave no result; stopped (fix the cause, then the same "
                       "command with --resume " +
                       result.sweep_id + ")";
      break;
    }
  }
  if (StopOnSignals::Requested()) result.interrupted = true;
  std::filesystem::remove_all(tmp);
  lab.Down();

  auto input = LoadSweepInput(spec, options.db_path, result.sweep_id);
  if (input.ok()) result.maps = reports::compare::BuildSweepMaps(std::move(*input));
  result.seconds = static_cast<double>(MonoNowNs() - t0) / 1e9;
  if (result.interrupted) {
    result.exit_code = 130;
    result.message = "interrupted: go on with the same command and --resume " + result.sweep_id;
  } else if (result.exit_code == 0) {
    for (const auto& r : result.runs)
      if (r.exit_code != 0 && r.exit_code != 1) {
        result.exit_code = r.exit_code == 2 ? 2 : 3;
        result.message = "a run gave no result: " + r.error.substr(0, 300);
      }
  }
  if (!input.ok() && result.exit_code == 0) {
    result.exit_code = 3;
    result.message = "reading the sweep's runs: " + input.status().ToUserString();
  }
  return result;
}

}  // namespace fl::harness::suite
