// Pure-logic tests of the injector layer: PFC frames, parameter validation, handles, journal.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>

#include "common/file_util.h"
#include "injectors/injection.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/journal_recovery.h"
#include "injectors/pfc.h"
#include "tests/injectors/lab_testing.h"

namespace fl::injectors {
namespace {

TEST_CASE("pfc: a built frame parses back with the same fields", "[unit]") {
  PfcFrame f;
  f.src = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  f.class_enable = 0x18;
  f.quanta[3] = 0xffff;
  f.quanta[4] = 1234;
  auto bytes = BuildPfcFrame(f);
  REQUIRE(bytes.size() == kPfcFrameLen);
  CHECK(bytes[0] == 0x01);
  CHECK(bytes[5] == 0x01);
  CHECK(bytes[12] == 0x88);
  CHECK(bytes[13] == 0x08);
  CHECK(bytes[14] == 0x01);
  CHECK(bytes[15] == 0x01);
  auto back = ParsePfcFrame(bytes.data(), bytes.size());
  REQUIRE(back.ok());
  CHECK(back->src == f.src);
  CHECK(back->class_enable == 0x18);
  CHECK(back->quanta == f.quanta);
  bytes[13] = 0x00;  // another EtherType
  CHECK(ParsePfcFrame(bytes.data(), bytes.size()).status().code() == Code::kNotFound);
}

TEST_CASE("injectors: every built-in validates its parameters", "[unit]") {
  InjectorRegistry reg("injector");
  REQUIRE(RegisterBuiltinInjectors(reg).ok());
  CHECK(reg.Names().size() == 8);
  auto make = [&](std::string kind, std::map<std::string, std::string> params) {
    FaultSpec s;
    s.kind = kind;
    s.target = "h0.nic0";
    s.params = std::move(params);
    auto inj = reg.Create(kind);
    REQUIRE(inj.ok());
    return (*inj)->Validate(s);
  };
  CHECK(make("nic_port_flap", {}).ok());
  CHECK(make("nic_port_flap", {{"period", "100ms"}, {"count", "3"}}).ok());
  CHECK(make("nic_port_flap", {{"period", "-100ms"}}).code() == Code::kInvalidArgument);
  CHECK(make("nic_port_flap", {{"count", "3"}}).code() == Code::kInvalidArgument);  // no period
  CHECK(make("nic_port_flap", {{"perod", "1s"}}).message().find("unknown parameter 'perod'") !=
        std::string::npos);
  CHECK(make("tor_port_down", {{"x", "1"}}).code() == Code::kInvalidArgument);
  CHECK(make("packet_loss", {}).code() == Code::kInvalidArgument);  // percent required
  CHECK(make("packet_loss", {{"percent", "150"}}).code() == Code::kInvalidArgument);
  CHECK(make("packet_loss", {{"percent", "2.5%"}}).ok());
  CHECK(make("bandwidth_throttle", {{"rate", "100mbit"}}).ok());
  CHECK(make("bandwidth_throttle", {{"rate", "fast"}}).code() == Code::kInvalidArgument);
  CHECK(make("pfc_storm", {{"mode", "frames"}, {"priorities", "3,4"}, {"quanta", "100"}}).ok());
  CHECK(make("pfc_storm", {{"priorities", "9"}}).code() == Code::kInvalidArgument);
  CHECK(make("pfc_storm", {{"watchdog", "-1s"}}).code() == Code::kInvalidArgument);
  CHECK(make("container_kill", {}).ok());
  CHECK(reg.Create("nic_flap").status().code() == Code::kNotFound);
  // Numbers are bounded, NaN and infinities refused.
  CHECK(make("nic_port_flap", {{"period", "100ms"}, {"count", "1e30"}}).code() ==
        Code::kInvalidArgument);
  CHECK(make("nic_port_flap", {{"period", "100ms"}, {"count", "100001"}}).code() ==
        Code::kInvalidArgument);
  CHECK(make("nic_port_flap", {{"period", "100ms"}, {"count", "nan"}}).code() ==
        Code::kInvalidArgument);
  CHECK(make("nic_port_flap", {{"period", "100us"}}).code() == Code::kInvalidArgument);
  CHECK(make("nic_port_flap", {{"period", "2h"}}).code() == Code::kInvalidArgument);
  CHECK(make("packet_loss", {{"percent", "nan"}}).code() == Code::kInvalidArgument);
  CHECK(make("packet_loss", {{"percent", "inf"}}).code() == Code::kInvalidArgument);
  CHECK(make("bandwidth_throttle", {{"rate", "5tbit"}}).code() == Code::kInvalidArgument);
  CHECK(make("bandwidth_throttle", {{"rate", "1gbit"}, {"burst", "1GiB"}}).code() ==
        Code::kInvalidArgument);
  CHECK(make("pfc_storm", {{"watchdog", "2h"}}).code() == Code::kInvalidArgument);
  CHECK(make("pfc_storm", {{"fps", "nan"}}).code() == Code::kInvalidArgument);
}

TEST_CASE("injectors: every built-in describes itself in its registry entry", "[unit]") {
  const InjectorRegistry& reg = BuiltinInjectors();
  CHECK(reg.Names().size() == 8);
  for (const auto& name : reg.Names()) {
    INFO(name);
    const InjectorInfo* info = reg.Describe(name);
    REQUIRE(info != nullptr);
    CHECK_FALSE(info->target_classes.empty());
    // An instantaneous fault holds nothing, so it cannot hold a path down.
    CHECK_FALSE((info->instantaneous && info->takes_path_down));
    // A switch-side kind needs switch access; only host-side kinds check host-only params.
    if (info->check_host_only) CHECK(info->host_side());
  }
  // The host-side kinds are what an inventory or Slurm lab without switches offers.
  CHECK(reg.NamesWhere([](const InjectorInfo& i) { return !i.host_side(); }) ==
        std::vector<std::string>{"tor_port_down", "tor_uplink_down"});
  const InjectorInfo* pfc = reg.Describe("pfc_storm");
  REQUIRE(pfc->check_host_only);
  CHECK(pfc->check_host_only({}).code() == Code::kInvalidArgument);
  CHECK(pfc->check_host_only({{"mode", "frames"}}).ok());
}

TEST_CASE("injectors: a handle survives a JSON round trip", "[unit]") {
  FaultHandle h;
  h.id = "tor_port_down-abc";
  h.spec.kind = "tor_port_down";
  h.spec.target = "tor0.h1";
  h.spec.params = {{"a", "b"}};
  h.spec.duration = 5 * kNsPerSec;
  h.state["ports"] =
      nlohmann::json::array({PortToJson(Port{"tor0.h1", "ns", "h1", "pns", "nic0", 1, 2})});
  h.requested_wall_ns = 10;
  h.effective_wall_ns = 20;
  auto back = HandleFromJson(HandleToJson(h));
  REQUIRE(back.ok());
  CHECK(back->id == h.id);
  CHECK(back->spec.params == h.spec.params);
  CHECK(back->spec.duration == h.spec.duration);
  CHECK(back->effective_wall_ns == 20);
  CHECK(PortFromJson(back->state["ports"][0]).peer_ifname == "nic0");
  CHECK(HandleFromJson(nlohmann::json::array()).status().code() == Code::kDataLoss);
}

// A fake injector for the journal's logic (pure: no kernel objects).
class FakeInjector : public Injector {
 public:
  int applied = 0, reverted = 0;
  std::string_view kind() const override { return "fake"; }
  std::string_view help() const override { return ""; }
  std::vector<std::string> claims;  // objects Prepare claims (exclusive)
  Status Validate(const FaultSpec&) const override { return OkStatus(); }
  StatusOr<FaultHandle> Prepare(const FaultSpec& spec, const Fabric&) override {
    FaultHandle h;
    h.spec = spec;
    if (!claims.empty()) ClaimObjects(h, claims);
    return h;
  }
  Status Apply(FaultHandle& h) override {
    ++applied;
    h.requested_wall_ns = WallNowNs();
    h.effective_wall_ns = WallNowNs();
    return OkStatus();
  }
  Status Revert(const FaultHandle&) override {
    ++reverted;
    return OkStatus();
  }
  Status Verify(const FaultHandle&, Expect want) override {
    return (want == Expect::kPresent) == (applied > reverted) ? OkStatus()
                                                              : InternalError("state mismatch");
  }
};

class NoFabric : public Fabric {
 public:
  StatusOr<std::vector<Port>> HostLinks(std::string_view, PortSide) const override {
    return NotFoundError("none");
  }
  StatusOr<std::vector<Port>> Uplinks(std::string_view) const override {
    return NotFoundError("none");
  }
  StatusOr<std::vector<Port>> UpstreamOf(const Port&) const override {
    return NotFoundError("none");
  }
  StatusOr<ContainerRef> Container(std::string_view) const override {
    return NotFoundError("none");
  }
};

TEST_CASE("journal: recorded before apply and removed after a verified revert", "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  FakeInjector inj;
  NoFabric fabric;
  FaultSpec spec;
  spec.kind = "fake";
  spec.target = "x";
  auto h = InjectFault(inj, spec, fabric, &journal);
  REQUIRE(h.ok());
  auto entries = journal.List();
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].phase == "applied");
  CHECK((*entries)[0].owner_pid == getpid());
  CHECK(h->effective_wall_ns >= h->requested_wall_ns);
  REQUIRE(RevertFault(inj, *h, &journal).ok());
  CHECK(journal.List()->empty());
  REQUIRE(RevertFault(inj, *h, &journal).ok());  // a second revert is harmless
  CHECK(journal.List()->empty());
}

