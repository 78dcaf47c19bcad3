// Firmware acceptance (`faultline accept`, and `faultline serve`'s /accept page): a candidate
// (new NIC firmware, a new ftccl, a new kernel) against a baseline over the same scenarios, as
// one verdict a vendor can be handed: ACCEPTED when no metric of any scenario regressed,
// REJECTED otherwise, with a line per scenario and every metric's medians, interval and
// verdict (compare.h's method, docs/suites.md). One computation, three renderings (HTML that
// prints well, Markdown, JSON): the CLI and the server give the same verdicts for the same
// store, selectors and options (the bootstrap is seeded).
//
// Thread-safety: RunAcceptance reads through the reader (one thread); renderings are pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/compare/compare.h"

namespace fl::reports::compare {

struct AcceptanceOptions {
  std::string baseline, candidate;  // run selectors: a run id, "latest", tag:k=v[,k=v]
  std::optional<std::string> scenario;
  CompareOptions compare;
};

struct ScenarioVerdict {
  std::string group;  // scenario [ccl]
  int regressed = 0, improved = 0, changed = 0, same = 0, info = 0, missing = 0;
  bool passed() const { return regressed == 0; }
};

struct Acceptance {
  std::string baseline, candidate;
  Comparison comparison;
  std::vector<ScenarioVerdict> scenarios;  // in the comparison's group order
  bool accepted() const;
};

// NotFound when a selector names no finished run; InvalidArgument when no scenario has runs
// on both sides.
[[nodiscard]] StatusOr<Acceptance> RunAcceptance(RunReader& reader, const AcceptanceOptions& o);

std::string AcceptanceHtml(const Acceptance& a);
std::string AcceptanceMarkdown(const Acceptance& a);
std::string AcceptanceJson(const Acceptance& a);
std::string AcceptanceText(const Acceptance& a);

}  // namespace fl::reports::compare
