#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "common/enum_names.h"

namespace fl::log {
namespace {

struct State {
  std::shared_mutex mu;
  Level default_level = Level::kInfo;
  std::map<std::string, Level, std::less<>> overrides;
  Context context;
  std::function<void(const Record&)> capture;
  std::shared_ptr<spdlog::logger> logger;
};

State& GetState() {
  static State* state = [] {
    auto* s = new State();
    s->logger = spdlog::stderr_logger_mt("faultline");
    s->logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
    s->logger->set_level(spdlog::level::trace);
    return s;
  }();
  return *state;
}

char LevelLetter(Level l) {
  switch (l) {
    case Level::kTrace:
      return 'T';
    case Level::kDebug:
      return 'D';
    case Level::kInfo:
      return 'I';
    case Level::kWarn:
      return 'W';
    case Level::kError:
      return 'E';
    case Level::kOff:
      return '-';
  }
  return '?';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

constexpr NamedValue<Level> kLevelNames[] = {{Level::kTrace, "trace"}, {Level::kDebug, "debug"},
                                             {Level::kInfo, "info"},   {Level::kWarn, "warn"},
                                             {Level::kError, "error"}, {Level::kOff, "off"}};

std::string_view LevelName(Level level) { return NameIn(kLevelNames, level, "?"); }

StatusOr<Level> ParseLevel(std::string_view name) {
  if (auto l = ValueIn(kLevelNames, name)) return *l;
  if (name == "warning") return Level::kWarn;
  return InvalidArgumentError("unknown log level '" + std::string(name) + "' (expected " +
                              NamesIn(kLevelNames) + ")");
}

Status Configure(std::string_view spec) {
  Level def = Level::kInfo;
  std::map<std::string, Level, std::less<>> overrides;
  while (!spec.empty()) {
    auto comma = spec.find(',');
    std::string_view item = Trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      FL_ASSIGN_OR_RETURN(def, ParseLevel(item));
    } else {
      FL_ASSIGN_OR_RETURN(Level l, ParseLevel(Trim(item.substr(eq + 1))));
      overrides[std::string(Trim(item.substr(0, eq)))] = l;
    }
  }
  State& s = GetState();
  std::unique_lock lock(s.mu);
  s.default_level = def;
  s.overrides = std::move(overrides);
  return OkStatus();
}

void ConfigureFromEnv() {
  const char* env = std::getenv("FAULTLINE_LOG");
  Status st = Configure(env ? env : "info");
  if (!st.ok()) {
    Configure("info").IgnoreError();  // a constant spec that always parses
    FL_LOG(kWarn, "log") << "FAULTLINE_LOG ignored: " << st.message();
  }
}

void SetContext(Context context) {
  State& s = GetState();
  std::unique_lock lock(s.mu);
  s.context = std::move(context);
}

Context GetContext() {
  State& s = GetState();
  std::shared_lock lock(s.mu);
  return s.context;
}

bool Enabled(std::string_view subsystem, Level level) {
  State& s = GetState();
  std::shared_lock lock(s.mu);
  auto it = s.overrides.find(subsystem);
  Level threshold = it == s.overrides.end() ? s.default_level : it->second;
  return level >= threshold && level != Level::kOff;
}

void SetCaptureSink(std::function<void(const Record&)> sink) {
  State& s = GetState();
  std::unique_lock lock(s.mu);
  s.capture = std::move(sink);
}

void Emit(std::string_view subsystem, Level level, const char* file, int line,
          std::string_view message) {
  State& s = GetState();
  std::function<void(const Record&)> capture;
  Context ctx;
  {
    std::shared_lock lock(s.mu);
    capture = s.capture;
    ctx = s.context;
  }
  std::string_view f(file);
  if (auto slash = f.rfind('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
  if (capture) {
    capture(Record{level, std::string(subsystem), std::string(message), ctx, std::string(f), line});
    return;
  }
  std::string prefix;
  if (!ctx.run.empty() || !ctx.host.empty() || ctx.rank >= 0) {
    prefix = "[";
    if (!ctx.run.empty()) prefix += "run=" + ctx.run;
    if (!ctx.host.empty()) prefix += (prefix.size() > 1 ? " host=" : "host=") + ctx.host;
    if (ctx.rank >= 0)
      prefix += (prefix.size() > 1 ? " rank=" : "rank=") + std::to_string(ctx.rank);
    prefix += "] ";
  }
  s.logger->log(spdlog::level::info, "{} {} {}{}  ({}:{})", LevelLetter(level), subsystem, prefix,
                message, f, line);
}

}  // namespace fl::log
