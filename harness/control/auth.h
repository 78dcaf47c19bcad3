// Control-plane authentication helpers shared by the coordinator and the agents: the shared
// token is read from a file (never from the command line, where `ps` would show it) and
// compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace fl::harness {

// Reads and trims the token; an empty file is InvalidArgument. A token file readable by
// others is accepted with a warning in the log (labs often share one by NFS).
StatusOr<std::string> ReadTokenFile(const std::string& path);
// Writes a fresh random token (mode 0600) and returns it.
StatusOr<std::string> CreateTokenFile(const std::string& path);
bool TokensEqual(std::string_view a, std::string_view b);

// gRPC metadata key carrying the token on every stream.
inline constexpr const char* kTokenMetadataKey = "x-faultline-token";

}  // namespace fl::harness
