// The counters of a host's data NICs, as an agent samples them during a run (issue 17): the
// kernel's link statistics through rtnetlink (RTM_GETLINK, IFLA_STATS64: bytes, packets,
// drops, errors), a short list of the driver's own statistics through the ethtool ioctl
// (ETHTOOL_GSTATS, where the driver has any: pause/PFC frames, discards, queue drops), and the
// RDMA port counters in sysfs (/sys/class/infiniband/DEV/ports/N/counters) when an RDMA device
// sits on the NIC. Every counter is cumulative, as read; rates are the report's business.
//
// Three layers, so that each can be tested alone:
//   - pure functions: ParseLinkStats (one netlink message), PlanEthtoolCounters /
//     ApplyEthtoolPlan (which driver counters to keep and how), FindRdmaPort /
//     ReadRdmaCounters (a sysfs tree, real or fake);
//   - NicCounterSource: reads one NIC now. KernelNicCounters is the real one (the one place
//     here that talks to the kernel); tests give a fake;
//   - NicSampler: a thread that reads every NIC of a list every interval (100 ms) and hands
//     each round to a sink, from Start (the agent's LaunchRanks) to Stop (StopRanks,
//     Shutdown, a lapsed lease, the agent's exit).
//
// Thread-safety: the pure functions are reentrant. A NicCounterSource is used by one thread
// at a time (the sampler's). NicSampler's Start, Stop and running may be called from any
// thread; its sink runs on the sampler's thread.
// Ownership: the sampler owns its source and its thread. KernelNicCounters owns its sockets.
// Blocking: a netlink read waits for the kernel at most 1 s; Stop waits for the round in
// progress (bounded by the same).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/agent/telemetry_line.h"
#include "injectors/fabric.h"
#include "reports/store/records.h"

namespace fl::harness {

// One NIC's counters at one moment: the store's struct (reports/store/records.h), so that a
// reading and its row are one definition. Here `extra` holds at most kMaxExtraCounters.
using NicCounters = reports::NicCounters;

// A short list, below what the coordinator takes (telemetry_line.h kMaxNicExtraCounters): at
// most 32 of the driver's, and the RDMA port's (14 at most).
inline constexpr size_t kMaxEthtoolExtras = 32;
inline constexpr size_t kMaxExtraCounters = 48;
inline constexpr size_t kMaxCounterNameBytes = kMaxNicCounterNameBytes;

// A data NIC to sample: its lab name ("nic0"), and the interface in a network namespace.
struct NicTarget {
  std::string nic;
  std::string netns;  // a named namespace (/run/netns); "" = the caller's
  std::string ifname;

