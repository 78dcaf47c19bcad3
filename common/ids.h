// Identifiers: run ids that sort by time and stay unique across coordinators, and random
// tokens for authentication.
#pragma once

#include <string>

#include "common/clock.h"

namespace fl {

// "r20261130-010203-3fa9c1": UTC start time plus 24 random bits.
std::string NewRunId(Nanos wall_ns = WallNowNs());

// n random bytes from the kernel's CSPRNG as 2n lowercase hex digits.
std::string RandomHex(size_t n_bytes);

}  // namespace fl
