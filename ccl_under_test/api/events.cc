#include "ccl_under_test/api/events.h"

#include <cstdio>

#include "common/enum_names.h"
#include "common/event_kinds.h"

namespace fl::ccl {

constexpr NamedValue<EventType> kEventTypeNames[] = {
    {EventType::kFaultDetected, events::kFaultDetected},
    {EventType::kFailoverDone, events::kFailoverDone},
    {EventType::kPathRestored, events::kPathRestored},
    {EventType::kCollectiveBegin, events::kCollectiveBegin},
    {EventType::kCollectiveEnd, events::kCollectiveEnd},
    {EventType::kCommError, events::kCommError},
    {EventType::kHangDump, events::kHangDump},
    {EventType::kRelayRoute, events::kRelayRoute}};

std::string_view Name(EventType type) { return NameIn(kEventTypeNames, type, "?"); }

namespace {
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}
}  // namespace

std::string ToJson(const Event& e) {
  return "{\"type\":" + Quote(std::string(Name(e.type))) +
         ",\"wall_ns\":" + std::to_string(e.wall_ns) + ",\"mono_ns\":" + std::to_string(e.mono_ns) +
         ",\"rank\":" + std::to_string(e.rank) + ",\"peer\":" + std::to_string(e.peer) +
         ",\"channel\":" + std::to_string(e.channel) + ",\"path\":" + Quote(e.path) +
         ",\"cause\":" + Quote(e.cause) + ",\"seq\":" + std::to_string(e.seq) +
         ",\"detail\":" + Quote(e.detail) + "}";
}

}  // namespace fl::ccl
