// nic_port_flap, tor_port_down, tor_uplink_down: administrative link state via rtnetlink.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/rng.h"
#include "injectors/builtin_internal.h"
#include "injectors/injection.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "injectors/sys.h"

namespace fl::injectors::internal {

std::vector<Port> PortsOf(const FaultHandle& handle) {
  std::vector<Port> ports;
  if (handle.state.contains("ports"))
    for (const auto& p : handle.state["ports"]) ports.push_back(PortFromJson(p));
  return ports;
}

void SetPorts(FaultHandle& handle, const std::vector<Port>& ports) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : ports) arr.push_back(PortToJson(p));
  handle.state["ports"] = arr;
}

StatusOr<std::vector<Port>> ResolveLinks(const Fabric& fabric, std::string_view target,
                                         PortSide side) {
  auto host = fabric.HostLinks(target, side);
  if (host.ok()) return host;
  auto up = fabric.Uplinks(target);
  if (up.ok()) return up;
  return host.status();
}

std::string NftTableName(const FaultHandle& handle, size_t i) {
  std::string n = "fl_" + handle.id + "_" + std::to_string(i);
  for (char& c : n)
    if (c == '-' || c == '.') c = '_';
  return n;
}

StatusOr<bool> SkipGoneNetns(const std::string& netns, Expect want) {
  if (netns.empty() || NetnsExists(netns)) return false;
  if (want == Expect::kGone) return true;
  return UnavailableError("namespace " + netns + " is gone");
}

namespace {

enum class LinkKind { kNicFlap, kTorPort, kUplink };

// Takes the administrative state of a set of ports down; nic_port_flap optionally repeats
// down/up on a seeded schedule until reverted or its count is reached.
class LinkDownInjector : public Injector {
 public:
  explicit LinkDownInjector(LinkKind k) : k_(k) {}
  ~LinkDownInjector() override {
    for (auto& [id, f] : TakeAllWorkers(mu_, flappers_)) f->Stop();
  }

  std::string_view kind() const override {
    switch (k_) {
      case LinkKind::kNicFlap:
        return "nic_port_flap";
      case LinkKind::kTorPort:
        return "tor_port_down";
      case LinkKind::kUplink:
        return "tor_uplink_down";
    }
    return "";
  }
  std::string_view help() const override {
    switch (k_) {
      case LinkKind::kNicFlap:
        return "host-side NIC port down via rtnetlink. Target: host, NIC (h0.nic1) or rail. "
               "Params: period (flap every period instead of one shot), down (time down per "
               "flap, default period/2), jitter (added to each period, uniform, seeded), count "
               "(flaps, default until reverted).";
      case LinkKind::kTorPort:
        return "switch-side port of a host link down (the host loses carrier). Target: ToR "
               "port (tor1.h0), NIC, host or rail.";
      case LinkKind::kUplink:
        return "ToR-to-spine uplink down at the ToR end. Target: uplink (tor0.up0) or ToR (all "
               "its uplinks).";
    }
    return "";
  }

