#include "ccl_under_test/ftccl/ftccl_plugin.h"

#include "ccl_under_test/ftccl/engine.h"

namespace fl::ccl::ftccl {
namespace {

constexpr int64_t kHourMs = 3600 * 1000;

std::string Ms(Nanos ns) { return std::to_string(ns / kNsPerMs); }

OptionSchema Schema() {
  const EngineOptions d;
  using T = OptionType;
  return OptionSchema(
      "ftccl",
      {
          {"chunk_bytes",
           T::kBytes,
           1,
           1ll << 30,
           {},
           std::to_string(d.chunk_bytes),
           "largest message the collectives post (a frame's payload)"},
          {"window_bytes",
           T::kBytes,
           1,
           1ll << 30,
           {},
           std::to_string(d.window_bytes),
           "unacknowledged bytes a channel may have in flight"},
          {"channels_per_nic",
           T::kInt,
           1,
           64,
           {},
           std::to_string(d.channels_per_nic),
           "channels per local NIC towards each peer"},
          {"keepalive_ms",
           T::kDurationMs,
           1,
           kHourMs,
           {},
           Ms(d.keepalive_interval),
           "an idle channel sends a keep-alive after this long"},
          {"dead_timeout_ms",
           T::kDurationMs,
           1,
           kHourMs,
           {},
           Ms(d.dead_timeout),
           "a channel that heard nothing this long is failed (silent faults); with path_health "
           "the cap of its adaptive dead timeout"},
          {"path_health",
           T::kBool,
           0,
           0,
           {},
           "true",
           "drain and probe lossy, slow and stalled paths; adaptive dead timeouts"},
          {"peer_dead_ms",
           T::kDurationMs,
           1,
           kHourMs,
           {},
           Ms(d.peer_dead_timeout),
           "with every channel to a peer down this long, the collective fails"},
          {"algorithm",
           T::kEnum,
           0,
           0,
           {"auto", "ring", "hier"},
           "auto",
           "AllReduce algorithm of calls that name none"},
          {"host_id",
           T::kString,
           0,
           0,
           {},
           "auto",
           "ranks with the same id share host-local channels and relay; auto, or none = off"},
      });
}

CclTimeouts Timeouts(const OptionValues& o, const std::map<std::string, std::string>&,
                     bool failover) {
  const EngineOptions d;
  auto one = [&](CclTimeout::Kind kind, const char* name, Nanos fallback) {
    std::optional<Nanos> v = o.Duration(name);
    return CclTimeout{kind,
                      std::string("ftccl ") + name,
                      v.value_or(fallback),
                      v ? "job.ccl_options" : "the ftccl default",
                      {}};
  };
  CclTimeouts t;
  t.timeouts.push_back(one(CclTimeout::Kind::kDetect, "dead_timeout_ms", d.dead_timeout));
  // Fail-stop (failover off) fails on the first path fault: it rides nothing out.
  if (failover)
    t.timeouts.push_back(one(CclTimeout::Kind::kGiveUp, "peer_dead_ms", d.peer_dead_timeout));
  t.routes_around_path_faults = failover;
  return t;
}

}  // namespace

const CclPlugin& FtcclPlugin() {
  static const CclPlugin* p = new CclPlugin{
      "ftccl",
      "faultline's fault-tolerant CCL: rings over every NIC, failover between paths",
      Schema(),
      nullptr,
      Timeouts,
      /*may_shrink=*/false,
      /*nic_binding=*/NicBinding::kAllRails,
      /*needs_gpu=*/false,
      /*fails_over=*/true,
  };
  return *p;
}

}  // namespace fl::ccl::ftccl
