// The Communicator contract: what every collective library behind faultline (our ftccl, and
// the gloo and nccl baselines) provides to a workload, so that the same harness drives and
// measures all of them.
//
// Purpose: one rank's handle on a group of `size()` ranks that run collectives together.
// Every rank of the group calls the same collectives in the same order with matching
// arguments (count, type, op, root); the library numbers them (a per-communicator sequence
// number) and reports that number in its events.
//
// Thread-safety: collectives on one Communicator are called from one thread at a time (the
// rank's thread), as in NCCL and Gloo; GetAsyncError() and Abort() may be called from any
// thread at any time (a watchdog thread), also while a collective is in progress.
//
// Ownership: buffers stay owned by the caller and must stay valid until the call returns; the
// Communicator does not keep pointers to them after it returns, whether it succeeded or not.
// The event sink (CommConfig::events) is borrowed and must outlive the Communicator.
//
// Blocking: every collective blocks until it is complete on this rank or until its deadline
// (CollectiveOptions::timeout) passes; none waits forever. Errors:
//   Unavailable       no usable path to a peer (fail-stop library, or every path is down)
//   DeadlineExceeded  the collective did not complete in time (the message names what each
//                     channel was waiting for: the hang dump)
//   Cancelled         Abort() was called
//   InvalidArgument   bad arguments (type not supported by this library, root out of range)
//   FailedPrecondition  the buffer kind is not supported by this build (CUDA without CUDA)
// Argument errors found before any communication (InvalidArgument) leave the communicator
// usable. After a collective has failed in flight the group is out of step: later
// collectives return the same error (see GetAsyncError) until the Communicator is destroyed
// and re-created.
//
// Shrinking (optional capability, the elastic alternative to a restart): Shrink makes a new,
// smaller communicator of the survivors out of this one, also when this one is broken because
// a peer is gone, as ncclCommShrink does. ShrinkSupport() says whether this communicator can
// (OK) or why not (FailedPrecondition); the default is "cannot" (ftccl and gloo).
//
// Creating one: fill a CclRegistry with RegisterBuiltinCcls (ccl_under_test/tools/
// ccl_builtin.h) and Create("ftccl" | "gloo" | "nccl", config); Create blocks until every
// peer is connected or config.init_timeout passes. docs/ftccl.md has an example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ccl_under_test/api/events.h"
#include "ccl_under_test/api/rendezvous.h"
#include "ccl_under_test/api/types.h"
#include "common/clock.h"
#include "common/options.h"
#include "common/registry.h"
#include "common/status.h"

namespace fl::ccl {

// Where a buffer lives. CUDA buffers are device pointers of the current device.
enum class MemoryKind : uint8_t { kHost, kCuda };

// Per-call options, as in Gloo's AllreduceOptions.
struct CollectiveOptions {
  // The collective fails with DeadlineExceeded when it has not completed within this time.
  Nanos timeout = 60 * kNsPerSec;
  // "" = the library's default; "ring" is understood by every library here.
  std::string algorithm;
  MemoryKind memory = MemoryKind::kHost;
  // For kCuda: the cudaStream_t the buffers are ready on (nullptr: the default stream).
  void* stream = nullptr;
};

// How a rank joins its group. The same struct configures every library; fields a library
// does not use are ignored (gloo uses the first NIC only; nccl ignores nics).
struct CommConfig {
  int rank = 0;
  int world_size = 1;
  // Identifies the job in the rendezvous store, so several jobs can share one store.
  std::string job_id = "job";
  // Borrowed; must outlive Create and the Communicator. Peers publish their listening
  // addresses here (ports are chosen by the kernel, so jobs never clash).
  Store* store = nullptr;
  // Local NIC addresses (IPv4, one per rail, rail order). NIC i talks to the peers' NIC i.
  std::vector<std::string> nics = {"127.0.0.1"};
  // How long Create may take to find and connect to every peer.
  Nanos init_timeout = 30 * kNsPerSec;
  // false = fail-stop: the first path fault fails the communicator (the baseline behaviour).
  bool failover = true;
  // Borrowed; may be nullptr. Receives the library's events (see events.h).
  EventSink* events = nullptr;
  // The library's own options, parsed and checked against the schema it registered with
  // (CclRegistry::Schema, common/options.h); options not given take the library's defaults.
  OptionValues options;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "ftccl", "gloo", "nccl".
  virtual std::string name() const = 0;

