// SwitchDriver: how the injectors act on a real switch (ARCHITECTURE.md §4, §7).
//
// A switch-side fault on a real fabric (tor_port_down, tor_uplink_down, a switch-side
// link_blackhole) is made by a SwitchDriver talking to the switch's management plane: port
// admin state, a drop rule on a port, a rate limit where the platform has one, counters, the
// PFC watchdog settings. Drivers are chosen by name from a registry:
//
//   ssh-template  each operation is a command template run over the OpenSSH client (by
//                 absolute path, argv only, BatchMode, ConnectTimeout, host keys checked per
//                 the inventory), plus a read-back command and the pattern its output must
//                 match. Presets for SONiC, Arista EOS and Cumulus NVUE ship as YAML in
//                 configs/switches/; users copy and adapt one without recompiling.
//
// A Port whose `sw` is set (injectors/fabric.h) is made through the driver instead of
// netlink/nft; the SwitchConn travels in the fault's handle (and so in the journal), so a
// revert, or the recovery of a journal after a crash, needs neither the inventory nor the
// Fabric, only the handle.
//
// Every call has a deadline and every error names the switch and the command:
//   "switch leaf1 (root@198.19.3.201): `config interface shutdown Ethernet12`: exit 1: ..."
// Codes: InvalidArgument (a bad argument, refused before anything is sent), Unavailable (the
// switch cannot be reached or refuses the key), DeadlineExceeded, Internal (the command
// failed), FailedPrecondition (the read-back did not match, or the preset lacks the
// operation).
//
// Thread-safety: a driver object may be used from one thread at a time; distinct objects for
// the same switch may run concurrently (each call is its own SSH session). OpenSwitchDriver
// and the registry may be called from any thread. Opening a driver never touches the network.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status.h"

namespace fl::injectors {

// What a driver needs to reach one switch. Stored in fault handles (ToJson/FromJson).
struct SwitchConn {
  std::string name;                     // the inventory's name for it: "leaf1"
  std::string driver = "ssh-template";  // registry name
  std::string address;                  // management address: IP or DNS name
  int port = 22;
  std::string user;
  std::string key_file;              // private key (absolute path)
  std::string known_hosts;           // a known_hosts file (absolute path), or:
  std::string host_key;              // the switch's pinned public host key ("ssh-ed25519 AAAA...")
  std::string jump;                  // optional jump host, "user@host" or "user@host:port"
  std::string ssh = "/usr/bin/ssh";  // the OpenSSH client (absolute path)
  std::string preset;                // where the preset came from (a path), for messages
  std::string preset_text;           // the preset's YAML (so that a revert needs no file)
  Nanos connect_timeout = 5 * kNsPerSec;
  Nanos command_timeout = 20 * kNsPerSec;  // per operation, read-back included

  // "switch leaf1 (root@198.19.3.201)": the prefix of every message about this switch.
  std::string Describe() const;
};

nlohmann::json SwitchConnToJson(const SwitchConn& conn);
// InvalidArgument for a missing or mistyped member (a corrupt journal entry).
StatusOr<SwitchConn> SwitchConnFromJson(const nlohmann::json& json);

// Which way a drop rule or rate limit acts on a switch port: traffic the port receives (from
// the host or far switch: "ingress") or sends ("egress"). A fault's to_host is egress on the
// host's ToR port, from_host is ingress.
enum class SwitchStage { kIngress, kEgress };
std::string_view SwitchStageName(SwitchStage stage);  // "ingress" | "egress"

enum class SwitchOp {
  kPortDown,
  kPortUp,
  kPortState,
  kDropAdd,
  kDropRemove,
  kRateAdd,
  kRateRemove,
  kCounters,
  kPfcWatchdog,
};
std::string_view SwitchOpName(SwitchOp op);  // the preset's key: "port_down", "drop_add", ...

struct SwitchPortState {
  bool admin_up = false;
  bool oper_up = false;
};

// Counters of one port; a value the platform does not report is absent (has_* false / no
// map entry).
struct SwitchCounters {
  bool has_octets = false, has_packets = false, has_drops = false;
  uint64_t in_octets = 0, out_octets = 0;
  uint64_t in_packets = 0, out_packets = 0;
  uint64_t in_drops = 0, out_drops = 0;
  std::map<int, uint64_t> pfc_rx;  // pause frames received, per priority
  std::map<int, uint64_t> pfc_tx;  // pause frames sent, per priority
};

struct PfcWatchdogSettings {
  bool enabled = false;
  std::string action;      // "drop", "forward", "alert", ... as the switch says it
  Nanos detection_ns = 0;  // 0: not reported
  Nanos restoration_ns = 0;
  std::string raw;  // the command's output, for the record
};

class SwitchDriver {
 public:
  virtual ~SwitchDriver() = default;
  virtual const SwitchConn& conn() const = 0;

  // Whether the preset/platform has this operation at all.
  virtual bool Supports(SwitchOp op) const = 0;
  // A port name this switch can have (the preset's port pattern): InvalidArgument saying
  // which pattern it misses. No network.
  virtual Status CheckPortName(std::string_view port) const = 0;

  // Sets the port's admin state and waits until the read-back shows it.
  virtual Status SetPortAdmin(const std::string& port, bool up, Deadline deadline) = 0;
  virtual StatusOr<SwitchPortState> ReadPort(const std::string& port, Deadline deadline) = 0;
  // A drop-everything rule named `rule` ([A-Za-z0-9_-], at most 32) on the port for one stage;
  // verified by read-back. RemoveDrop of a rule that is not there is OK.
  virtual Status AddDrop(const std::string& port, SwitchStage stage, const std::string& rule,
                         Deadline deadline) = 0;
  virtual Status RemoveDrop(const std::string& port, SwitchStage stage, const std::string& rule,
                            Deadline deadline) = 0;
  // A rate limit of bps bits/s on the port's stage (FailedPrecondition when unsupported).
  virtual Status AddRateLimit(const std::string& port, SwitchStage stage, uint64_t bps,
                              const std::string& rule, Deadline deadline) = 0;
  virtual Status RemoveRateLimit(const std::string& port, SwitchStage stage,
                                 const std::string& rule, Deadline deadline) = 0;
  virtual StatusOr<SwitchCounters> ReadCounters(const std::string& port, Deadline deadline) = 0;
  virtual StatusOr<PfcWatchdogSettings> ReadPfcWatchdog(const std::string& port,
                                                        Deadline deadline) = 0;
};

// A rule name for a fault's handle id and port index: [A-Za-z0-9_], at most 32 characters.
std::string SwitchRuleName(std::string_view handle_id, size_t index);

}  // namespace fl::injectors
