// bandwidth_throttle and pfc_storm: tc tbf on link ends, and the PFC frame generator.
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/json_util.h"
#include "common/log.h"
#include "injectors/builtin_internal.h"
#include "injectors/injection.h"
#include "injectors/netlink.h"
#include "injectors/pfc.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"

namespace fl::injectors::internal {
namespace {

// An interface whose egress qdisc tree a fault replaces, and the tree to put back.
struct Shaped {
  std::string name, netns, ifname;
  QdiscTree prior;
};

nlohmann::json ShapedToJson(const std::vector<Shaped>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : v)
    a.push_back({{"name", s.name},
                 {"netns", s.netns},
                 {"ifname", s.ifname},
                 {"prior_tree", TreeToJson(s.prior)}});
  return a;
}

// A member of a handle's state, null when absent (a const lookup of a missing key is not
// allowed in nlohmann, and a journal's state may lack it).
nlohmann::json StateMember(const FaultHandle& h, std::string_view key) {
  return JsonGetOr<nlohmann::json>(h.state, key, nullptr, "state").value_or(nullptr);
}

std::vector<Shaped> ShapedFromJson(const nlohmann::json& a) {
  std::vector<Shaped> v;
  if (!a.is_array()) return v;
  for (const auto& j : a) {
    Shaped s;
    // The state may come back from a corrupt journal: a wrong type reads as empty (the
    // revert then fails on an unknown interface) rather than throwing.
    auto str = [&](std::string_view k) {
      return JsonGetOr<std::string>(j, k, "", "state").value_or(std::string());
    };
    auto num = [&](std::string_view k) {
      return JsonGetOr<uint64_t>(j, k, 0, "state").value_or(0);
    };
    s.name = str("name");
    s.netns = str("netns");
    s.ifname = str("ifname");
    if (j.is_object() && j.contains("prior_tree")) {
      s.prior = TreeFromJson(j["prior_tree"]);
    } else if (str("prior_kind") == "tbf") {
      // Entries written before whole trees were recorded held a tbf root or the default.
      QdiscNode n;
      n.kind = "tbf";
      n.handle = JsonGetOr<std::string>(j, "prior_handle", "", "state").value_or(std::string());
      n.parent = "root";
      n.options = {{"rate", num("prior_rate_bps") / 8},
                   {"burst", num("prior_burst")},
                   {"lat", num("prior_latency_us")}};
      s.prior.nodes.push_back(n);
    }  // else: the default, details unknown (an empty tree)
    v.push_back(s);
  }
  return v;
}

// The state a revert must restore: the whole egress tree. A tree faultline cannot recreate
// exactly (htb with classes, netem, an option it does not know...) is refused before anything
// changes.
StatusOr<Shaped> ReadShaped(std::string_view kind, const std::string& name,
                            const std::string& netns, const std::string& ifname) {
  Shaped s{name, netns, ifname, {}};
  FL_ASSIGN_OR_RETURN(s.prior, ReadQdiscTree(netns, ifname));
  Status ok = CheckRestorableTree(s.prior, ifname);
  if (!ok.ok())
    return FailedPreconditionError(std::string(kind) + ": " + name + ": " + ok.message());
  return s;
}

// Faults that replace a root qdisc hold it exclusively (see docs/injectors.md).
void ClaimQdiscs(FaultHandle& h, const std::vector<Shaped>& ends,
                 const std::vector<Port>& policed = {}) {
  std::vector<std::string> objects;
  for (const auto& s : ends) objects.push_back(ObjectName("root-qdisc", s.netns, s.ifname));
  for (const auto& p : policed) objects.push_back(ObjectName("ingress-rate", p.netns, p.ifname));
  ClaimObjects(h, objects);
}

Status RestoreAll(const std::vector<Shaped>& v) {
  Status result;
  for (const auto& s : v) {
    if (!s.netns.empty() && !NetnsExists(s.netns)) continue;
    Status r = RestoreQdiscTree(s.netns, s.ifname, s.prior);
    if (!r.ok() && result.ok()) result = r;
  }
  return result;
}

// Verify: each end carries tbf at rate (present) or exactly the tree Prepare read (gone).
Status VerifyShaped(const std::vector<Shaped>& v, uint64_t rate_bps, Expect want) {
  for (const auto& s : v) {
    FL_ASSIGN_OR_RETURN(bool gone, SkipGoneNetns(s.netns, want));
    if (gone) continue;
    if (want == Expect::kPresent) {
      FL_ASSIGN_OR_RETURN(RootQdisc q, ReadRootQdisc(s.netns, s.ifname));
      // tc reports rates rounded to its internal units; allow 1%.
      bool ok = q.kind == "tbf" && q.rate_bps + q.rate_bps / 100 + 8 >= rate_bps &&
                q.rate_bps <= rate_bps + rate_bps / 100 + 8;
      if (!ok)
        return InternalError(s.name + ": root qdisc is " + q.kind + " at " +
                             std::to_string(q.rate_bps) + " bit/s, wanted tbf at " +
                             std::to_string(rate_bps));
      continue;
    }
    // Compared with what Prepare read before this fault (and, as overlapping faults are
    // refused, before any fault on this qdisc).
    FL_ASSIGN_OR_RETURN(QdiscTree now, ReadQdiscTree(s.netns, s.ifname));
    std::string why;
    if (!SameTree(s.prior, now, &why))
      return InternalError(s.name + " (" + s.ifname + "): qdisc tree after revert differs from " +
                           "before the fault: " + why);
  }
  return OkStatus();
}

}  // namespace

