// Loads a scenario file into a Scenario, validating everything it can before anything is
// provisioned: unknown keys, bad durations/sizes, unknown fault kinds, targets that are not in
// the lab. Every error is InvalidArgument "FILE:LINE:COL: message".
//
// What counts as a valid fault kind and target comes from a FaultCatalog, so the loader does
// not depend on the lab or the injectors: the coordinator builds one from the topology and the
// injector registry; tests build one by hand.
//
// Thread-safety: stateless functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/scenario/scenario.h"

namespace fl::harness {

// The bounds on every number a scenario holds (docs/scenarios.md lists them). A value outside
// is InvalidArgument at its file:line:col before anything is planned, allocated or created.
namespace limits {
inline constexpr Nanos kMaxJobDuration = 7 * 24 * 3600 * kNsPerSec;  // job.duration
inline constexpr Nanos kMaxFaultTime = 7 * 24 * 3600 * kNsPerSec;    // at, every, duration, jitter
inline constexpr uint32_t kMaxFiringsPerFault = 10000;               // count
inline constexpr size_t kMaxFaults = 1000;                           // entries under faults:
inline constexpr size_t kMaxPlannedFirings = 100000;                 // sum of the counts
inline constexpr uint64_t kMaxIterations = 1000000000000ull;         // iterations, after_iteration
inline constexpr uint64_t kMaxWarmupIterations = 1000000000ull;
inline constexpr uint64_t kMaxSizeBytes = 16ull << 30;       // job.size: 16 GiB per rank
inline constexpr Nanos kMaxTimeout = 24 * 3600 * kNsPerSec;  // collective/hang timeouts
inline constexpr double kMaxExpectMs = 24 * 3600 * 1000.0;   // max_detection/recovery_ms
inline constexpr double kMaxThroughputLossS = 7 * 24 * 3600.0;
inline constexpr uint32_t kMaxRestarts = 100;
inline constexpr Nanos kMaxRestartDelay = 3600 * kNsPerSec;
inline constexpr size_t kMaxParams = 64;           // params per fault
inline constexpr size_t kMaxEnv = 64;              // job.env entries
inline constexpr size_t kMaxEnvValueBytes = 4096;  // one job.env value
inline constexpr size_t kMaxCommandArgs = 48;      // job.command entries
}  // namespace limits

class FaultCatalog {
 public:
  virtual ~FaultCatalog() = default;
  // Known injector names.
  virtual std::vector<std::string> Kinds() const = 0;
  // Target classes a kind accepts ("nic", "tor_port", "container", ...); first is the default.
  virtual std::vector<std::string> TargetClasses(const std::string& kind) const = 0;
  // All targets of a class in this lab, in a stable order (draws index into it).
  virtual std::vector<std::string> Targets(const std::string& target_class) const = 0;
};

// A catalog given as tables, for tests and for labs described by inventories.
class StaticFaultCatalog : public FaultCatalog {
 public:
  void AddKind(std::string kind, std::vector<std::string> classes);
  void AddTargets(std::string target_class, std::vector<std::string> targets);
  std::vector<std::string> Kinds() const override;
  std::vector<std::string> TargetClasses(const std::string& kind) const override;
  std::vector<std::string> Targets(const std::string& target_class) const override;

 private:
  std::map<std::string, std::vector<std::string>> kinds_;
  std::map<std::string, std::vector<std::string>> targets_;
};

// Parses and checks the file's structure and values; lab.topology is resolved relative to the
// scenario file's folder, then to the current directory.
StatusOr<Scenario> LoadScenarioFile(const std::string& path);
StatusOr<Scenario> ParseScenario(std::string_view text, const std::string& name);

// Checks kinds and targets against a catalog; errors point at the fault in the file.
Status ValidateAgainstCatalog(const Scenario& scenario, const FaultCatalog& catalog);

uint64_t Fnv1a64(std::string_view text);

// Empty when every option is one `ccl` declares in its schema (its CclPlugin,
// ccl_under_test/tools/ccl_plugins.h; `faultline ccls` lists them) with a valid value; otherwise
// the problem, e.g. "unknown ftccl option 'dead_ms' (known: ...)".
std::string CheckCclOptions(const std::string& ccl,
                            const std::map<std::string, std::string>& options);

// Command-line overrides of the job's CCL and its options (`faultline run --ccl/--ccl-option`):
// a new ccl drops the file's ccl_options (they belong to the other library); options are
// merged over the file's. InvalidArgument naming the flag for a bad name or value.
Status ApplyCclOverrides(Scenario& scenario, const std::string& ccl,
                         const std::map<std::string, std::string>& options);

// `--lab FILE` (run, replay, suite): the scenario runs on the lab that FILE describes (a
// topology or an inventory) instead of its own `lab:`. Nothing is read here; an empty path
// changes nothing.
void ApplyLabOverride(Scenario& scenario, const std::string& lab_file);

}  // namespace fl::harness
