// Identifiers: run ids that sort by time and stay unique across coordinators, random tokens
// for authentication, and the parts of a target's name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace fl {

// "r20261130-010203-3fa9c1": UTC start time plus 24 random bits.
std::string NewRunId(Nanos wall_ns = WallNowNs());

// n random bytes from the kernel's CSPRNG as 2n lowercase hex digits.
std::string RandomHex(size_t n_bytes);

// The lab names in a target, split at '.', '/' and ':' ("h1.nic0" -> h1, nic0; "leaf0:swp3"
// -> leaf0, swp3), empty parts dropped: how faults and alerts name what they are about.
std::vector<std::string_view> TargetParts(std::string_view target);

}  // namespace fl
