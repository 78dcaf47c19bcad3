// ftccl: our fault-tolerant collective library behind the Communicator contract.
//
// Collectives are pipelined rings (AllReduce = ring reduce-scatter + ring all-gather, each
// segment sliced into chunks so that chunk i travels on while chunk i+1 is still arriving);
// AllReduce on host buffers is hierarchical where the ranks share hosts (and their NICs)
// evenly: partners on a host exchange parts over the host-local channel and one ring per
// local index runs over the hosts (CollectiveOptions::algorithm auto|ring|hier). AllToAll
// sends directly to every peer. Every chunk is a message of ftccl's Engine, so it is
// sequenced, acknowledged, applied exactly once and failed over to surviving paths (see
// engine.h and docs/ftccl.md).
//
// CUDA buffers (CollectiveOptions::memory == kCuda), in builds with CUDA: the bytes are staged
// through host memory, and AllReduce reduces on the device with ftccl/cuda's kernel; without
// CUDA they are FailedPrecondition.
//
// Thread-safety, ownership, blocking: as the Communicator contract (api/communicator.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "ccl_under_test/api/communicator.h"
#include "ccl_under_test/ftccl/engine.h"
#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl {

struct FtcclOptions {
  EngineOptions engine;
  // nullptr = TCP (transport/tcp). Tests pass a FaultyTransport here.
  std::shared_ptr<transport::Transport> transport;
  // Host-local channels between ranks of one host; nullptr = abstract AF_UNIX sockets
  // (transport/unix). Tests pass a FaultyTransport over it.
  std::shared_ptr<transport::Transport> host_transport;
  // The AllReduce algorithm of calls whose CollectiveOptions::algorithm is "": auto, ring or
  // hier (docs/ftccl.md, Collectives); the registered factory takes it from the option
  // algorithm.
  std::string algorithm = "auto";
};

StatusOr<std::unique_ptr<Communicator>> CreateFtcclCommunicator(const CommConfig& config,
                                                                const FtcclOptions& options = {});

// The engine counters of an ftccl communicator; nullopt for other libraries.
std::optional<EngineStats> GetStats(const Communicator& comm);

// Registers "ftccl" with its option schema (ftccl_plugin.h): the factory takes its tuning from
// CommConfig::options (host_id defaults to "auto" there), never from the environment.
Status RegisterFtccl(CclRegistry& registry);

// `base` with the options given in `values` (parsed against FtcclPlugin().options) applied:
// chunk_bytes, window_bytes, channels_per_nic, keepalive_ms, dead_timeout_ms, peer_dead_ms,
// host_id ("none" = no host-local channels and no relay), algorithm.
FtcclOptions FtcclOptionsFrom(const OptionValues& values, FtcclOptions base = {});

}  // namespace fl::ccl::ftccl
