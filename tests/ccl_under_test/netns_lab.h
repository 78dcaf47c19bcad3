// A small network-namespace lab for ftccl's root-gated integration tests and benchmarks,
// independent of harness/lab: H host namespaces with N NICs each (veth), NIC k of every host
// on rail k (a Linux bridge in its own ToR namespace). Addresses 198.18.<k>.<h+1>/24.
// Optional tc tbf shaping on both ends of every link.
//
// Names carry a per-lab prefix (pid + counter) so labs never collide; the destructor kills
// every process the lab spawned (by pid) and deletes every namespace it made (which removes
// their links and qdiscs): nothing is left behind, also when a test fails.
//
// Commands are run with fork/execvp and argv arrays (no shell), each with a deadline.
// Thread-safety: none; one test thread drives a lab.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::ccl::testing {

// Runs argv, waits at most `timeout`; stdout (and stderr) into *out when given.
Status RunCommand(const std::vector<std::string>& argv, Nanos timeout, std::string* out = nullptr);

struct LabSpec {
  int hosts = 4;
  int nics = 2;
  std::string rate;  // "" = unshaped; else tc tbf rate, e.g. "1gbit"
  std::string burst = "256kb";
};

class NetnsLab {
 public:
  // FailedPrecondition when not root or `ip` is missing.
  static StatusOr<std::unique_ptr<NetnsLab>> Create(const LabSpec& spec);
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  const LabSpec& spec() const { return spec_; }
  std::string HostNs(int h) const { return prefix_ + "h" + std::to_string(h); }
  std::string TorNs(int k) const { return prefix_ + "t" + std::to_string(k); }
  static std::string NicName(int k) { return "eth" + std::to_string(k); }
  static std::string NicAddr(int h, int k) {
    return "198.18." + std::to_string(k) + "." + std::to_string(h + 1);
  }
  const std::string& prefix() const { return prefix_; }

  // Administrative link state of host h's NIC k (the host side: carrier and link events).
  Status SetNicUp(int h, int k, bool up);
  // Silent blackhole: the ToR's bridge port for host h on rail k stops forwarding; the host
  // keeps carrier and sees no error.
  Status SetBlackhole(int h, int k, bool on);
  // Bytes sent by host h's NIC k (from the host namespace's sysfs).
  StatusOr<uint64_t> TxBytes(int h, int k);

  // Starts argv inside host h's namespace; stdout/stderr to log_path. Returns the pid.
  StatusOr<pid_t> Spawn(int h, const std::vector<std::string>& argv, const std::string& log_path);
  // Waits for pid until the deadline; its exit code, or DeadlineExceeded (the process is
  // left running; the destructor kills it).
  StatusOr<int> Wait(pid_t pid, Deadline deadline);
  void KillAll();

 private:
  explicit NetnsLab(LabSpec spec, std::string prefix)
      : spec_(std::move(spec)), prefix_(std::move(prefix)) {}
  Status Build();
  Status Ip(const std::vector<std::string>& args);

  LabSpec spec_;
  std::string prefix_;
  std::vector<std::string> namespaces_;
  std::vector<pid_t> pids_;
};

}  // namespace fl::ccl::testing
