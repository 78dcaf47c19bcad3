// Whether a secret may go in clear to an address (issue 29: no secret leaves a process before
// its peer is authenticated). Without TLS the token is sent as gRPC metadata on the first
// stream, to whatever answers: that is allowed only to loopback (127.0.0.0/8, ::1) and to the
// lab ranges our own namespaces use (198.18.0.0/15: local labs' data and management networks),
// or when the operator said --insecure.
#pragma once

#include <string>

#include "common/status.h"

namespace fl::harness {

// True when every address HOST (of "HOST:PORT", "[V6]:PORT" or a bare host) resolves to is
// loopback or in 198.18.0.0/15. A name that does not resolve is not local.
bool IsLocalOrLabAddress(const std::string& host_port);

// OK when a dial to host_port without TLS may carry the token: the address is local or a
// lab's, or `insecure` (then the caller says so on every start). Otherwise
// FailedPrecondition naming the address and what to give instead.
Status CheckClearDial(const std::string& host_port, bool insecure, const std::string& who);

}  // namespace fl::harness
