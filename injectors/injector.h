// The Injector contract: one fault kind, applied to topology targets, always revertible.
//
// Life of a fault (see Injection in injection.h, which drives it with the journal):
//   Validate(spec)        pure: the parameters make sense (no kernel access)
//   Prepare(spec, fabric) resolves the target and reads the state the revert must restore;
//                         changes nothing. The handle it returns is the dry-run answer.
//   Apply(handle)         makes the fault real; records when it became effective (after the
//                         kernel acknowledged it)
//   Verify(handle, want)  reads kernel state back: the fault is really there / really gone
//   Revert(handle)        undoes it; idempotent (a second call, or a call after a crash, is
//                         harmless); needs only the handle, so a recovering process can call it
//
// Thread-safety: an Injector may hold background work for an applied fault (a flap schedule,
// a frame generator); Apply/Revert/Verify for different handles may be called from different
// threads. Ownership: the Injector owns that background work; Revert stops it; destroying
// the Injector stops it without reverting (the journal then still holds the fault).
// Blocking: every call is bounded (commands and netlink calls carry deadlines).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/registry.h"
#include "common/status.h"
#include "injectors/fabric.h"

namespace fl::injectors {

// What a scenario or the CLI asks for.
struct FaultSpec {
  std::string kind;                           // registered injector name
  std::string target;                         // topology name
  std::map<std::string, std::string> params;  // injector-specific, values with units
  Nanos duration = 0;                         // how long to hold it (0: until reverted)
  uint64_t seed = 1;                          // for schedules with jitter
};

// An applied (or prepared) fault: everything needed to verify and revert it.
struct FaultHandle {
  std::string id;  // unique: "<kind>-<random>"
  FaultSpec spec;
  nlohmann::json state;         // injector-specific: resolved ports, prior state to restore
  Nanos requested_wall_ns = 0;  // when Apply was asked to act
  Nanos effective_wall_ns = 0;  // when the kernel acknowledged the last change
  Nanos reverted_wall_ns = 0;
};

nlohmann::json HandleToJson(const FaultHandle& handle);
StatusOr<FaultHandle> HandleFromJson(const nlohmann::json& json);

enum class Expect { kPresent, kGone };

class Injector {
 public:
  virtual ~Injector() = default;
  virtual std::string_view kind() const = 0;
  // One paragraph for --help and docs: target kinds and parameters.
  virtual std::string_view help() const = 0;

  virtual Status Validate(const FaultSpec& spec) const = 0;
  virtual StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) = 0;
  virtual Status Apply(FaultHandle& handle) = 0;
  virtual Status Revert(const FaultHandle& handle) = 0;
  virtual Status Verify(const FaultHandle& handle, Expect want) = 0;
};

// Which end of a link a kind acts on.
enum class FaultSide {
  kHost,    // the host: its NIC, its qdisc, its processes; works without switch access
  kSwitch,  // a switch port (needs the fabric's switch access: the fabric agent acts)
  kEither,  // the host end or the switch end, as the fabric puts gray faults
};

// What a kind says about itself, in its registry entry: code outside injectors/ asks this
// instead of spelling kind names (docs/architecture.md, "Plug-ins describe themselves").
struct InjectorInfo {
  // The target classes it accepts (docs/scenarios.md), the default first.
  std::vector<std::string> target_classes;
  FaultSide side = FaultSide::kHost;
  // While in effect it stops traffic on a path (a link down, a blackhole, a pause storm), so
  // the job's timeouts must outlast it; a lossy or slow path is not stopped.
  bool takes_path_down = false;
  // Nothing to hold: the fault is done once applied (a killed process), so no deadline.
  bool instantaneous = false;
  // Where the lab gives no switch access (real hosts): checks the parameters still make
  // sense from the host alone. Null: any parameters do.
  std::function<Status(const std::map<std::string, std::string>& params)> check_host_only;

  bool AcceptsClass(std::string_view cls) const;
  // Works where the lab has no switch access (the host end is enough).
  bool host_side() const { return side != FaultSide::kSwitch; }
};

using InjectorRegistry = DescribedRegistry<Injector, InjectorInfo>;

// Adds every built-in injector (nic_port_flap, tor_port_down, link_blackhole,
// tor_uplink_down, pfc_storm, packet_loss, bandwidth_throttle, container_kill), each with its
// InjectorInfo.
Status RegisterBuiltinInjectors(InjectorRegistry& registry);

// The built-in injectors, registered once per process (thread-safe): for code that asks
// what a kind is (Describe) rather than making one.
const InjectorRegistry& BuiltinInjectors();

// Parameter helpers: unknown parameter names are InvalidArgument listing the allowed ones.
Status CheckParams(const FaultSpec& spec, std::initializer_list<std::string_view> allowed);
StatusOr<Nanos> DurationParam(const FaultSpec& spec, std::string_view key, Nanos fallback);
StatusOr<double> NumberParam(const FaultSpec& spec, std::string_view key, double fallback);
StatusOr<uint64_t> RateParam(const FaultSpec& spec, std::string_view key, uint64_t fallback);
StatusOr<uint64_t> BytesParam(const FaultSpec& spec, std::string_view key, uint64_t fallback);
StatusOr<bool> BoolParam(const FaultSpec& spec, std::string_view key, bool fallback);

nlohmann::json PortToJson(const Port& port);
Port PortFromJson(const nlohmann::json& json);

}  // namespace fl::injectors
