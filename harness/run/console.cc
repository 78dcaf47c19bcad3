#include "harness/run/console.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "common/units.h"
#include "harness/run/job.h"
#include "reports/metrics/metrics.h"

namespace fl::harness::run {

void Console::Say(const std::string& line, Tone tone) {
  if (GetVerbosity() == Verbosity::kQuiet) return;
  const std::string text = Tint(line, tone, colour_);
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s\n", text.c_str());
  else
    std::fprintf(stderr, "%s\n", text.c_str());
  last_progress_print_ = 0;  // redraw the progress line at once
}

void Console::PrintFaultEvents(const FaultBook& book, bool all) {
  {
    std::lock_guard lock(progress_.mu);
    for (auto& n : progress_.notable) unsaid_.push_back(std::move(n));
    progress_.notable.clear();
  }
  // Events reach us some 10-50 ms after they happen (the agents flush every 50 ms): whatever
  // happened before an event 300 ms old has arrived, so it can be judged first or not.
  constexpr Nanos kSettle = 300 * kNsPerMs;
  Nanos settled = WallNowNs() - kSettle;
  // A fault fired ahead whose answer is not in yet (a switch over SSH takes a second) may own
  // what came after its time: those events wait for its answer.
  for (const auto& f : book.faults())
    if (f.ahead && f.record.scheduled_wall_ns)
      settled = std::min(settled, *f.record.scheduled_wall_ns - 1);
  std::vector<reports::EventRecord> events;
  for (auto it = unsaid_.begin(); it != unsaid_.end();) {
    if (all || it->wall_ns <= settled) {
      events.push_back(std::move(*it));
      it = unsaid_.erase(it);
    } else {
      ++it;
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.wall_ns < b.wall_ns; });
  for (const reports::EventRecord& e : events) {
    if (e.kind == "rank_exit") {
      if (stopping_) continue;
      auto d = nlohmann::json::parse(e.detail_json, nullptr, false);
      std::string how = d.contains("signal")
                            ? "was killed by signal " + d["signal"].dump()
                            : "exited with code " + d.value("code", nlohmann::json(0)).dump();
      Say("[rank] rank " + std::to_string(e.rank) + " " + how, Tone::kBad);
      // The end of its log (rank-N.log): at most the last 8 lines here; the store keeps 4 KiB.
      if (d.contains("log_tail") && d["log_tail"].is_string()) {
        std::vector<std::string> lines;
        std::string t = d["log_tail"].get<std::string>();
        for (size_t at = 0; at < t.size();) {
          size_t nl = t.find('\n', at);
          if (nl == std::string::npos) nl = t.size();
          if (nl > at) lines.push_back(t.substr(at, std::min<size_t>(nl - at, 200)));
          at = nl + 1;
        }
        for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i)
          Say("  | " + lines[i], Tone::kDim);
      }
      continue;
    }
    // The faults it answers (docs/metrics.md): those whose window holds it — the latest one
    // injected by then, and the faults it is nested in (after_event / during).
    const bool restored = e.kind == reports::kEventPathRestored;
    for (const auto& f : book.faults()) {
      if (f.failed || !book.InWindow(f, e.kind, e.wall_ns) ||
          !told_[f.plan.id].insert(e.kind).second)
        continue;
      const Nanos since = std::max<Nanos>(
          0, e.wall_ns - (restored ? *f.record.reverted_wall_ns : *f.record.effective_wall_ns));
      const std::string who = "rank " + std::to_string(e.rank);
      if (e.kind == reports::kEventFaultDetected)
        Say("[fault] " + f.plan.id + " detected by " + who + " after " + FormatDuration(since),
            Tone::kFault);
      else if (e.kind == reports::kEventFailoverDone)
        Say("[fault] " + f.plan.id + " " + who + " failed over after " + FormatDuration(since),
            Tone::kGood);
      else
        Say("[fault] " + f.plan.id + " path restored (" + who + ") " + FormatDuration(since) +
                " after the revert",
            Tone::kGood);
    }
  }
}

void Console::PrintProgress(const FaultBook& book, const std::string& phase, bool force) {
  if (GetVerbosity() == Verbosity::kQuiet) return;
  Nanos now = MonoNowNs();
  if (!force && now - last_progress_print_ < (tty_ ? 250 * kNsPerMs : 5 * kNsPerSec)) return;
  last_progress_print_ = now;
  double rate = 0;
  {
    std::lock_guard lock(progress_.mu);
    progress_.rate.emplace_back(now, progress_.samples);
    while (progress_.rate.size() > 2 && now - progress_.rate.front().first > 2 * kNsPerSec)
      progress_.rate.pop_front();
    auto& [t0, s0] = progress_.rate.front();
    if (now > t0)
      rate = static_cast<double>(progress_.samples - s0) / (static_cast<double>(now - t0) / 1e9) /
             std::max(1, run_.prepared.world);
  }
  int64_t it = progress_.MinIteration(ProgressRanks(run_.prepared));
  std::string next = "none";
  for (const auto& f : book.faults()) {
    if (f.injected || f.skipped) continue;
    if (!f.plan.anchor.empty())
      next = f.plan.id + " " + f.plan.kind + (f.plan.during ? " during " : " after ") +
             f.plan.anchor + (f.plan.during ? "" : "'s " + f.plan.anchor_event);
    else if (f.plan.after_iteration_trigger)
      next = f.plan.id + " " + f.plan.kind + " after iteration " +
             std::to_string(f.plan.after_iteration) + (f.ahead ? ", armed at " + f.agent : "");
    else if (book.steady_mono() > 0)
      next = f.plan.id + " " + f.plan.kind + " in " +
             FormatDuration(std::max<Nanos>(0, book.steady_mono() + f.plan.at_ns - now));
    else
      next = f.plan.id + " " + f.plan.kind + " after warm-up";
    break;
  }
  // The fault in effect (the latest injected, with how many more there are) and its time left.
  std::string active;
  int in_effect = 0;
  for (const auto& f : book.faults()) {
    if (!f.injected || f.reverted || f.failed || f.ahead) continue;
    ++in_effect;
    active = f.plan.id + " " + f.plan.kind + " on " + f.plan.target +
             (f.revert_at_mono > 0
                  ? ", " + FormatDuration(std::max<Nanos>(0, f.revert_at_mono - now)) + " left"
                  : ", until the end");
  }
  if (in_effect > 1) active += " (+" + std::to_string(in_effect - 1) + " more)";
  std::string done = "iteration " + std::to_string(it + 1);
  if (run_.prepared.scenario.job.iterations)
    done += "/" + std::to_string(run_.prepared.scenario.job.iterations);
  else if (book.steady_mono() > 0)
    done += " (" + FormatDuration(now - book.steady_mono()) + " of steady state)";
  char line[512];
  std::snprintf(line, sizeof line, "[%s] %s  %.1f it/s  %s%snext fault: %s", phase.c_str(),
                done.c_str(), rate,
                active.empty() ? "" : "active: ", active.empty() ? "" : (active + "  ").c_str(),
                next.c_str());
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s", line);
  else
    std::fprintf(stderr, "%s\n", line);
}

}  // namespace fl::harness::run
