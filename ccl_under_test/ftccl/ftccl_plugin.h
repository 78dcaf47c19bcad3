// ftccl as a plug-in: its options (schema) and timeouts, without the engine (see
// ccl_under_test/api/ccl_plugin.h). The registered factory (ftccl.h) reads the same options.
//
// Options (`faultline ccls` prints them with their ranges and defaults):
//   chunk_bytes, window_bytes, channels_per_nic, keepalive_ms, dead_timeout_ms, peer_dead_ms
//   (EngineOptions, engine.h), algorithm (auto|ring|hier), host_id ("auto", "none" = no
//   host-local channels and no relay, or an id shared by the ranks of one host).
#pragma once

#include "ccl_under_test/api/ccl_plugin.h"

namespace fl::ccl::ftccl {

const CclPlugin& FtcclPlugin();

}  // namespace fl::ccl::ftccl
