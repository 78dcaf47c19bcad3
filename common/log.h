// Logging by subsystem, with run/host/rank context, selected at run time.
//
// The level comes from FAULTLINE_LOG: a default level, optionally followed by per-subsystem
// overrides, e.g. "info", "warn,lab=debug,ftccl=trace". Lines go to stderr as
//   2026-11-30T01:02:03.456Z I lab [run=r1 host=h0 rank=3] message  (file.cc:42)
// Subsystems are short lower-case words: "lab", "inject", "ftccl", "agent", "coord", "store".
//
// Thread-safety: all functions may be called from any thread. Configure() and SetContext()
// take effect for lines emitted after they return.
// Blocking: emitting a line writes to stderr synchronously.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fl::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

struct Context {
  std::string run;
  std::string host;
  int rank = -1;
};

// A structured record, as handed to a capture sink (tests assert on these, not on text).
struct Record {
  Level level;
  std::string subsystem;
  std::string message;
  Context context;
  std::string file;
  int line;
};

// Parses a spec such as "warn,lab=debug". Unknown level names are InvalidArgument.
Status Configure(std::string_view spec);
// Configure(getenv("FAULTLINE_LOG")), default "info".
void ConfigureFromEnv();
StatusOr<Level> ParseLevel(std::string_view name);
std::string_view LevelName(Level level);

void SetContext(Context context);
Context GetContext();

bool Enabled(std::string_view subsystem, Level level);
void Emit(std::string_view subsystem, Level level, const char* file, int line,
          std::string_view message);

// Replaces stderr output with a sink (nullptr restores stderr). For tests.
void SetCaptureSink(std::function<void(const Record&)> sink);

// Collects one line through operator<< and emits it on destruction.
class Line {
 public:
  Line(std::string_view subsystem, Level level, const char* file, int line)
      : subsystem_(subsystem), level_(level), file_(file), line_(line) {}
  ~Line() { Emit(subsystem_, level_, file_, line_, stream_.str()); }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  std::ostringstream& stream() { return stream_; }

 private:
  std::string_view subsystem_;
  Level level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Swallows the stream so that FL_LOG is one expression (safe after an unbraced if/else).
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace fl::log

// FL_LOG(kInfo, "lab") << "namespace " << name << " created";
// Arguments are not evaluated when the level is disabled.
#define FL_LOG(level, subsystem)                          \
  !::fl::log::Enabled(subsystem, ::fl::log::Level::level) \
      ? (void)0                                           \
      : ::fl::log::Voidify() &                            \
            ::fl::log::Line(subsystem, ::fl::log::Level::level, __FILE__, __LINE__).stream()