  Status Validate(const FaultSpec& spec) const override {
    if (k_ != LinkKind::kNicFlap) return CheckParams(spec, {});
    FL_RETURN_IF_ERROR(CheckParams(spec, {"period", "down", "jitter", "count"}));
    FL_ASSIGN_OR_RETURN(Nanos period, DurationParam(spec, "period", 0));
    FL_ASSIGN_OR_RETURN(Nanos down, DurationParam(spec, "down", period / 2));
    FL_ASSIGN_OR_RETURN(Nanos jitter, DurationParam(spec, "jitter", 0));
    FL_ASSIGN_OR_RETURN(double count, NumberParam(spec, "count", 0));
    // Bounded before the cast (a double beyond 2^64 does not convert) and before any loop.
    if (count < 0 || count > 100000 || count != static_cast<uint64_t>(count))
      return InvalidArgumentError("nic_port_flap: count must be a whole number in 0..100000");
    if (period > 0 && (period < kNsPerMs || period > 3600 * kNsPerSec || jitter > period))
      return InvalidArgumentError(
          "nic_port_flap: period must be between 1ms and 1h, jitter at most the period");
    if (period == 0 &&
        (spec.params.count("down") || spec.params.count("jitter") || spec.params.count("count")))
      return InvalidArgumentError("nic_port_flap: down, jitter and count need a period");
    if (period > 0 && (down <= 0 || down >= period))
      return InvalidArgumentError("nic_port_flap: down must be > 0 and shorter than period");
    return OkStatus();
  }

  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    std::vector<Port> ports;
    if (k_ == LinkKind::kUplink) {
      FL_ASSIGN_OR_RETURN(ports, fabric.Uplinks(spec.target));
    } else {
      FL_ASSIGN_OR_RETURN(
          ports, fabric.HostLinks(spec.target,
                                  k_ == LinkKind::kNicFlap ? PortSide::kHost : PortSide::kSwitch));
    }
    // One link-state fault per port at a time: a second one would bring the port up on its
    // revert (or its flap schedule) while the first still wants it down.
    std::vector<std::string> objects;
    for (const auto& p : ports) {
      if (ViaDriver(p)) {
        // A real switch (or the local lab's over SSH): its driver, read back before anything.
        FL_ASSIGN_OR_RETURN(auto driver, CheckDriverPort(p, kind(),
                                                         {SwitchOp::kPortDown, SwitchOp::kPortUp,
                                                          SwitchOp::kPortState}));
        objects.push_back(ObjectName("link-admin", "switch:" + p.sw->name, p.sw_port));
        FL_ASSIGN_OR_RETURN(SwitchPortState st, driver->ReadPort(p.sw_port, SwitchDeadline(p)));
        if (!st.admin_up) {
          std::string holder = HolderOf(objects.back(), FaultJournal());
          return FailedPreconditionError(
              std::string(kind()) + ": " + p.name + " (" + SwitchPortLabel(p) +
              ") is already down" +
              (holder.empty() ? " (not by a fault in the journal)" : ", held by " + holder));
        }
        continue;
      }
      objects.push_back(ObjectName("link-admin", p.netns, p.ifname));
      FL_ASSIGN_OR_RETURN(LinkState st, pool_.GetLink(p.netns, p.ifname));
      if (!st.admin_up) {
        std::string holder = HolderOf(objects.back(), FaultJournal());
        return FailedPreconditionError(
            std::string(kind()) + ": " + p.name + " (" + p.ifname + ") is already down" +
            (holder.empty() ? " (not by a fault in the journal)" : ", held by " + holder));
      }
    }
    FaultHandle h;
    h.spec = spec;
    SetPorts(h, ports);
    ClaimObjects(h, objects);
    return h;
  }

  Status Apply(FaultHandle& h) override {
    auto ports = PortsOf(h);
    FL_ASSIGN_OR_RETURN(Nanos period, DurationParam(h.spec, "period", 0));
    h.requested_wall_ns = WallNowNs();
    FL_RETURN_IF_ERROR(SetAll(pool_, ports, false, &h.effective_wall_ns));
    if (period > 0) {
      FL_ASSIGN_OR_RETURN(Nanos down, DurationParam(h.spec, "down", period / 2));
      FL_ASSIGN_OR_RETURN(Nanos jitter, DurationParam(h.spec, "jitter", 0));
      FL_ASSIGN_OR_RETURN(double count, NumberParam(h.spec, "count", 0));
      auto f = std::make_shared<Flapper>();
      f->thread = std::thread([f, ports, period, down, jitter, count, seed = h.spec.seed] {
        RtNetlinkPool pool;  // the schedule's own sockets: pool_ serves the caller's thread
        Rng rng = Rng(seed).Fork("nic_port_flap");
        uint64_t done = 1;  // the first down has been applied by Apply
        Nanos cycle_start = MonoNowNs();
        while (true) {
          if (f->WaitFor(cycle_start + down - MonoNowNs())) return;
          // SetAll logs a port it cannot set; the revert reads every port back and reports.
          SetAll(pool, ports, true, nullptr).IgnoreError();
          f->flaps_done.fetch_add(1);
          if (count > 0 && done >= static_cast<uint64_t>(count)) return;
          Nanos extra = jitter > 0 ? rng.Between(0, jitter) : 0;
          if (f->WaitFor(cycle_start + period + extra - MonoNowNs())) return;
          cycle_start = MonoNowNs();
          // As above: logged by SetAll, checked by the revert.
          SetAll(pool, ports, false, nullptr).IgnoreError();
          ++done;
        }
      });
      std::lock_guard<std::mutex> l(mu_);
      flappers_[h.id] = f;
    }
    return OkStatus();
  }

  Status Revert(const FaultHandle& h) override {
    std::shared_ptr<Flapper> f = TakeWorker(mu_, flappers_, h.id);
    if (f) f->Stop();
    Status result;
    for (const auto& p : PortsOf(h)) {
      if (LabGone(p)) continue;  // a local lab's switch that was torn down: nothing left
      if (ViaDriver(p)) {        // every port is tried, the first failure is returned
        Status s = SetSwitchPort(p, true);
        if (!s.ok() && result.ok()) result = s;
        continue;
      }
      if (!p.netns.empty() && !NetnsExists(p.netns)) continue;  // the lab is gone: nothing left
      Status s = pool_.SetLinkUp(p.netns, p.ifname, true);
      if (!s.ok() && s.code() != Code::kNotFound && result.ok()) result = s;
    }
    return result;
  }

