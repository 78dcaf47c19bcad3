// Events a CCL reports about itself, so that it is not a black box: faults it detected, the
// failovers it did, paths that came back, and the begin/end of each collective. The harness
// stores them next to the injected faults to compute detection latency and recovery time.
//
// Thread-safety: EventSink::OnEvent may be called from any of the library's threads,
// concurrently; implementations must be thread-safe and must not block (queue and return).
// Ownership: events are passed by reference and valid only during the call.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace fl::ccl {

enum class EventType : uint8_t {
  kFaultDetected,    // a path was declared failed; cause says why
  kFailoverDone,     // every chunk that was unacknowledged on a failed path has been
                     // acknowledged over other paths (communication state synchronised)
  kPathRestored,     // a failed path carries traffic again (failback)
  kCollectiveBegin,  // seq = the collective's sequence number
  kCollectiveEnd,    // seq, with detail "ok" or the error
  kCommError,        // the communicator failed (fail-stop, no path left, deadline)
  kHangDump,         // detail = what every channel waits for
  kRelayRoute,       // chunks to `peer` now go through another rank of the same host (path
                     // "via rank R"; cause no_direct_path), or no longer do (direct_path)
};

std::string_view Name(EventType type);

struct Event {
  explicit Event(EventType t = EventType::kCollectiveBegin) : type(t) {}
  EventType type;
  Nanos wall_ns = 0;
  Nanos mono_ns = 0;
  int rank = -1;
  int peer = -1;      // the remote rank of the path, or -1
  int channel = -1;   // the channel index towards peer, or -1
  std::string path;   // "127.0.0.1->127.0.0.2:41234"
  std::string cause;  // "link_down", "transport_error", "keepalive_timeout", "peer_notice", ...
  uint64_t seq = 0;   // collective sequence number (collective events)
  std::string detail;
};

// One line of JSON (no trailing newline), for event logs.
std::string ToJson(const Event& event);

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnEvent(const Event& event) = 0;
};

// Keeps every event in memory; for tests and for tools that print them at the end.
class CollectingEventSink : public EventSink {
 public:
  void OnEvent(const Event& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }
  std::vector<Event> Events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t Count(EventType type) const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& e : events_) n += e.type == type;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace fl::ccl
