// The NCCL baseline behind the Communicator contract. libnccl is loaded at run time
// (dlopen "libnccl.so.2", or FL_NCCL_LIBRARY), so faultline builds and runs without it; a
// missing library is FailedPrecondition when a communicator is created.
//
// Buffers must be CUDA device memory of the current device (CollectiveOptions::memory =
// kCuda; host buffers are FailedPrecondition); work is enqueued on CollectiveOptions::stream
// (or the adapter's own stream) and waited for with the collective's deadline. The
// communicator is created non-blocking and every wait polls ncclCommGetAsyncError, so a hung
// or failed peer ends in DeadlineExceeded/Unavailable after ncclCommAbort instead of a hang.
// NCCL is fail-stop here (config.failover and config.nics are ignored: NCCL picks its NICs).
//
// Thread-safety: as the Communicator contract. Abort may be called from any thread.
#pragma once

#include <memory>

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl::adapters {

StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const CommConfig& config);

// Registers "nccl".
Status RegisterNccl(CclRegistry& registry);

}  // namespace fl::ccl::adapters
