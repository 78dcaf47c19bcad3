// The Gloo baseline behind the Communicator contract: Debian's libgloo, TCP transport, one
// NIC per rank (the first of CommConfig::nics), ring AllReduce. Gloo is fail-stop: a path
// fault surfaces as an I/O error or a timeout of the collective in progress, and the
// communicator stays broken afterwards (GetAsyncError). config.failover is ignored.
//
// Rendezvous goes through our Store (api/rendezvous.h), so gloo and ftccl jobs share the
// same bootstrap and can run side by side; Gloo's listening ports are chosen by the kernel.
//
// Differences from ftccl, by Gloo's design: no bfloat16 (InvalidArgument); ReduceScatter is an
// AllReduce followed by taking this rank's block; host buffers only (kCuda is
// FailedPrecondition); Abort cannot interrupt a collective in progress: it ends at its
// timeout, and later calls fail with Cancelled.
//
// Gloo throws; every exception is caught here and turned into a Status (Unavailable for I/O
// errors, DeadlineExceeded for timeouts).
#pragma once

#include <memory>

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl::adapters {

StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const CommConfig& config);

// Registers "gloo".
Status RegisterGloo(CclRegistry& registry);

}  // namespace fl::ccl::adapters
