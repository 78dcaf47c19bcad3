// Option schemas: how a plug-in (a CCL, a workload) describes the options it takes, and the
// typed values that reach its factory.
//
// A plug-in declares an OptionSchema (name, type, range, default, one-line doc per option).
// Option values travel as text (a scenario's job.ccl_options, `--ccl-option k=v`, stored with
// the run) and are parsed and checked against the schema once, into OptionValues, which the
// factory reads with typed getters. An unknown name or a value of the wrong type or out of
// range is InvalidArgument naming the option and, for unknown names, the known ones; callers
// prefix the location (file:line:col, or the flag).
//
// Types and their text:
//   int          a decimal integer within [min, max]
//   bytes        a size ("512KiB", "1M", or a bare number of bytes) within [min, max] bytes
//   duration-ms  a duration ("1.5s", "250ms", or a bare number of milliseconds) within
//                [min, max] milliseconds
//   bool         true | false
//   enum         one of `choices`
//   string       any text
//
// Thread-safety: plain values; const methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

enum class OptionType : uint8_t { kInt, kBytes, kDurationMs, kBool, kEnum, kString };

// "int", "bytes", "duration-ms", "bool", "enum", "string".
std::string_view OptionTypeName(OptionType type);

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::kInt;
  int64_t min = 0;  // kInt, kBytes (bytes), kDurationMs (ms): inclusive bounds
  int64_t max = 0;
  std::vector<std::string> choices;  // kEnum
  std::string default_text;          // as a user would write it; "" = none (the plug-in decides)
  std::string doc;                   // one line

  // "1..64", "1 B..1 GiB", "1ms..1h", "auto|ring|hier", "true|false"; "" for strings.
  std::string RangeText() const;
};

// Values parsed against a schema. Getters return nullopt for options that were not given (the
// plug-in then uses its default) and for a getter that does not match the option's type.
class OptionValues {
 public:
  bool Has(std::string_view name) const { return values_.find(name) != values_.end(); }
  bool empty() const { return values_.empty(); }
  std::optional<int64_t> Int(std::string_view name) const;
  std::optional<uint64_t> Bytes(std::string_view name) const;
  std::optional<Nanos> Duration(std::string_view name) const;
  std::optional<bool> Bool(std::string_view name) const;
  std::optional<std::string> Text(std::string_view name) const;  // any type, as given
  // The options as given, for storing and passing on (`k=v`).
  std::map<std::string, std::string> texts() const;

 private:
  friend class OptionSchema;
  struct Value {
    OptionType type;
    std::string text;
    int64_t number = 0;  // int; bytes; duration in nanoseconds
    bool flag = false;
  };
  // The value of `name` when it was given and is of `type`, else null.
  const Value* Typed(std::string_view name, OptionType type) const;
  std::map<std::string, Value, std::less<>> values_;
};

class OptionSchema {
 public:
  OptionSchema() = default;
  // owner names the plug-in in messages ("ftccl option dead_timeout_ms ...").
  OptionSchema(std::string owner, std::vector<OptionSpec> specs)
      : owner_(std::move(owner)), specs_(std::move(specs)) {}

  const std::string& owner() const { return owner_; }
  const std::vector<OptionSpec>& specs() const { return specs_; }
  const OptionSpec* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

  // "" when `name=value` is a known option with a valid value, else the problem, e.g.
  // "unknown ftccl option 'dead_ms' (known: chunk_bytes, ...)".
  std::string Check(std::string_view name, std::string_view value) const;
  // All of them; InvalidArgument with the first problem.
  StatusOr<OptionValues> Parse(const std::map<std::string, std::string>& text) const;
  // `given` (its texts checked again against this schema) plus every option it lacks that has a
  // default_text, at that default: for a factory that reads every option typed, its defaults
  // stated once, in its schema. InvalidArgument as Parse.
  StatusOr<OptionValues> WithDefaults(const OptionValues& given) const;
  // Options from environment variables PREFIX + NAME in upper case (FTCCL_DEAD_TIMEOUT_MS)
  // over `defaults` (whose names this schema does not know are dropped), for stand-alone
  // tools whose documented input is the environment; checked as Parse.
  StatusOr<OptionValues> FromEnvironment(
      std::string_view prefix, const std::map<std::string, std::string>& defaults = {},
      const std::function<const char*(const char*)>& getenv = nullptr) const;

 private:
  std::string owner_;
  std::vector<OptionSpec> specs_;
};

// "key=value" -> {key, value}; InvalidArgument for text without '=' or with an empty key.
StatusOr<std::pair<std::string, std::string>> SplitKeyValue(std::string_view text);

}  // namespace fl
