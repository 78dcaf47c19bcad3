// What a rank learns from the launcher that started it: its rank and the world size (flags, or
// the variables Slurm, torchrun and Open MPI's mpirun set), and its NICs (addresses or
// interface names). Used by faultline-worker and ftccl-perf; deciding is pure (the environment
// and the host's interfaces are arguments), so it is unit-tested without launchers.
//
// Rank precedence (docs/ftccl.md "Ranks from launchers"):
//   1. --rank and --world-size (both or neither);
//   2. the first variable set present, in this order:
//        faultline  FL_RANK, FL_WORLD_SIZE, FL_LOCAL_RANK
//        torch      RANK, WORLD_SIZE, LOCAL_RANK
//        Open MPI   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//        Slurm      SLURM_PROCID, SLURM_NTASKS (or SLURM_NPROCS), SLURM_LOCALID
//      innermost launcher first: torchrun and mpirun are often started inside a Slurm step,
//      whose variables then describe the launcher's task, not the rank.
//   Every other set present must agree with the chosen one (rank, size, local rank), unless
//   its world size is smaller: that is an enclosing launcher (srun starting one torchrun per
//   node), and it is ignored. Anything else is InvalidArgument naming both sets' variables.
//
// Thread-safety: pure functions, except ListInterfaceAddresses (reads the host).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace fl::ccl {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;  // -1: not given
  // Where it came from: "flags", "faultline", "torch", "openmpi", "slurm".
  std::string source;
};

using GetenvFn = std::function<const char*(const char*)>;

// The environment part. NotFound when no set's rank variable is present; InvalidArgument
// (naming the variable) for a value that is not a number, out of range (world size >= 1,
// 0 <= rank < world size, 0 <= local rank < world size), a set without its world size, or
// sets that disagree.
StatusOr<RankEnv> RankFromEnvironment(const GetenvFn& getenv);

// Flags first (both or neither; checked like the variables), then RankFromEnvironment.
StatusOr<RankEnv> ResolveRank(std::optional<int> flag_rank, std::optional<int> flag_world_size,
                              const GetenvFn& getenv);

// One interface address of this host; ipv4 empty for an interface without one.
struct InterfaceAddress {
  std::string name;
  std::string ipv4;
};
// Every interface (getifaddrs), IPv4 addresses in the kernel's order (primary first).
StatusOr<std::vector<InterfaceAddress>> ListInterfaceAddresses();

// NIC entries in rail order: an IPv4 address stays as it is; anything else is an interface
// name, replaced by its first (primary) IPv4 address. InvalidArgument naming the interface
// when it does not exist or has no IPv4 address.
StatusOr<std::vector<std::string>> ResolveNicsWith(const std::vector<std::string>& entries,
                                                   const std::vector<InterfaceAddress>& ifs);
// The same against this host's interfaces (reads them only when a name is given).
StatusOr<std::vector<std::string>> ResolveNics(const std::vector<std::string>& entries);

}  // namespace fl::ccl