// Ingress policing on a host's own NIC (traffic to the host on a host-side fabric): an nft
// netdev ingress chain with `limit rate over`, as this kernel has no tc police action or ifb.
// One table per policed port, named like the filter injectors' tables.
std::string PolicerRuleset(const std::string& table, const std::string& ifname, uint64_t rate_bps,
                           uint64_t burst_bytes) {
  return "table netdev " + table + " {\n  chain in { type filter hook ingress device \"" + ifname +
         "\" priority -500; limit rate over " +
         std::to_string(std::max<uint64_t>(1, rate_bps / 8)) + " bytes/second burst " +
         std::to_string(burst_bytes) + " bytes drop; }\n}\n";
}

namespace {

Status CheckDirection(const FaultSpec& spec) {
  auto it = spec.params.find("direction");
  if (it != spec.params.end() && it->second != "both" && it->second != "to_host" &&
      it->second != "from_host")
    return InvalidArgumentError(spec.kind + ": direction must be both, to_host or from_host");
  return OkStatus();
}

std::vector<Port> PolicedOf(const FaultHandle& h) {
  std::vector<Port> v;
  nlohmann::json a =
      JsonGetOr<nlohmann::json>(h.state, "policed", nullptr, "state").value_or(nullptr);
  if (a.is_array())
    for (const auto& j : a) v.push_back(PortFromJson(j));
  return v;
}

std::string SideName(PortSide side) { return side == PortSide::kHost ? "host" : "switch"; }

// Shaping (tbf) needs the port's kernel end: a switch reached only through its driver (a real
// switch) is refused before anything changes. A local lab over SSH keeps its kernel ends.
Status NeedKernelEnd(const Port& p, std::string_view kind) {
  if (!ViaDriver(p) || HasKernelEnd(p)) return OkStatus();
  return FailedPreconditionError(std::string(kind) + ": " + p.name + " (" + SwitchPortLabel(p) +
                                 ") is a port of a real switch; this injector shapes kernel "
                                 "queues and has no switch-driver path (use it on the hosts' "
                                 "NICs)");
}

class BandwidthThrottle : public Injector {
 public:
  std::string_view kind() const override { return "bandwidth_throttle"; }
  std::string_view help() const override {
    return "limits a link to a rate. Target: ToR port, NIC, host, rail or uplink. Params: rate "
           "(required, e.g. 100mbit), burst (default 256KiB: smaller bursts collapse TCP), "
           "direction (both|to_host|from_host, default both). Switch-side fabric (local lab): "
           "tc tbf on the switch port (to_host) and the host NIC (from_host). Host-side fabric "
           "(real hosts): tbf on the host NIC's egress (from_host) and nft ingress policing on "
           "it (to_host). Revert restores exactly the qdisc tree read before (mq with per-queue "
           "children included); a tree it could not restore is refused before anything changes.";
  }
  Status Validate(const FaultSpec& spec) const override {
    FL_RETURN_IF_ERROR(CheckParams(spec, {"rate", "burst", "direction"}));
    if (!spec.params.count("rate"))
      return InvalidArgumentError("bandwidth_throttle: parameter 'rate' is required");
    FL_ASSIGN_OR_RETURN(uint64_t rate, RateParam(spec, "rate", 0));
    if (rate < 8000 || rate > 1000ull * 1000 * 1000 * 1000)
      return InvalidArgumentError("bandwidth_throttle: rate must be between 8kbit and 1tbit");
    FL_ASSIGN_OR_RETURN(uint64_t burst, BytesParam(spec, "burst", 256 * 1024));
    if (burst < 2048 || burst > (256ull << 20))
      return InvalidArgumentError("bandwidth_throttle: burst must be between 2KiB and 256MiB");
    return CheckDirection(spec);
  }
  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    PortSide side = fabric.GrayFaultSide();
    FL_ASSIGN_OR_RETURN(auto ports, ResolveLinks(fabric, spec.target, side));
    std::string dir = spec.params.count("direction") ? spec.params.at("direction") : "both";
    std::vector<Shaped> ends;
    std::vector<Port> policed;
    for (const auto& p : ports) {
      FL_RETURN_IF_ERROR(NeedKernelEnd(p, kind()));
      if (!IsSafeName(p.ifname, 15)) return InternalError("unsafe interface name " + p.ifname);
      if (side == PortSide::kHost) {
        // The host's own NIC: its egress is traffic from the host, its ingress traffic to it.
        if (dir != "to_host") {
          FL_ASSIGN_OR_RETURN(auto s, ReadShaped(kind(), p.name + "/from_host", p.netns, p.ifname));
          ends.push_back(s);
        }
        if (dir != "from_host") {
          FL_RETURN_IF_ERROR(GetLink(p.netns, p.ifname).status());
          policed.push_back(p);
        }
        continue;
      }
      if (dir != "from_host") {
        FL_ASSIGN_OR_RETURN(auto s, ReadShaped(kind(), p.name + "/to_host", p.netns, p.ifname));
        ends.push_back(s);
      }
      if (dir != "to_host") {
        FL_ASSIGN_OR_RETURN(auto s,
                            ReadShaped(kind(), p.name + "/from_host", p.peer_netns, p.peer_ifname));
        ends.push_back(s);
      }
    }
    FaultHandle h;
    h.spec = spec;
    h.state["side"] = SideName(side);
    h.state["ends"] = ShapedToJson(ends);
    nlohmann::json pol = nlohmann::json::array();
    for (const auto& p : policed) pol.push_back(PortToJson(p));
    h.state["policed"] = pol;
    ClaimQdiscs(h, ends, policed);
    return h;
  }
  Status Apply(FaultHandle& h) override {
    FL_ASSIGN_OR_RETURN(uint64_t rate, RateParam(h.spec, "rate", 0));
    FL_ASSIGN_OR_RETURN(uint64_t burst, BytesParam(h.spec, "burst", 256 * 1024));
    h.requested_wall_ns = WallNowNs();
    for (const auto& s : ShapedFromJson(h.state["ends"]))
      FL_RETURN_IF_ERROR(SetTbf(s.netns, s.ifname, rate, burst));
    auto policed = PolicedOf(h);
    for (size_t i = 0; i < policed.size(); ++i)
      FL_RETURN_IF_ERROR(NftApply(
          policed[i].netns, PolicerRuleset(NftTableName(h, i), policed[i].ifname, rate, burst)));
    h.effective_wall_ns = WallNowNs();
    return OkStatus();
  }
  Status Revert(const FaultHandle& h) override {
    Status result = RestoreAll(ShapedFromJson(StateMember(h, "ends")));
    auto policed = PolicedOf(h);
    for (size_t i = 0; i < policed.size(); ++i) {
      Status r = NftDeleteTable(policed[i].netns, "netdev", NftTableName(h, i));
      if (!r.ok() && result.ok()) result = r;
    }
    return result;
  }
  Status Verify(const FaultHandle& h, Expect want) override {
    FL_ASSIGN_OR_RETURN(uint64_t rate, RateParam(h.spec, "rate", 0));
    FL_RETURN_IF_ERROR(VerifyShaped(ShapedFromJson(StateMember(h, "ends")), rate, want));
    auto policed = PolicedOf(h);
    for (size_t i = 0; i < policed.size(); ++i) {
      const Port& p = policed[i];
      FL_ASSIGN_OR_RETURN(bool gone, SkipGoneNetns(p.netns, want));
      if (gone) continue;
      FL_ASSIGN_OR_RETURN(bool exists, NftTableExists(p.netns, "netdev", NftTableName(h, i)));
      if (want == Expect::kPresent && !exists)
        return InternalError("ingress policer for " + p.name + " is missing");
      if (want == Expect::kGone && exists)
        return InternalError("ingress policer for " + p.name + " is still there after revert");
    }
    return OkStatus();
  }
};