  bool operator==(const NicTarget&) const = default;
};

// The data NICs to sample of host, from its host-side link ports (Fabric::HostLinks(host,
// kHost)): the kernel ports among them (a switch's port is not the host's), each under its lab
// name without the host ("h1.nic0" -> "nic0").
std::vector<NicTarget> NicTargetsOf(const std::string& host,
                                    const std::vector<injectors::Port>& ports);

// One round's reading of one NIC (agent wall clock).
struct NicSample {
  std::string nic;
  Nanos wall_ns = 0;
  NicCounters counters;
};

// ---- rtnetlink -----------------------------------------------------------------------------

// The eight link counters of one RTM_NEWLINK message (a struct nlmsghdr, an ifinfomsg and its
// attributes): IFLA_STATS64, else the 32-bit IFLA_STATS. DataLoss when the message is
// truncated, is not an RTM_NEWLINK, or holds no statistics; Unavailable for an NLMSG_ERROR
// (with the kernel's errno: a NIC that is gone is ENODEV).
[[nodiscard]] StatusOr<NicCounters> ParseLinkStats(std::span<const uint8_t> message);

// ---- ethtool statistics ------------------------------------------------------------------

// Which of a driver's ETHTOOL_GSTATS counters are kept, and how: pause-frame counters (a name
// with "pause" or "xoff", not a duration or a transition count) add up to rx_pause or
// tx_pause by their direction (an "rx"/"tx" word in the name) and are kept as extras too;
// drop, discard, error, out-of-buffer, ECN and CNP counters are kept as extras. Per-queue
// counters are summed under the name without the queue ("rx_queue_0_drops" and
// "rx_queue_1_drops" → "rx_queue_drops"; "rx3_dropped" → "rx_dropped"), so that a NIC with 64
// queues keeps a handful of names, not hundreds. At most kMaxEthtoolExtras extras, pause ones
// first; names are cut to kMaxCounterNameBytes and anything but [A-Za-z0-9_.:-] becomes '_'.
struct EthtoolPlan {
  struct Use {
    size_t index = 0;  // into the driver's ETH_SS_STATS strings and GSTATS values
    enum Role { kRxPause, kTxPause, kExtra } role = kExtra;
    std::string name;  // extra's name (pause counters have a kExtra Use of their own)
  };
  std::vector<Use> uses;
  size_t n_stats = 0;  // how many counters the driver had when the plan was made
  bool has_rx_pause = false;
  bool has_tx_pause = false;
};
EthtoolPlan PlanEthtoolCounters(const std::vector<std::string>& names);
// Adds the planned counters of one GSTATS answer to out (values shorter than the plan's
// indices are ignored: the driver changed, the caller plans again).
void ApplyEthtoolPlan(const EthtoolPlan& plan, std::span<const uint64_t> values, NicCounters& out);

// ---- RDMA ports (sysfs) ---------------------------------------------------------------------

// The RDMA port of interface ifname under ib_class_dir (/sys/class/infiniband): the port one
// of whose gid_attrs/ndevs/* names ifname (RoCE), else the only port of a device whose
// device/net/ holds ifname. "" when none (no RDMA device: the usual case here).
std::string FindRdmaPort(const std::string& ib_class_dir, const std::string& ifname);
// Adds the port's counters (counters/ and hw_counters/, a fixed short list; the data counters
// are in units of 4 bytes, as the kernel keeps them) to out.extra as "rdma_" + name. Files
// that are missing or unreadable are left out.
void ReadRdmaCounters(const std::string& port_dir, NicCounters& out);

// ---- sources -------------------------------------------------------------------------------

class NicCounterSource {
 public:
  virtual ~NicCounterSource() = default;
  // The NIC's counters now. Unavailable when the NIC cannot be read (gone, no namespace).
  [[nodiscard]] virtual StatusOr<NicCounters> Read(const NicTarget& nic) = 0;
};

// Reads the kernel's counters: one netlink and one ioctl socket per namespace, opened on first
// use (inside the namespace, RunInNetns) and kept; the ethtool plan and the RDMA port of each
// NIC are found on its first read.
class KernelNicCounters : public NicCounterSource {
 public:
  explicit KernelNicCounters(std::string ib_class_dir = "/sys/class/infiniband");
  ~KernelNicCounters() override;
  [[nodiscard]] StatusOr<NicCounters> Read(const NicTarget& nic) override;

 private:
  struct Sockets;
  struct NicState {
    bool planned = false;
    EthtoolPlan plan;
    std::string rdma_port;  // "" = none
  };
  StatusOr<Sockets*> SocketsFor(const std::string& netns);
  const std::string ib_class_dir_;
  std::map<std::string, std::unique_ptr<Sockets>> sockets_;  // by netns
  std::map<std::string, NicState> nics_;                     // by netns + "/" + ifname
};

// ---- sampler -------------------------------------------------------------------------------

// The first tick after now of the grid start, start + interval, ... (ticks already past are
// skipped: a late round is not caught up). REQUIRES: interval > 0.
Nanos NextTick(Nanos start, Nanos interval, Nanos now);

class NicSampler {
 public:
  using Sink = std::function<void(std::vector<NicSample>&&)>;

  NicSampler(std::unique_ptr<NicCounterSource> source, Sink sink, Nanos interval = 100 * kNsPerMs);
  ~NicSampler();  // Stop()
  NicSampler(const NicSampler&) = delete;
  NicSampler& operator=(const NicSampler&) = delete;

  // Starts reading these NICs: a round at once, then every interval (monotonic clock). While
  // running, a call with the same list does nothing and one with another list replaces it
  // from the next round. An empty list stops.
  void Start(std::vector<NicTarget> nics);
  // Takes a last round, so that the samples reach the end of the job, and stops the thread.
  // Idempotent.
  void Stop();
  bool running() const;

 private:
  void Loop();
  void Round(const std::vector<NicTarget>& nics);

  std::unique_ptr<NicCounterSource> source_;
  Sink sink_;
  const Nanos interval_;
  std::mutex control_mu_;  // serialises Start and Stop (the thread is joined outside mu_)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<NicTarget> nics_;
  bool stop_ = false;
  bool active_ = false;                 // a thread was started and not yet joined
  std::thread thread_;                  // written only under control_mu_
  std::map<std::string, bool> warned_;  // NICs whose read failure was logged (sampler thread)
};

}  // namespace fl::harness
