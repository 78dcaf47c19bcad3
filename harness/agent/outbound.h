// What the agent's parts hand to the coordinator: the answers to its commands (Ack), made one
// way by the router (agent_runtime.cc) and the fault keeper, and events, through a sink (the
// telemetry relay's). Pure; any thread.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string>

#include "common/status.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

// An event the agent reports to the coordinator (rank -1: the agent's own). Any thread.
using AgentEventSink =
    std::function<void(int rank, const std::string& kind, const nlohmann::json& detail)>;

// A command done: ok, nothing else set.
inline faultline::v1::Ack OkAck() {
  faultline::v1::Ack ack;
  ack.set_ok(true);
  return ack;
}

// A command refused or failed: the status's message (with its trail) and code.
inline faultline::v1::Ack FailedAck(const Status& st) {
  faultline::v1::Ack ack;
  ack.set_ok(false);
  ack.set_error(st.ToUserString());
  ack.set_error_code(static_cast<int>(st.code()));
  return ack;
}

}  // namespace fl::harness
