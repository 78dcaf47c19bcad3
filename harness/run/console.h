// What a person at the terminal sees of a run (stderr): lines (Say), the progress line that
// each redraw replaces (on a terminal) or that is repeated every 5 s (in a file), and a line
// for each fault event as it is told apart. It reads the run's state and never decides.
//
// Thread-safety: driver's thread only.
#pragma once

#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/narrate.h"
#include "harness/run/fault_book.h"
#include "harness/run/run_context.h"
#include "harness/run/telemetry_sink.h"
#include "reports/store/records.h"

namespace fl::harness::run {

class Console {
 public:
  Console(const RunContext& run, Progress& progress) : run_(run), progress_(progress) {}

  // One line for a person, above the progress line (which the next PrintProgress redraws).
  void Say(const std::string& line, Tone tone = Tone::kPlain);
  // The progress line: iteration, rate, the fault in effect and the next one (at most every
  // 250 ms on a terminal, every 5 s elsewhere, unless forced).
  void PrintProgress(const FaultBook& book, const std::string& phase, bool force = false);
  // The fault lines of the events that happened at least kSettle ago (all of them: `all`),
  // in the order they happened: agents send in batches, so the first to arrive is not always
  // the first to have happened.
  void PrintFaultEvents(const FaultBook& book, bool all = false);
  // The run stops its ranks: their exits from here on are the run's own doing, not news.
  void Stopping() { stopping_ = true; }
  bool tty() const { return tty_; }  // stderr is a terminal

 private:
  const RunContext& run_;
  Progress& progress_;
  Nanos last_progress_print_ = 0;
  bool stopping_ = false;
  std::vector<reports::EventRecord> unsaid_;  // arrived, not yet printed
  // fault id -> event kinds already printed for it (the first rank's only)
  std::map<std::string, std::set<std::string>> told_;
  bool tty_ = isatty(2);
  bool colour_ = ColourOnStderr();
};

}  // namespace fl::harness::run
