// tc and nft through their command-line tools (iproute2, nftables), run with an argv array
// inside the target's network namespace. Rule sets are generated from validated names only.
//
// Thread-safety: stateless functions. Blocking: each call runs one tool with a 5 s deadline.
#pragma once

#include <string>

#include "common/status.h"

namespace fl::injectors {

// The root qdisc of an interface, as far as faultline cares.
struct RootQdisc {
  std::string kind;       // "tbf", "noqueue", "pfifo_fast", ... ("" when none is listed)
  uint64_t rate_bps = 0;  // tbf only
  uint64_t burst_bytes = 0;
};

StatusOr<RootQdisc> ReadRootQdisc(const std::string& netns, const std::string& ifname);
// Replaces the root qdisc with tbf. limit_bytes 0: a 50 ms latency bound.
Status SetTbf(const std::string& netns, const std::string& ifname, uint64_t rate_bps,
              uint64_t burst_bytes, uint64_t limit_bytes = 0);
// Restores a qdisc read with ReadRootQdisc: tbf is re-created, anything else means "the
// default", so the root qdisc is deleted (a missing one is fine).
Status RestoreRootQdisc(const std::string& netns, const std::string& ifname, const RootQdisc& q);

// Loads a ruleset (nft -f -) in netns.
Status NftApply(const std::string& netns, const std::string& ruleset);
// Deletes a table; a missing table (or namespace) is fine: deletion is idempotent.
Status NftDeleteTable(const std::string& netns, const std::string& family,
                      const std::string& table);
StatusOr<bool> NftTableExists(const std::string& netns, const std::string& family,
                              const std::string& table);

}  // namespace fl::injectors