TEST_CASE("overlap: a fault claiming an object held by a journaled fault is refused before apply",
          "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  NoFabric fabric;
  FakeInjector first, second, elsewhere;
  first.claims = {ObjectName("root-qdisc", "ns0", "eth0")};
  second.claims = {ObjectName("root-qdisc", "ns1", "eth9"),
                   ObjectName("root-qdisc", "ns0", "eth0")};
  elsewhere.claims = {ObjectName("root-qdisc", "ns1", "eth9")};
  FaultSpec spec{"fake", "x", {}, 0, 1};
  auto h1 = InjectFault(first, spec, fabric, &journal);
  REQUIRE(h1.ok());
  auto h2 = InjectFault(second, spec, fabric, &journal);
  REQUIRE(h2.status().code() == Code::kFailedPrecondition);
  CHECK(h2.status().message().find(h1->id) != std::string::npos);
  CHECK(h2.status().message().find("root-qdisc:ns0/eth0") != std::string::npos);
  CHECK(second.applied == 0);          // nothing was applied...
  CHECK(journal.List()->size() == 1);  // ...or journaled
  CHECK(HolderOf(first.claims[0], journal).find(h1->id) != std::string::npos);
  // Another object stacks; an unclaiming fault is never refused.
  auto h3 = InjectFault(elsewhere, spec, fabric, &journal);
  REQUIRE(h3.ok());
  FakeInjector free_kind;
  auto h4 = InjectFault(free_kind, spec, fabric, &journal);
  REQUIRE(h4.ok());
  // Once the holder is reverted the object is free again.
  REQUIRE(RevertFault(first, *h1, &journal).ok());
  REQUIRE(RevertFault(elsewhere, *h3, &journal).ok());
  auto again = InjectFault(second, spec, fabric, &journal);
  REQUIRE(again.ok());
  REQUIRE(RevertFault(second, *again, &journal).ok());
  REQUIRE(RevertFault(free_kind, *h4, &journal).ok());
  CHECK(journal.List()->empty());
  CHECK(HolderOf(first.claims[0], journal).empty());
}

