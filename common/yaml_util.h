// Reading YAML input (scenarios, topologies, suites, policies) with errors that say where.
//
// Every error from a YamlDoc is InvalidArgument with the message "FILE:LINE:COL: what is
// wrong", pointing at the offending key or value (1-based line and column), so a user can jump
// straight to it. Unknown keys are errors, never ignored: a misspelt "duraton" must not
// silently fall back to a default.
//
// Thread-safety: a YamlDoc is immutable after loading; concurrent reads are fine.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

enum class InputKind;  // common/input_file.h

// Bounds for numbers that come from outside (files, flags, the control plane). Every such
// number is checked against an explicit [lo, hi] before anything is sized, allocated, slept
// on or created from it: a count of 4000000000 or a lease of 0 is bad input, not a crash.
//
// BoundsProblem returns "" when lo <= v <= hi (and v is finite), else the complaint
// "WHAT must be between LO and HI, not V". Values are printed with their unit where one
// applies (durations as "500ms", sizes as "64 MiB", rates as "1 Gbit/s").
enum class Unit { kNone, kDuration, kBytes, kBitRate };
std::string FormatQuantity(double v, Unit unit);
template <typename T>
std::string BoundsProblem(std::string_view what, T v, T lo, T hi, Unit unit = Unit::kNone) {
  static_assert(std::is_arithmetic_v<T>);
  bool ok = lo <= v && v <= hi;
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(v);
  if (ok) return {};
  auto fmt = [unit](T x) {
    if constexpr (std::is_integral_v<T>) {
      if (unit == Unit::kNone) return std::to_string(x);
    }
    return FormatQuantity(static_cast<double>(x), unit);
  };
  return std::string(what) + " must be between " + fmt(lo) + " and " + fmt(hi) + ", not " + fmt(v);
}
// InvalidArgument "WHAT must be between ..." (the caller prefixes where WHAT came from).
template <typename T>
Status CheckBounds(std::string_view what, T v, T lo, T hi, Unit unit = Unit::kNone) {
  std::string problem = BoundsProblem(what, v, lo, hi, unit);
  return problem.empty() ? OkStatus() : InvalidArgumentError(problem);
}

// A node as YAML text (block style, a final newline): what the shrinker and the sweep write
// their scenario variants with.
std::string EmitYaml(const YAML::Node& node);

class YamlDoc {
 public:
  static StatusOr<YamlDoc> LoadFile(const std::string& path, InputKind kind);
  // name is what errors call the input (a path, or "<inline>").
  static StatusOr<YamlDoc> Parse(std::string_view text, std::string name);
  // How many documents this process has parsed (Parse and LoadFile): tests check with it that
  // a loader parses its file once.
  static uint64_t ParseCount();

  const YAML::Node& root() const { return root_; }
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  // "FILE:LINE:COL" of a node.
  std::string Where(const YAML::Node& node) const;
  // InvalidArgument "FILE:LINE:COL: message".
  Status Error(const YAML::Node& node, std::string_view message) const;

  Status ExpectMap(const YAML::Node& node, std::string_view what) const;
  Status ExpectSequence(const YAML::Node& node, std::string_view what) const;
  // map[key] as a list of min..max entries; `what` names the entries in the message, e.g.
  // "hosts must list 1 to 64 hosts" ("... at most 64 hosts" when min is 0). GetList: the key is
  // required ("missing required key 'KEY'"); GetListOr: a key left out is an empty list.
  StatusOr<YAML::Node> GetList(const YAML::Node& map, std::string_view key, size_t min, size_t max,
                               std::string_view what) const;
  StatusOr<YAML::Node> GetListOr(const YAML::Node& map, std::string_view key, size_t min,
                                 size_t max, std::string_view what) const;
  // REQUIRES-checks that node is a map whose keys are all in allowed; the error for an unknown
  // key points at that key and lists the allowed ones.
  Status CheckKeys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                   std::string_view what) const;

  bool Has(const YAML::Node& map, std::string_view key) const {
    return map.IsMap() && map[std::string(key)].IsDefined();
  }

  // A scalar converted to T, with the node's location on failure.
  template <typename T>
  StatusOr<T> As(const YAML::Node& node, std::string_view what) const {
    if (!node.IsScalar()) return Error(node, std::string(what) + " must be a single value");
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      return Error(node, "'" + node.Scalar() + "' is not a valid " + std::string(what));
    }
  }
  // A required key of a map.
  template <typename T>
  StatusOr<T> Get(const YAML::Node& map, std::string_view key) const {
    YAML::Node n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull())
      return Error(map, "missing required key '" + std::string(key) + "'");
    return As<T>(n, key);
  }
  // An optional key of a map.
  template <typename T>
  StatusOr<T> GetOr(const YAML::Node& map, std::string_view key, T fallback) const {
    YAML::Node n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull()) return fallback;
    return As<T>(n, key);
  }

  // Quantities with units (see common/units.h).
  StatusOr<Nanos> AsDuration(const YAML::Node& node, std::string_view what) const;
  StatusOr<uint64_t> AsBytes(const YAML::Node& node, std::string_view what) const;
  StatusOr<uint64_t> AsBitRate(const YAML::Node& node, std::string_view what) const;
  StatusOr<Nanos> GetDurationOr(const YAML::Node& map, std::string_view key, Nanos fallback) const;

  // Bounded numbers (see BoundsProblem): the value, or "FILE:LINE:COL: KEY must be between LO
  // and HI, not V". Use these for every number from input; the unbounded As/Get above are for
  // strings and flags.
  template <typename T>
  StatusOr<T> AsBounded(const YAML::Node& node, std::string_view what, T lo, T hi) const {
    FL_ASSIGN_OR_RETURN(T v, As<T>(node, what));
    if (std::string p = BoundsProblem(what, v, lo, hi); !p.empty()) return Error(node, p);
    return v;
  }
  template <typename T>
  StatusOr<T> GetBounded(const YAML::Node& map, std::string_view key, T lo, T hi) const {
    YAML::Node n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull())
      return Error(map, "missing required key '" + std::string(key) + "'");
    return AsBounded<T>(n, key, lo, hi);
  }
  template <typename T>
  StatusOr<T> GetBoundedOr(const YAML::Node& map, std::string_view key, T fallback, T lo,
                           T hi) const {
    YAML::Node n = map[std::string(key)];
    if (!n.IsDefined() || n.IsNull()) return fallback;
    return AsBounded<T>(n, key, lo, hi);
  }
  StatusOr<Nanos> AsDurationIn(const YAML::Node& node, std::string_view what, Nanos lo,
                               Nanos hi) const;
  // fallback is returned as is when the key is absent (it need not lie in [lo, hi], e.g. 0 for
  // "not set").
  StatusOr<Nanos> GetDurationIn(const YAML::Node& map, std::string_view key, Nanos fallback,
                                Nanos lo, Nanos hi) const;
  StatusOr<uint64_t> AsBytesIn(const YAML::Node& node, std::string_view what, uint64_t lo,
                               uint64_t hi) const;
  StatusOr<uint64_t> AsBitRateIn(const YAML::Node& node, std::string_view what, uint64_t lo,
                                 uint64_t hi) const;

 private:
  YamlDoc(std::string name, std::string text, YAML::Node root)
      : name_(std::move(name)), text_(std::move(text)), root_(std::move(root)) {}

  std::string name_;
  std::string text_;
  YAML::Node root_;
};

}  // namespace fl