StatusOr<uint16_t> ParsePriorities(const FaultSpec& spec) {
  auto it = spec.params.find("priorities");
  if (it == spec.params.end()) return uint16_t{1 << 3};  // RoCE's usual lossless class
  uint16_t mask = 0;
  std::istringstream in(it->second);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.size() != 1 || item[0] < '0' || item[0] > '7')
      return InvalidArgumentError("pfc_storm: priorities must be a list of 0-7, e.g. 3,4");
    mask |= 1u << (item[0] - '0');
  }
  if (!mask) return InvalidArgumentError("pfc_storm: priorities is empty");
  return mask;
}

// pfc_storm: mode=stall emulates what a storm does to the fabric (the paused port's egress
// stops; optionally the pause spreads upstream; an optional watchdog releases it after T);
// mode=frames sends real 802.1Qbb frames from the target NIC.
class PfcStorm : public Injector {
 public:
  ~PfcStorm() override {
    for (auto& [id, w] : TakeAllWorkers(mu_, workers_)) w->Stop();
  }
  std::string_view kind() const override { return "pfc_storm"; }
  std::string_view help() const override {
    return "PFC pause storm from a NIC. Target: NIC (h0.nic0), host or rail. Params: mode "
           "(stall|frames, default stall). stall (needs switch access: not on real hosts): "
           "the ToR port toward the NIC stops sending "
           "(tbf at stall_rate, default 8kbit); spread=true also stalls the ports that send "
           "into that ToR; watchdog=T releases the stall after T (like a PFC watchdog). "
           "frames: real IEEE 802.1Qbb frames from the NIC over AF_PACKET; priorities (e.g. "
           "3,4; default 3), quanta (0-65535, default 65535), fps (default 1000).";
  }
  Status Validate(const FaultSpec& spec) const override {
    FL_RETURN_IF_ERROR(CheckParams(
        spec, {"mode", "spread", "watchdog", "stall_rate", "priorities", "quanta", "fps"}));
    std::string mode = spec.params.count("mode") ? spec.params.at("mode") : "stall";
    if (mode != "stall" && mode != "frames")
      return InvalidArgumentError("pfc_storm: mode must be stall or frames");
    FL_RETURN_IF_ERROR(BoolParam(spec, "spread", false).status());
    FL_ASSIGN_OR_RETURN(Nanos watchdog, DurationParam(spec, "watchdog", 0));
    if (watchdog > 3600 * kNsPerSec)
      return InvalidArgumentError("pfc_storm: watchdog must be at most 1h");
    FL_ASSIGN_OR_RETURN(uint64_t stall, RateParam(spec, "stall_rate", 8000));
    if (stall < 8 || stall > 1000ull * 1000 * 1000 * 1000)
      return InvalidArgumentError("pfc_storm: stall_rate must be between 8bit and 1tbit");
    FL_RETURN_IF_ERROR(ParsePriorities(spec).status());
    FL_ASSIGN_OR_RETURN(double quanta, NumberParam(spec, "quanta", 65535));
    if (quanta < 0 || quanta > 65535 || quanta != static_cast<int>(quanta))
      return InvalidArgumentError("pfc_storm: quanta must be a whole number in 0..65535");
    FL_ASSIGN_OR_RETURN(double fps, NumberParam(spec, "fps", 1000));
    if (!(fps > 0 && fps <= 1e6)) return InvalidArgumentError("pfc_storm: fps must be in (0, 1e6]");
    return OkStatus();
  }
  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric& fabric) override {
    FaultHandle h;
    h.spec = spec;
    std::string mode = spec.params.count("mode") ? spec.params.at("mode") : "stall";
    if (mode == "stall" && fabric.GrayFaultSide() == PortSide::kHost)
      return FailedPreconditionError(
          "pfc_storm: mode=stall pauses the switch port toward " + spec.target +
          ", and this lab has no switch access (faults act on the hosts' own NICs); use "
          "mode=frames, which sends real PFC frames from the host NIC");
    FL_ASSIGN_OR_RETURN(auto host_ports, fabric.HostLinks(spec.target, PortSide::kHost));
    h.state["mode"] = mode;
    if (mode == "frames") {
      for (const auto& p : host_ports)
        if (!IsSafeName(p.ifname, 15)) return InternalError("unsafe interface name " + p.ifname);
      SetPorts(h, host_ports);
      return h;
    }
    FL_ASSIGN_OR_RETURN(auto victims, fabric.HostLinks(spec.target, PortSide::kSwitch));
    FL_ASSIGN_OR_RETURN(bool spread, BoolParam(spec, "spread", false));
    std::vector<Shaped> ends;
    for (const auto& v : victims) {
      FL_RETURN_IF_ERROR(NeedKernelEnd(v, kind()));
      FL_ASSIGN_OR_RETURN(auto s, ReadShaped(kind(), v.name, v.netns, v.ifname));
      ends.push_back(s);
      if (!spread) continue;
      FL_ASSIGN_OR_RETURN(auto ups, fabric.UpstreamOf(v));
      for (const auto& u : ups) {
        FL_ASSIGN_OR_RETURN(auto su, ReadShaped(kind(), u.name, u.netns, u.ifname));
        ends.push_back(su);
      }
    }
    h.state["ends"] = ShapedToJson(ends);
    ClaimQdiscs(h, ends);
    return h;
  }
  Status Apply(FaultHandle& h) override {
    h.requested_wall_ns = WallNowNs();
    auto w = std::make_unique<Worker>();
    if (h.state["mode"] == "frames") {
      FL_ASSIGN_OR_RETURN(uint16_t mask, ParsePriorities(h.spec));
      FL_ASSIGN_OR_RETURN(double quanta, NumberParam(h.spec, "quanta", 65535));
      FL_ASSIGN_OR_RETURN(double fps, NumberParam(h.spec, "fps", 1000));
      PfcFrame f;
      f.class_enable = mask;
      for (int i = 0; i < 8; ++i) f.quanta[i] = (mask >> i & 1) ? static_cast<uint16_t>(quanta) : 0;
      for (const auto& p : PortsOf(h)) {
        FL_ASSIGN_OR_RETURN(auto g, PfcGenerator::Start(p.netns, p.ifname, f, fps));
        w->generators.push_back(std::move(g));
      }
      // Effective once the first frame of every generator has left.
      bool sent = WaitUntil(
          [&] {
            for (auto& g : w->generators)
              if (g->sent() == 0) return false;
            return true;
          },
          Deadline::After(kNsPerSec), 20 * kNsPerUs);
      if (!sent) return InternalError("pfc_storm: no PFC frame could be sent within 1s");
      h.effective_wall_ns = WallNowNs();
    } else {
      FL_ASSIGN_OR_RETURN(uint64_t stall, RateParam(h.spec, "stall_rate", 8000));
      auto ends = ShapedFromJson(h.state["ends"]);
      for (const auto& s : ends)
        FL_RETURN_IF_ERROR(SetTbf(s.netns, s.ifname, stall, 1600, 64 * 1024));
      h.effective_wall_ns = WallNowNs();
      FL_ASSIGN_OR_RETURN(Nanos watchdog, DurationParam(h.spec, "watchdog", 0));
      if (watchdog > 0) {
        Worker* raw = w.get();
        w->thread = std::thread([raw, ends, watchdog] {
          std::unique_lock<std::mutex> l(raw->mu);
          if (raw->cv.wait_for(l, std::chrono::nanoseconds(watchdog), [&] { return raw->stop; }))
            return;
          FL_LOG(kInfo, "inject") << "pfc_storm: watchdog released the stall";
          // RestoreAll logs what it cannot restore; the revert restores again and reports.
          RestoreAll(ends).IgnoreError();
          raw->released = true;
        });
      }
    }
    std::lock_guard<std::mutex> l(mu_);
    workers_[h.id] = std::move(w);
    return OkStatus();
  }
  Status Revert(const FaultHandle& h) override {
    std::unique_ptr<Worker> w = TakeWorker(mu_, workers_, h.id);
    if (w) w->Stop();
    if (JsonGetOr<std::string>(h.state, "mode", "stall", "state").value_or("stall") == "frames")
      return OkStatus();
    return RestoreAll(ShapedFromJson(StateMember(h, "ends")));
  }
  Status Verify(const FaultHandle& h, Expect want) override {
    if (JsonGetOr<std::string>(h.state, "mode", "stall", "state").value_or("stall") == "frames") {
      std::lock_guard<std::mutex> l(mu_);
      auto it = workers_.find(h.id);
      bool running = it != workers_.end();
      if (want == Expect::kPresent && !running)
        return InternalError("pfc_storm: no frame generator is running");
      if (want == Expect::kGone && running)
        return InternalError("pfc_storm: the frame generator is still running");
      return OkStatus();
    }
    FL_ASSIGN_OR_RETURN(uint64_t stall, RateParam(h.spec, "stall_rate", 8000));
    return VerifyShaped(ShapedFromJson(StateMember(h, "ends")), stall, want);
  }

 private:
  struct Worker {
    std::vector<std::unique_ptr<PfcGenerator>> generators;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    bool released = false;
    void Stop() {
      {
        std::lock_guard<std::mutex> l(mu);
        stop = true;
      }
      cv.notify_all();
      if (thread.joinable()) thread.join();
      for (auto& g : generators) g->Stop();
    }
  };
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Worker>> workers_;
};

}  // namespace

std::unique_ptr<Injector> NewBandwidthThrottle() { return std::make_unique<BandwidthThrottle>(); }
std::unique_ptr<Injector> NewPfcStorm() { return std::make_unique<PfcStorm>(); }

}  // namespace fl::injectors::internal