TEST_CASE("journal: entries of a dead owner are recovered but a live owner's are not", "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  InjectorRegistry reg("injector");
  auto* counters = new FakeInjector();  // shared by the factory below, owned here
  std::unique_ptr<FakeInjector> owner(counters);
  REQUIRE(reg.Register("fake",
                       [counters]() -> StatusOr<std::unique_ptr<Injector>> {
                         auto f = std::make_unique<FakeInjector>();
                         f->applied = 1;  // it was applied by the dead owner
                         ++counters->reverted;
                         return std::unique_ptr<Injector>(std::move(f));
                       })
              .ok());
  // An entry owned by a child that has exited.
  pid_t child = fork();
  if (child == 0) {
    FaultJournal j;
    FaultHandle h;
    h.id = "fake-dead";
    h.spec.kind = "fake";
    _exit(j.Record(h, "applied").ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WEXITSTATUS(status) == 0);
  FaultHandle mine;
  mine.id = "fake-mine";
  mine.spec.kind = "fake";
  REQUIRE(journal.Record(mine, "applied").ok());
  auto report = RecoverDeadFaults(journal, reg);
  CHECK(report.reverted == std::vector<std::string>{"fake-dead"});
  CHECK(report.skipped == std::vector<std::string>{"fake-mine"});
  CHECK(report.failed.empty());
  CHECK(journal.List()->size() == 1);
  REQUIRE(journal.Remove("fake-mine").ok());
}

// An injector whose revert always fails (the switch or link it needs cannot be reached).
class UnrevertableInjector : public FakeInjector {
 public:
  Status Revert(const FaultHandle&) override { return UnavailableError("cannot reach it"); }
};

TEST_CASE(
    "journal: a failed revert removes the entry only when every object it holds is gone, never "
    "for a switch port",
    "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  InjectorRegistry reg("injector");
  REQUIRE(reg.Register("stuck",
                       []() -> StatusOr<std::unique_ptr<Injector>> {
                         return std::unique_ptr<Injector>(std::make_unique<UnrevertableInjector>());
                       })
              .ok());
  // Entries of a dead owner (a child that has exited), one per kind of object.
  struct Case {
    std::string id, object;
    bool gone;
  };
  const std::vector<Case> cases = {
      {"on-a-gone-netns", "root-qdisc:fl-no-such-netns-" + std::to_string(getpid()) + "/eth0",
       true},
      {"on-a-gone-link", "link-admin:-/flnosuch" + std::to_string(getpid() % 10000), true},
      {"on-lo", "link-admin:-/lo", false},  // still here: the revert's failure stands
      {"on-a-switch", "link-admin:switch:leaf0/Ethernet12", false},
  };
  pid_t child = fork();
  if (child == 0) {
    for (const Case& c : cases) {
      FaultHandle h;
      h.id = c.id;
      h.spec.kind = "stuck";
      ClaimObjects(h, {c.object});
      if (!journal.Record(h, "applied").ok()) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WEXITSTATUS(status) == 0);
  auto report = RecoverDeadFaults(journal, reg);
  CHECK(report.reverted.empty());
  std::set<std::string> gone, failed;
  for (const auto& g : report.gone) gone.insert(g.substr(0, g.find(':')));
  for (const auto& f : report.failed) failed.insert(f.substr(0, f.find(':')));
  for (const Case& c : cases) {
    INFO(c.id);
    CHECK(gone.count(c.id) == (c.gone ? 1u : 0u));
    CHECK(failed.count(c.id) == (c.gone ? 0u : 1u));
  }
  CHECK(journal.List()->size() == 2);  // lo's and the switch's stay for a later recovery
}

TEST_CASE("journal: ParseJournalEntry checks every field and never throws", "[unit]") {
  const std::string good =
      R"({"owner_pid": 42, "owner_start": 7, "phase": "applied",
          "handle": {"id": "fake-1", "kind": "fake", "target": "h0.nic0",
                     "params": {"rate": "1gbit"}, "duration_ns": 5, "state": {}}})";
  auto e = ParseJournalEntry(good, "j.json");
  REQUIRE(e.ok());
  CHECK(e->owner_pid == 42);
  CHECK(e->owner_start == 7);
  CHECK(e->handle.id == "fake-1");
  CHECK(e->handle.spec.params.at("rate") == "1gbit");
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    auto p = t.find(from);
    REQUIRE(p != std::string::npos);
    t.replace(p, from.size(), to);
    auto r = ParseJournalEntry(t, "j.json");
    INFO(t);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kDataLoss);
    CHECK(r.status().message().rfind("j.json", 0) == 0);
    return r.status().message();
  };
  CHECK(bad(R"("owner_pid": 42)", R"("owner_pid": "x")").find("owner_pid") != std::string::npos);
  bad(R"("owner_pid": 42)", R"("owner_pid": -1)");
  bad(R"("owner_pid": 42)", R"("owner_pid": 0)");
  bad(R"("owner_pid": 42)", R"("owner_pid": 1e3)");
  bad(R"("owner_pid": 42)", R"("owner_pid": 99999999999999999999)");
  bad(R"("owner_start": 7)", R"("owner_start": -7)");
  bad(R"("phase": "applied")", R"("phase": 3)");
  bad(R"("phase": "applied")", R"("phase": "done")");
  bad(R"("id": "fake-1")", R"("id": "../../etc/x")");
  bad(R"("id": "fake-1")", R"("id": 5)");
  bad(R"("kind": "fake")", R"("kind": "")");
  bad(R"("kind": "fake")", R"("kind": null)");
  bad(R"("target": "h0.nic0")", R"("target": [])");
  bad(R"({"rate": "1gbit"})", R"({"rate": 1})");
  bad(R"("duration_ns": 5)", R"("duration_ns": -5)");
  bad(R"("duration_ns": 5)", R"("duration_ns": "5")");
  bad(R"("state": {})", R"("state": 3)");
  bad(R"("handle": {)", R"("handle": 1, "x": {)");
  for (std::string t : {std::string(""), std::string("[]"), std::string("null"),
                        std::string("{\"owner_pid\""), std::string(100, '[')}) {
    auto r = ParseJournalEntry(t);
    CHECK_FALSE(r.ok());
  }
}

