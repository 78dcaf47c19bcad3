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

#include <initializer_list>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

class YamlDoc {
 public:
  static StatusOr<YamlDoc> LoadFile(const std::string& path);
  // name is what errors call the input (a path, or "<inline>").
  static StatusOr<YamlDoc> Parse(std::string_view text, std::string name);

  const YAML::Node& root() const { return root_; }
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  // "FILE:LINE:COL" of a node.
  std::string Where(const YAML::Node& node) const;
  // InvalidArgument "FILE:LINE:COL: message".
  Status Error(const YAML::Node& node, std::string_view message) const;

  Status ExpectMap(const YAML::Node& node, std::string_view what) const;
  Status ExpectSequence(const YAML::Node& node, std::string_view what) const;
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

 private:
  YamlDoc(std::string name, std::string text, YAML::Node root)
      : name_(std::move(name)), text_(std::move(text)), root_(std::move(root)) {}

  std::string name_;
  std::string text_;
  YAML::Node root_;
};

}  // namespace fl
