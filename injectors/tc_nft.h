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
  std::string handle;     // "0:" for the qdisc the kernel attached by default
  uint64_t rate_bps = 0;  // tbf only
  uint64_t burst_bytes = 0;
  uint64_t latency_us = 0;  // tbf only: its queue bound as tc reports it
};

// True for the kernel's default root qdisc (handle 0:, or none listed): deleting the root
// qdisc brings it back.
bool IsDefaultRoot(const RootQdisc& q);
// True when ReadRootQdisc-state q can be put back exactly by RestoreRootQdisc: the default
// or a tbf.
bool IsRestorableRoot(const RootQdisc& q);
// Same shaping within tc's rounding (1% of rate and burst): a == b as far as revert goes.
bool SameRoot(const RootQdisc& a, const RootQdisc& b);

StatusOr<RootQdisc> ReadRootQdisc(const std::string& netns, const std::string& ifname);
// Replaces the root qdisc with tbf. limit_bytes 0: latency_us as the bound (0: 50 ms).
Status SetTbf(const std::string& netns, const std::string& ifname, uint64_t rate_bps,
              uint64_t burst_bytes, uint64_t limit_bytes = 0, uint64_t latency_us = 0);
// Restores a qdisc read with ReadRootQdisc: tbf is re-created with its rate, burst and
// latency; the default means the root qdisc is deleted (a missing one is fine). Anything else
// is FailedPrecondition (callers refuse such a link before they change it).
Status RestoreRootQdisc(const std::string& netns, const std::string& ifname, const RootQdisc& q);

// Loads a ruleset (nft -f -) in netns.
Status NftApply(const std::string& netns, const std::string& ruleset);
// Deletes a table; a missing table (or namespace) is fine: deletion is idempotent.
Status NftDeleteTable(const std::string& netns, const std::string& family,
                      const std::string& table);
StatusOr<bool> NftTableExists(const std::string& netns, const std::string& family,
                              const std::string& table);

}  // namespace fl::injectors