  Status Verify(const FaultHandle& h, Expect want) override {
    bool periodic = h.spec.params.count("period") > 0;
    for (const auto& p : PortsOf(h)) {
      if (want == Expect::kGone && LabGone(p)) continue;
      if (ViaDriver(p)) {
        FL_ASSIGN_OR_RETURN(auto driver, DriverOf(p));
        FL_ASSIGN_OR_RETURN(SwitchPortState st, driver->ReadPort(p.sw_port, SwitchDeadline(p)));
        if (want == Expect::kGone && !st.admin_up)
          return InternalError(p.name + " (" + SwitchPortLabel(p) + ") is still down after revert");
        if (want == Expect::kPresent && !periodic && st.admin_up)
          return InternalError(p.name + " (" + SwitchPortLabel(p) + ") is not down");
      } else {
        FL_ASSIGN_OR_RETURN(bool gone, SkipGoneNetns(p.netns, want));
        if (gone) continue;
        FL_ASSIGN_OR_RETURN(LinkState st, pool_.GetLink(p.netns, p.ifname));
        if (want == Expect::kGone && !st.admin_up)
          return InternalError(p.name + " (" + p.ifname + ") is still down after revert");
        if (want == Expect::kPresent && !periodic && st.admin_up)
          return InternalError(p.name + " (" + p.ifname + ") is not down");
      }
      if (want == Expect::kPresent && !periodic && k_ != LinkKind::kNicFlap &&
          !p.peer_netns.empty()) {
        // The far end must have lost carrier: that is what the fault promises.
        bool lost = WaitUntil(
            [&] {
              auto peer = pool_.GetLink(p.peer_netns, p.peer_ifname);
              return peer.ok() && !peer->carrier;
            },
            Deadline::After(kNsPerSec));
        if (!lost) return InternalError(p.peer_ifname + " in " + p.peer_netns + " kept carrier");
      }
    }
    return OkStatus();
  }

  // For benchmarks and tests: flaps completed by a periodic fault.
  uint64_t FlapsDone(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = flappers_.find(id);
    return it == flappers_.end() ? 0 : it->second->flaps_done.load();
  }

 private:
  struct Flapper {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::atomic<uint64_t> flaps_done{0};
    // Waits up to ns; true when asked to stop.
    bool WaitFor(Nanos ns) {
      std::unique_lock<std::mutex> l(mu);
      return cv.wait_for(l, std::chrono::nanoseconds(std::max<Nanos>(ns, 0)), [&] { return stop; });
    }
    void Stop() {
      {
        std::lock_guard<std::mutex> l(mu);
        stop = true;
      }
      cv.notify_all();
      if (thread.joinable()) thread.join();
    }
  };

  static Status SetAll(RtNetlinkPool& pool, const std::vector<Port>& ports, bool up,
                       Nanos* effective) {
    for (const auto& p : ports) {
      if (ViaDriver(p)) {
        FL_RETURN_IF_ERROR(SetSwitchPort(p, up));
        if (effective) *effective = WallNowNs();  // the read-back showed it
        continue;
      }
      AckTiming t;
      FL_RETURN_IF_ERROR(pool.SetLinkUp(p.netns, p.ifname, up, &t));
      if (effective) *effective = t.effective_wall_ns;
    }
    return OkStatus();
  }

  // Admin state through the switch's driver: the command, then its read-back.
  static Status SetSwitchPort(const Port& p, bool up) {
    FL_ASSIGN_OR_RETURN(auto driver, DriverOf(p));
    return driver->SetPortAdmin(p.sw_port, up, SwitchDeadline(p));
  }

  LinkKind k_;
  RtNetlinkPool pool_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Flapper>> flappers_;
};

}  // namespace

std::unique_ptr<Injector> NewNicPortFlap() {
  return std::make_unique<LinkDownInjector>(LinkKind::kNicFlap);
}
std::unique_ptr<Injector> NewTorPortDown() {
  return std::make_unique<LinkDownInjector>(LinkKind::kTorPort);
}
std::unique_ptr<Injector> NewTorUplinkDown() {
  return std::make_unique<LinkDownInjector>(LinkKind::kUplink);
}

}  // namespace fl::injectors::internal
