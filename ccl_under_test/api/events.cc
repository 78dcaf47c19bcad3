#include "ccl_under_test/api/events.h"

#include <nlohmann/json.hpp>

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


std::string ToJson(const Event& e) {
  // In this order (readers do not care; people reading a log do). Bytes that are not UTF-8
  // become U+FFFD rather than an exception.
  const nlohmann::ordered_json j = {{"type", Name(e.type)}, {"wall_ns", e.wall_ns},
                                    {"mono_ns", e.mono_ns}, {"rank", e.rank},
                                    {"peer", e.peer},       {"channel", e.channel},
                                    {"path", e.path},       {"cause", e.cause},
                                    {"seq", e.seq},         {"detail", e.detail}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace fl::ccl
