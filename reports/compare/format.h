// Values for people, shared by the renderings of compare, history, the ledger summary and
// repeats (implemented in compare.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fl::reports::compare {

std::string FormatValue(double v);
// A value in its unit, for people: B/s scaled to kB/s, MB/s or GB/s ("75.53 MB/s"); ms as
// "12.3 ms", "850 µs" under 1 ms, "12.35 s" from 10 s; s and GPU-s with their unit; ratios
// and counts bare. Never an exponent for values a run produces.
std::string FormatQuantity(double v, std::string_view unit);
// Cliff's delta with its magnitude: "+0.62 large", "-0.05 negligible"; "" when unset.
std::string EffectText(std::optional<double> cliffs_delta);

}  // namespace fl::reports::compare
