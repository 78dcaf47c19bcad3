#include "common/options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "common/enum_names.h"
#include "common/units.h"
#include "common/yaml_util.h"

namespace fl {
namespace {

std::string Join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

std::optional<int64_t> ParseInteger(std::string_view v) {
  int64_t x = 0;
  if (v.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return x;
}

bool AllDigits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

constexpr NamedValue<OptionType> kOptionTypeNames[] = {{OptionType::kInt, "int"},
                                                       {OptionType::kBytes, "bytes"},
                                                       {OptionType::kDurationMs, "duration-ms"},
                                                       {OptionType::kBool, "bool"},
                                                       {OptionType::kEnum, "enum"},
                                                       {OptionType::kString, "string"}};

std::string_view OptionTypeName(OptionType type) { return NameIn(kOptionTypeNames, type, "?"); }

std::string OptionSpec::RangeText() const {
  switch (type) {
    case OptionType::kInt:
      return std::to_string(min) + ".." + std::to_string(max);
    case OptionType::kBytes:
      return FormatQuantity(static_cast<double>(min), Unit::kBytes) + ".." +
             FormatQuantity(static_cast<double>(max), Unit::kBytes);
    case OptionType::kDurationMs:
      return FormatQuantity(static_cast<double>(min * kNsPerMs), Unit::kDuration) + ".." +
             FormatQuantity(static_cast<double>(max * kNsPerMs), Unit::kDuration);
    case OptionType::kBool:
      return "true|false";
    case OptionType::kEnum:
      return Join(choices, "|");
    case OptionType::kString:
      return "";
  }
  return "";
}

const OptionValues::Value* OptionValues::Typed(std::string_view name, OptionType type) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.type != type ? nullptr : &it->second;
}

std::optional<int64_t> OptionValues::Int(std::string_view name) const {
  if (const Value* v = Typed(name, OptionType::kInt)) return v->number;
  return std::nullopt;
}

std::optional<uint64_t> OptionValues::Bytes(std::string_view name) const {
  if (const Value* v = Typed(name, OptionType::kBytes)) return static_cast<uint64_t>(v->number);
  return std::nullopt;
}

std::optional<Nanos> OptionValues::Duration(std::string_view name) const {
  if (const Value* v = Typed(name, OptionType::kDurationMs)) return v->number;
  return std::nullopt;
}

std::optional<bool> OptionValues::Bool(std::string_view name) const {
  if (const Value* v = Typed(name, OptionType::kBool)) return v->flag;
  return std::nullopt;
}

std::optional<std::string> OptionValues::Text(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.text;
}

std::map<std::string, std::string> OptionValues::texts() const {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : values_) out[k] = v.text;
  return out;
}

const OptionSpec* OptionSchema::Find(std::string_view name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> OptionSchema::Names() const {
  std::vector<std::string> names;
  for (const auto& s : specs_) names.push_back(s.name);
  return names;
}

std::string OptionSchema::Check(std::string_view name, std::string_view value) const {
  const OptionSpec* spec = Find(name);
  const std::string who = owner_.empty() ? std::string("the") : owner_;
  if (!spec) {
    if (specs_.empty()) return who + " takes no options (got '" + std::string(name) + "')";
    return "unknown " + who + " option '" + std::string(name) + "' (known: " + Join(Names()) + ")";
  }
  const std::string what = who + " option " + spec->name;
  const std::string got = ", got '" + std::string(value) + "'";
  auto bounded = [&](int64_t v, const std::string& shown) -> std::string {
    if (v >= spec->min && v <= spec->max) return {};
    return what + " must be within " + spec->RangeText() + ", not " + shown;
  };
  switch (spec->type) {
    case OptionType::kInt: {
      auto v = ParseInteger(value);
      if (!v) return what + " wants an integer" + got;
      return bounded(*v, std::string(value));
    }
    case OptionType::kBytes: {
      auto v = ParseBytes(value);
      if (!v.ok() || *v > static_cast<uint64_t>(INT64_MAX)) return what + " wants a size" + got;
      return bounded(static_cast<int64_t>(*v),
                     FormatQuantity(static_cast<double>(*v), Unit::kBytes));
    }
    case OptionType::kDurationMs: {
      Nanos ns = 0;
      if (AllDigits(value)) {  // a bare number is milliseconds
        auto v = ParseInteger(value);
        if (!v || *v > INT64_MAX / kNsPerMs) return what + " wants a duration" + got;
        ns = *v * kNsPerMs;
      } else {
        auto v = ParseDuration(value);
        if (!v.ok()) return what + " wants a duration (a number of ms, or 1.5s, 250ms)" + got;
        ns = *v;
      }
      if (ns % kNsPerMs != 0) return what + " wants whole milliseconds" + got;
      return bounded(ns / kNsPerMs, FormatQuantity(static_cast<double>(ns), Unit::kDuration));
    }
    case OptionType::kBool:
      if (value == "true" || value == "false") return {};
      return what + " wants true or false" + got;
    case OptionType::kEnum:
      if (std::find(spec->choices.begin(), spec->choices.end(), value) != spec->choices.end())
        return {};
      return what + " wants " + Join(spec->choices, ", ") + got;
    case OptionType::kString:
      return {};
  }
  return {};
}

StatusOr<OptionValues> OptionSchema::Parse(const std::map<std::string, std::string>& text) const {
  OptionValues out;
  for (const auto& [k, v] : text) {
    if (std::string why = Check(k, v); !why.empty()) return InvalidArgumentError(why);
    const OptionSpec& spec = *Find(k);
    OptionValues::Value val{spec.type, v, 0, false};
    switch (spec.type) {
      case OptionType::kInt:
        val.number = *ParseInteger(v);
        break;
      case OptionType::kBytes:
        val.number = static_cast<int64_t>(*ParseBytes(v));
        break;
      case OptionType::kDurationMs:
        val.number = AllDigits(v) ? *ParseInteger(v) * kNsPerMs : *ParseDuration(v);
        break;
      case OptionType::kBool:
        val.flag = v == "true";
        break;
      case OptionType::kEnum:
      case OptionType::kString:
        break;
    }
    out.values_[k] = std::move(val);
  }
  return out;
}

StatusOr<OptionValues> OptionSchema::WithDefaults(const OptionValues& given) const {
  std::map<std::string, std::string> text = given.texts();
  for (const auto& s : specs_)
    if (!s.default_text.empty()) text.emplace(s.name, s.default_text);
  return Parse(text);
}

StatusOr<OptionValues> OptionSchema::FromEnvironment(
    std::string_view prefix, const std::map<std::string, std::string>& defaults,
    const std::function<const char*(const char*)>& getenv) const {
  std::map<std::string, std::string> text;
  for (const auto& [k, v] : defaults)
    if (Find(k)) text[k] = v;
  for (const auto& s : specs_) {
    std::string var(prefix);
    for (char c : s.name) var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* v = getenv ? getenv(var.c_str()) : std::getenv(var.c_str());
    if (v && *v) text[s.name] = v;
  }
  auto parsed = Parse(text);
  if (!parsed.ok()) {
    Status st = parsed.status();
    st.Prepend("environment " + std::string(prefix) + "*");
    return st;
  }
  return parsed;
}

StatusOr<std::pair<std::string, std::string>> SplitKeyValue(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return InvalidArgumentError("wants key=value, got '" + std::string(text) + "'");
  return std::pair<std::string, std::string>(std::string(text.substr(0, eq)),
                                             std::string(text.substr(eq + 1)));
}

}  // namespace fl
