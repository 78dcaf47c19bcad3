// What `faultline sweep` runs: a scenario over a grid of values of its own keys (the fault
// space), each grid point on each CCL, each `repeats` times. Pure: parsing and planning only;
// sweep_runner.h runs the plan. The format is documented in docs/sweeps.md.
//
//   --vary faults[0].every=100ms..10s:log:12   12 values from 100 ms to 10 s, evenly in log
//   --vary faults[0].duration=20ms,100ms,500ms  these values
//   --vary job.size=64KiB..4MiB:lin:4          4 values, evenly spaced
//
// A path names a key of the scenario file: map keys joined by '.', a sequence element as
// [index]. A varied fault period (`every`) keeps the fault firing for the sweep's window:
// its count becomes max(1, floor(window / every)), so that a short period flaps many times
// and a long one once, over the same span of the job.
//
// Errors are InvalidArgument naming where the bad text came from ("--vary '...'", or
// "FILE:LINE:COL" of a sweep file).
//
// Thread-safety: stateless functions returning values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/suite/suite_file.h"

namespace fl::harness::suite {

// What a varied value is, for formatting and for the map's axis.
enum class AxisUnit { kNone, kDuration, kBytes };

struct SweepAxis {
  std::string path;   // "faults[0].every"
  std::string label;  // the last key: "every" (the whole path when two axes share it)
  AxisUnit unit = AxisUnit::kNone;
  bool log = false;  // a log-spaced range (the map draws it so)
  // What is written into the scenario, per value ("100ms"), and the value as a number in the
  // unit's base (seconds, bytes; NaN for words such as a CCL's name).
  std::vector<std::string> values;
  std::vector<double> numbers;
  std::string where;  // where the axis was given, for messages
};

// "PATH=LO..HI:log:N", "PATH=LO..HI:lin:N" (N from 2 to 100) or "PATH=V1,V2,..." (up to
// 100 values). Durations, byte sizes and plain numbers; a list may hold words. Range values
// are rounded to 3 significant digits and must stay distinct.
[[nodiscard]] StatusOr<SweepAxis> ParseAxis(std::string_view text, const std::string& where);

struct SweepSpec {
  std::string name;           // the sweep file's `name`, else the scenario's name
  std::string source;         // the sweep file, or the scenario when run without one
  std::string scenario_path;  // resolved
  std::string scenario_text;
  std::vector<SweepAxis> axes;  // 1 to 3 (the map is drawn over the first two)
  std::vector<CclSpec> ccls;    // empty: the scenario's own
  // Per CCL (parallel to ccls): scenario keys set for its runs only (`set:` of a ccls entry,
  // path -> value), e.g. a restart policy that only a fail-stop CCL takes.
  std::vector<std::vector<std::pair<std::string, std::string>>> ccl_sets;
  uint32_t repeats = 1;
  Nanos window_ns = 0;  // 0: a varied `every` keeps the scenario's count
  std::optional<uint64_t> seed;
  Nanos run_timeout_ns = 10 * 60 * kNsPerSec;
};

// A sweep file (configs/sweeps/*.yaml):
//   name, description, scenario (resolved beside the file), vary: [AXIS, ...] (ParseAxis
//   strings), ccls (as in suites, and an entry may add `set: {PATH: VALUE}`), repeats,
//   window, seed, run_timeout.
[[nodiscard]] StatusOr<SweepSpec> LoadSweepFile(const std::string& path);
// The same from text; `name` is what errors call it and what the scenario is resolved beside.
[[nodiscard]] StatusOr<SweepSpec> ParseSweep(std::string_view text, const std::string& name);
// A sweep of a scenario file alone (its axes come from --vary).
[[nodiscard]] StatusOr<SweepSpec> SweepOfScenario(const std::string& scenario_path);
// Whether a YAML file is a sweep file (it has `vary` or `scenario` at the top) rather than a
// scenario; a file that cannot be read is neither (false).
bool LooksLikeSweepFile(const std::string& path);
// --vary axes replace the file's axis of the same path, or are added after them.
[[nodiscard]] Status ApplyVaryFlags(const std::vector<std::string>& flags, SweepSpec* spec);
// The axes' count, the grid size and the values are bounded (at most 10,000 runs in all).
[[nodiscard]] Status CheckSweep(const SweepSpec& spec);

struct SweepPoint {
  size_t index = 0;            // row-major: the last axis varies fastest
  std::vector<size_t> coords;  // per axis
  std::string label;           // "every=100ms duration=20ms"
  std::string yaml;            // the point's scenario text
};

// Every point's scenario: the base text with the point's values set (and the window's count),
// its lab path made absolute (the text is run from a temporary file). InvalidArgument naming
// the axis when a path does not name a key of the scenario (a missing last map key is added).
[[nodiscard]] StatusOr<std::vector<SweepPoint>> PlanPoints(const SweepSpec& spec);

// A point's text with a CCL's `set:` keys applied (sweep file ccls entries).
[[nodiscard]] StatusOr<std::string> ApplySets(
    const std::string& yaml, const std::vector<std::pair<std::string, std::string>>& sets,
    const std::string& where);

// Identifies what a sweep runs (scenario text, axes, CCLs, repeats, window, seed): a resumed
// sweep must plan the same runs.
std::string PlanHash(const SweepSpec& spec);

}  // namespace fl::harness::suite