  // recv[i] = op over ranks of send[i], for count elements. send == recv is allowed.
  virtual Status AllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                           const CollectiveOptions& opts = {}) = 0;
  // recv (size() * count elements) = the ranks' send buffers (count elements each), in rank
  // order.
  virtual Status AllGather(const void* send, void* recv, size_t count, DataType type,
                           const CollectiveOptions& opts = {}) = 0;
  // send has size() * count elements; recv (count elements) = block rank() of the reduction.
  virtual Status ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                               ReduceOp op, const CollectiveOptions& opts = {}) = 0;
  // buf (count elements) on every rank = buf on root.
  virtual Status Broadcast(void* buf, size_t count, DataType type, int root,
                           const CollectiveOptions& opts = {}) = 0;
  // send and recv hold size() blocks of count elements; block j of send goes to rank j and
  // arrives there as block rank() of recv.
  virtual Status AllToAll(const void* send, void* recv, size_t count, DataType type,
                          const CollectiveOptions& opts = {}) = 0;
  virtual Status Barrier(const CollectiveOptions& opts = {}) = 0;

  // The error that broke this communicator (OK while healthy), also when it was found by the
  // library's own threads between collectives (as ncclCommGetAsyncError). Never blocks.
  virtual Status GetAsyncError() = 0;
  // Stops all communication: a collective in progress on another thread returns Cancelled
  // promptly, later ones return Cancelled. Idempotent; never blocks for long.
  virtual void Abort() = 0;

  // OK when Shrink can work here; FailedPrecondition naming why not ("gloo cannot shrink",
  // "libnccl 2.21.5 has no ncclCommShrink"). Never blocks.
  virtual Status ShrinkSupport() const {
    return FailedPreconditionError(name() + " cannot shrink a communicator");
  }
  // A new communicator over this one's ranks minus exclude_ranks (ranks of this communicator,
  // each once, not rank()); the survivors keep their order and are numbered 0..n-1 again, so
  // the new rank() is rank() minus the excluded ranks below it. Collective over the survivors:
  // each calls it with the same list (shrink_agreement.h agrees on it). Works on a broken
  // communicator (a collective failed because a peer is gone), which is its purpose; this
  // communicator stays usable only for destruction afterwards. Blocks until the new group is
  // formed or timeout passes (DeadlineExceeded). The new communicator reports to the same
  // event sink. InvalidArgument for a bad list; ShrinkSupport()'s error when it cannot.
  virtual StatusOr<std::unique_ptr<Communicator>> Shrink(std::span<const int> exclude_ranks,
                                                         Nanos timeout) {
    (void)exclude_ranks;
    (void)timeout;
    return ShrinkSupport();
  }
};

// Checks a Shrink exclude list against a communicator of `size` ranks seen from `rank`:
// in range, no duplicates, not `rank` itself. InvalidArgument naming the bad entry.
inline Status CheckExcludeList(std::span<const int> exclude_ranks, int rank, int size) {
  std::vector<bool> seen(static_cast<size_t>(size), false);
  for (int r : exclude_ranks) {
    if (r < 0 || r >= size)
      return InvalidArgumentError("shrink: rank " + std::to_string(r) + " out of range 0.." +
                                  std::to_string(size - 1));
    if (r == rank)
      return InvalidArgumentError("shrink: rank " + std::to_string(r) + " excludes itself");
    if (seen[static_cast<size_t>(r)])
      return InvalidArgumentError("shrink: rank " + std::to_string(r) + " listed twice");
    seen[static_cast<size_t>(r)] = true;
  }
  return OkStatus();
}

// Factories by name ("ftccl", "gloo", "nccl"), see ccl_under_test/tools/ccl_builtin.h.
using CclRegistry = Registry<Communicator, const CommConfig&>;

}  // namespace fl::ccl