TEST_CASE("journal: a corrupt entry is moved aside and the others are still recovered", "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  InjectorRegistry reg("injector");
  int reverted = 0;
  REQUIRE(reg.Register("fake",
                       [&reverted]() -> StatusOr<std::unique_ptr<Injector>> {
                         auto f = std::make_unique<FakeInjector>();
                         f->applied = 1;
                         ++reverted;
                         return std::unique_ptr<Injector>(std::move(f));
                       })
              .ok());
  // A good entry of a dead owner (a child that exited), and one with a string for a number.
  pid_t child = fork();
  if (child == 0) {
    FaultJournal j;
    FaultHandle h;
    h.id = "fake-good";
    h.spec.kind = "fake";
    _exit(j.Record(h, "applied").ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string bad_path = journal.dir() + "/fake-bad.json";
  REQUIRE(WriteFileAtomic(bad_path,
                          R"({"owner_pid": "x", "owner_start": 1, "phase": "applied",
                              "handle": {"id": "fake-bad", "kind": "fake", "target": ""}})")
              .ok());
  // List reports it without moving it.
  std::vector<std::string> errors;
  auto listed = journal.List(&errors);
  REQUIRE(listed.ok());
  CHECK(listed->size() == 1);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("fake-bad.json") != std::string::npos);

  auto report = RecoverDeadFaults(journal, reg);
  CHECK(report.reverted == std::vector<std::string>{"fake-good"});
  CHECK(reverted == 1);
  CHECK(report.failed.empty());
  REQUIRE(report.corrupt.size() == 1);
  CHECK(report.corrupt[0].find(bad_path + ": ") == 0);
  CHECK(report.corrupt[0].find("owner_pid") != std::string::npos);
  CHECK(report.corrupt[0].find("moved aside to " + bad_path + ".corrupt") != std::string::npos);
  CHECK(access(bad_path.c_str(), F_OK) != 0);
  CHECK(access((bad_path + ".corrupt").c_str(), F_OK) == 0);
  CHECK(journal.List()->empty());
  // A second recovery finds nothing left to do.
  auto again = RecoverDeadFaults(journal, reg);
  CHECK(again.reverted.empty());
  CHECK(again.corrupt.empty());
  CHECK(again.failed.empty());
}

TEST_CASE("journal: an entry whose id does not match its file name is corrupt", "[unit]") {
  testing::ScopedStateDir state;
  FaultJournal journal;
  FaultHandle h;
  h.id = "fake-a";
  h.spec.kind = "fake";
  REQUIRE(journal.Record(h, "applied").ok());
  REQUIRE(rename((journal.dir() + "/fake-a.json").c_str(),
                 (journal.dir() + "/fake-b.json").c_str()) == 0);
  std::vector<CorruptEntry> corrupt;
  auto listed = journal.List(nullptr, &corrupt);
  REQUIRE(listed.ok());
  CHECK(listed->empty());
  REQUIRE(corrupt.size() == 1);
  CHECK(corrupt[0].error.find("does not match the file name") != std::string::npos);
}

}  // namespace
}  // namespace fl::injectors
