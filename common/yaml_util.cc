#include "common/yaml_util.h"
#include "common/input_file.h"

#include <atomic>
#include <cstdio>

#include "common/file_util.h"
#include "common/units.h"

namespace fl {

StatusOr<YamlDoc> YamlDoc::LoadFile(const std::string& path, InputKind kind) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kind));
  return Parse(text, path);
}

namespace {
std::atomic<uint64_t> parse_count{0};
}  // namespace

uint64_t YamlDoc::ParseCount() { return parse_count.load(std::memory_order_relaxed); }

StatusOr<YamlDoc> YamlDoc::Parse(std::string_view text, std::string name) {
  parse_count.fetch_add(1, std::memory_order_relaxed);
  try {
    YAML::Node root = YAML::Load(std::string(text));
    return YamlDoc(std::move(name), std::string(text), std::move(root));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(name + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) +
                                ": YAML syntax error: " + e.msg);
  }
}

std::string YamlDoc::Where(const YAML::Node& node) const {
  YAML::Mark m = node.Mark();
  if (m.line < 0) return name_;
  return name_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Status YamlDoc::Error(const YAML::Node& node, std::string_view message) const {
  return InvalidArgumentError(Where(node) + ": " + std::string(message));
}

Status YamlDoc::ExpectMap(const YAML::Node& node, std::string_view what) const {
  if (!node.IsDefined() || !node.IsMap())
    return Error(node, std::string(what) + " must be a mapping of keys to values");
  return OkStatus();
}

Status YamlDoc::ExpectSequence(const YAML::Node& node, std::string_view what) const {
  if (!node.IsDefined() || !node.IsSequence())
    return Error(node, std::string(what) + " must be a list");
  return OkStatus();
}

StatusOr<YAML::Node> YamlDoc::GetList(const YAML::Node& map, std::string_view key, size_t min,
                                      size_t max, std::string_view what) const {
  const std::string k(key);
  if (!Has(map, key)) return Error(map, "missing required key '" + k + "'");
  const YAML::Node list = map[k];
  FL_RETURN_IF_ERROR(ExpectSequence(list, k));
  if (list.size() < min || list.size() > max) {
    const std::string range = min == 0 ? "at most " + std::to_string(max)
                                       : std::to_string(min) + " to " + std::to_string(max);
    return Error(list, k + " must list " + range + " " + std::string(what));
  }
  return list;
}

StatusOr<YAML::Node> YamlDoc::GetListOr(const YAML::Node& map, std::string_view key, size_t min,
                                        size_t max, std::string_view what) const {
  if (!Has(map, key)) return YAML::Node(YAML::NodeType::Sequence);
  return GetList(map, key, min, max, what);
}

Status YamlDoc::CheckKeys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                          std::string_view what) const {
  FL_RETURN_IF_ERROR(ExpectMap(map, what));
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return Error(it->first, "unknown key '" + key + "' in " + std::string(what) +
                                  " (allowed: " + list + ")");
    }
  }
  return OkStatus();
}

StatusOr<Nanos> YamlDoc::AsDuration(const YAML::Node& node, std::string_view what) const {
  if (!node.IsScalar())
    return Error(node, std::string(what) + " must be a duration such as 500ms or 2s");
  auto d = ParseDuration(node.Scalar());
  if (!d.ok()) return Error(node, std::string(what) + ": " + d.status().message());
  return *d;
}

StatusOr<uint64_t> YamlDoc::AsBytes(const YAML::Node& node, std::string_view what) const {
  if (!node.IsScalar()) return Error(node, std::string(what) + " must be a size such as 64MiB");
  auto b = ParseBytes(node.Scalar());
  if (!b.ok()) return Error(node, std::string(what) + ": " + b.status().message());
  return *b;
}

StatusOr<uint64_t> YamlDoc::AsBitRate(const YAML::Node& node, std::string_view what) const {
  if (!node.IsScalar()) return Error(node, std::string(what) + " must be a rate such as 1gbit");
  auto r = ParseBitRate(node.Scalar());
  if (!r.ok()) return Error(node, std::string(what) + ": " + r.status().message());
  return *r;
}

StatusOr<Nanos> YamlDoc::GetDurationOr(const YAML::Node& map, std::string_view key,
                                       Nanos fallback) const {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return fallback;
  return AsDuration(n, key);
}

std::string FormatQuantity(double v, Unit unit) {
  switch (unit) {
    case Unit::kDuration: {
      // Whole hours and minutes as such ("168h", not "6.05e+05s"): bounds are round numbers.
      const Nanos ns = static_cast<Nanos>(v);
      constexpr Nanos kMin = 60 * kNsPerSec, kHour = 60 * kMin;
      if (ns >= kHour && ns % kHour == 0) return std::to_string(ns / kHour) + "h";
      if (ns >= kMin && ns % kMin == 0) return std::to_string(ns / kMin) + "m";
      return FormatDuration(ns);
    }
    case Unit::kBytes:
      return FormatBytes(static_cast<uint64_t>(v));
    case Unit::kBitRate:
      return FormatBitRate(static_cast<uint64_t>(v));
    case Unit::kNone:
      break;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

namespace {

// v when it is within [lo, hi]; else the bounds problem at node.
template <typename T>
StatusOr<T> Bounded(const YamlDoc& doc, const YAML::Node& node, std::string_view what,
                    StatusOr<T> v, T lo, T hi, Unit unit) {
  if (!v.ok()) return v.status();
  if (std::string p = BoundsProblem(what, *v, lo, hi, unit); !p.empty()) return doc.Error(node, p);
  return v;
}

}  // namespace

StatusOr<Nanos> YamlDoc::AsDurationIn(const YAML::Node& node, std::string_view what, Nanos lo,
                                      Nanos hi) const {
  return Bounded(*this, node, what, AsDuration(node, what), lo, hi, Unit::kDuration);
}

StatusOr<Nanos> YamlDoc::GetDurationIn(const YAML::Node& map, std::string_view key, Nanos fallback,
                                       Nanos lo, Nanos hi) const {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return fallback;
  return AsDurationIn(n, key, lo, hi);
}

StatusOr<uint64_t> YamlDoc::AsBytesIn(const YAML::Node& node, std::string_view what, uint64_t lo,
                                      uint64_t hi) const {
  return Bounded(*this, node, what, AsBytes(node, what), lo, hi, Unit::kBytes);
}

StatusOr<uint64_t> YamlDoc::AsBitRateIn(const YAML::Node& node, std::string_view what, uint64_t lo,
                                        uint64_t hi) const {
  return Bounded(*this, node, what, AsBitRate(node, what), lo, hi, Unit::kBitRate);
}

std::string EmitYaml(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fl
