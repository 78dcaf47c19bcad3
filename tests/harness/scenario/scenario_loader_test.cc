#include "harness/scenario/scenario_loader.h"

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

constexpr const char* kGood = R"(name: nic_flap
description: one NIC flaps during an allreduce loop
seed: 7
lab:
  topology: /labs/rail.yaml
job:
  workload: allreduce_loop
  ccl: ftccl
  size: 16MiB
  iterations: 400
faults:
  - kind: nic_port_flap
    target: h1/nic0
    at: 5s
    duration: 2s
    params: {period: 500ms}
  - kind: container_kill
    target_class: container
    after_iteration: 200
expectations:
  survives: true
  max_detection_ms: 100
  min_degraded_ratio: 0.4
)";

StaticFaultCatalog Catalog() {
  StaticFaultCatalog c;
  c.AddKind("nic_port_flap", {"nic"});
  c.AddKind("container_kill", {"container", "rank"});
  c.AddTargets("nic", {"h0/nic0", "h0/nic1", "h1/nic0", "h1/nic1"});
  c.AddTargets("container", {"h0/c0", "h0/c1", "h1/c0", "h1/c1"});
  c.AddTargets("rank", {"0", "1", "2", "3"});
  return c;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

TEST_CASE("scenario: a valid file loads with every field", "[unit]") {
  auto s = ParseScenario(kGood, "nic_flap.yaml");
  REQUIRE(s.ok());
  CHECK(s->name == "nic_flap");
  CHECK(s->seed == 7);
  CHECK(s->lab.topology == "/labs/rail.yaml");
  CHECK(s->job.size_bytes == 16ull << 20);
  CHECK(s->job.iterations == 400);
  REQUIRE(s->faults.size() == 2);
  CHECK(s->faults[0].timing.at_ns == 5 * kNsPerSec);
  CHECK(s->faults[0].duration_ns == 2 * kNsPerSec);
  CHECK(s->faults[0].params.at("period") == "500ms");
  CHECK(s->faults[0].where == "nic_flap.yaml:12:5");
  CHECK(s->faults[1].timing.kind == FaultTiming::Kind::kAfterIteration);
  CHECK(s->expect.survives == true);
  CHECK(*s->expect.max_detection_ms == 100.0);
  CHECK_FALSE(s->expect.max_recovery_ms.has_value());
  CHECK(s->text_hash.size() == 16);
  CHECK(ValidateAgainstCatalog(*s, Catalog()).ok());
}

TEST_CASE("scenario: after_event and during time a fault against an earlier one", "[unit]") {
  const std::string two =
      Replace(kGood, "    after_iteration: 200",
              "    after_event: {event: failover_done, fault: f0, delay: 50ms}");
  auto s = ParseScenario(two, "x.yaml");
  REQUIRE(s.ok());
  const FaultTiming& t = s->faults[1].timing;
  CHECK(t.kind == FaultTiming::Kind::kAfterEvent);
  CHECK(t.anchor == "f0");
  CHECK(t.anchor_event == "failover_done");
  CHECK(t.anchor_delay_ns == 50 * kNsPerMs);
  CHECK_FALSE(t.during);

  auto d = ParseScenario(Replace(kGood, "    after_iteration: 200", "    during: f0"), "x.yaml");
  REQUIRE(d.ok());
  CHECK(d->faults[1].timing.during);
  CHECK(d->faults[1].timing.anchor_event == "fault_detected");
  CHECK(d->faults[1].timing.anchor_delay_ns == 0);
  auto dm = ParseScenario(
      Replace(kGood, "    after_iteration: 200", "    during: {fault: f0, delay: 5ms}"), "x.yaml");
  REQUIRE(dm.ok());
  CHECK(dm->faults[1].timing.anchor_delay_ns == 5 * kNsPerMs);

  auto error = [&](const std::string& with) {
    auto r = ParseScenario(Replace(kGood, "    after_iteration: 200", with), "x.yaml");
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(error("    after_event: {event: failed_over, fault: f0}")
            .rfind("x.yaml:19:26: unknown event 'failed_over' (known: injected, fault_detected, "
                   "failover_done, reverted, path_restored)",
                   0) == 0);
  CHECK(error("    during: f1")
            .rfind("x.yaml:19:13: 'f1' is not an earlier fault of this file "
                   "(those before this one are f0 .. f0)",
                   0) == 0);
  CHECK(error("    during: nic").find("'nic' is not an earlier fault") != std::string::npos);
  CHECK(error("    during: {fault: f0, event: injected}").find("unknown key 'event' in during") !=
        std::string::npos);
  CHECK(error("    after_event: {fault: f0}").find("event") != std::string::npos);
  CHECK(error("    during: f0\n    jitter: 1s").find("takes 'delay', not 'jitter'") !=
        std::string::npos);
  CHECK(error("    during: f0\n    at: 1s").find("exactly one of") != std::string::npos);
  // An anchor fires once: a periodic fault cannot be one.
  auto periodic = ParseScenario(Replace(Replace(kGood, "    at: 5s", "    every: 5s\n    count: 3"),
                                        "    after_iteration: 200", "    during: f0"),
                                "x.yaml");
  REQUIRE_FALSE(periodic.ok());
  CHECK(periodic.status().message().find("fires more than once") != std::string::npos);
}

TEST_CASE("scenario: malformed input fails with file:line:col", "[unit]") {
  SECTION("unknown key") {
    auto s = ParseScenario(Replace(kGood, "    duration: 2s", "    duraton: 2s"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:15:5: unknown key 'duraton' in fault", 0) == 0);
  }
  SECTION("bad duration") {
    auto s = ParseScenario(Replace(kGood, "at: 5s", "at: soon"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:14:9: at: not a valid duration", 0) == 0);
  }
  SECTION("negative duration") {
    auto s = ParseScenario(Replace(kGood, "duration: 2s", "duration: -2s"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("x.yaml:15:15: duration:") == 0);
    CHECK(s.status().message().find("negative") != std::string::npos);
  }
  SECTION("two triggers") {
    auto s = ParseScenario(
        Replace(kGood, "    after_iteration: 200", "    after_iteration: 200\n    at: 1s"),
        "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("exactly one of 'at', 'after_iteration', 'every' (with "
                                    "'at' for its first firing), 'after_event' or 'during'") !=
          std::string::npos);
  }
  SECTION("at beside every: the first firing") {
    auto s = ParseScenario(
        Replace(kGood, "    after_iteration: 200", "    at: 250ms\n    every: 1s\n    count: 3"),
        "x.yaml");
    REQUIRE(s.ok());
    CHECK(s->faults[1].timing.kind == FaultTiming::Kind::kEvery);
    CHECK(s->faults[1].timing.at_ns == 250 * kNsPerMs);
    CHECK(s->faults[1].timing.every_ns == kNsPerSec);
    auto alone = ParseScenario(
        Replace(kGood, "    after_iteration: 200", "    every: 1s\n    count: 3"), "x.yaml");
    REQUIRE(alone.ok());
    CHECK(alone->faults[1].timing.at_ns == kNsPerSec);  // one period in
  }
  SECTION("unknown ccl") {
    auto s = ParseScenario(Replace(kGood, "ccl: ftccl", "ccl: mpi"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().rfind("x.yaml:8:8: unknown ccl 'mpi'", 0) == 0);
  }
  SECTION("missing job") {
    std::string text = kGood;
    text = Replace(text, "job:\n", "jobs:\n");
    auto s = ParseScenario(text, "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("unknown key 'jobs' in scenario") != std::string::npos);
  }
  SECTION("every with a duration longer than the period") {
    auto s = ParseScenario(Replace(kGood, "at: 5s", "every: 1s\n    count: 3"), "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("shorter than the period") != std::string::npos);
  }
  SECTION("restart on a failover job") {
    auto s = ParseScenario(std::string(kGood) + "restart:\n  max_restarts: 2\n", "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().message().find("fail-stop") != std::string::npos);
    // A CCL that does not fail over (the descriptor's fails_over), or failover off: restarts.
    for (const char* ccl : {"ccl: gloo", "ccl: nccl", "ccl: ftccl\n  failover: false"})
      CHECK(ParseScenario(Replace(kGood, "ccl: ftccl", ccl) + "restart:\n  max_restarts: 2\n",
                          "x.yaml")
                .ok());
  }
}

// Every number in a scenario is bounded; the error names the value's file:line:col.
TEST_CASE("scenario: every number is bounded and a value outside points at its location",
          "[unit]") {
  auto err = [](const std::string& text) {
    auto s = ParseScenario(text, "x.yaml");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Code::kInvalidArgument);
    return s.status().message();
  };
  // The regression: a periodic fault of 4e9 firings went on to allocate them (bad_alloc).
  CHECK(err(Replace(kGood, "at: 5s\n    duration: 2s",
                    "every: 10s\n    count: 4000000000\n    duration: 2s")) ==
        "x.yaml:15:12: count must be between 1 and 10000, not 4000000000");
  CHECK(err(Replace(kGood, "at: 5s\n    duration: 2s", "every: 10s\n    count: -1")) ==
        "x.yaml:15:12: '-1' is not a valid count");
  CHECK(err(Replace(kGood, "at: 5s\n    duration: 2s", "every: 10s\n    count: 0")) ==
        "x.yaml:15:12: count must be between 1 and 10000, not 0");
  CHECK(err(Replace(kGood, "at: 5s", "every: 0s")) ==
        "x.yaml:14:12: every must be between 1ms and 168h, not 0ns");
  CHECK(err(Replace(kGood, "at: 5s", "at: 9000h")) ==
        "x.yaml:14:9: at must be between 0ns and 168h, not 9000h");
  CHECK(err(Replace(kGood, "duration: 2s", "duration: 1000000h")) ==
        "x.yaml:15:15: duration must be between 0ns and 168h, not 1000000h");
  CHECK(err(Replace(kGood, "duration: 2s", "duration: 2s\n    jitter: 200h"))
            .rfind("x.yaml:16:13: jitter must be between 0ns and 168h", 0) == 0);
  CHECK(err(Replace(kGood, "after_iteration: 200", "after_iteration: 99999999999999999"))
            .rfind("x.yaml:19:22: after_iteration must be between 0 and 1000000000000", 0) == 0);
  CHECK(err(Replace(kGood, "iterations: 400", "iterations: 9999999999999999")) ==
        "x.yaml:10:15: iterations must be between 1 and 1000000000000, not 9999999999999999");
  CHECK(err(Replace(kGood, "iterations: 400", "duration: 2000h"))
            .rfind("x.yaml:10:13: duration must be between 1ms and 168h", 0) == 0);
  CHECK(err(Replace(kGood, "size: 16MiB", "size: 1000GiB")) ==
        "x.yaml:9:9: size must be between 1 B and 16 GiB, not 1000 GiB");
  CHECK(err(Replace(kGood, "size: 16MiB", "size: 0")).rfind("x.yaml:9:9: size must be", 0) == 0);
  CHECK(err(Replace(kGood, "iterations: 400", "iterations: 400\n  warmup_iterations: 5000000000"))
            .rfind("x.yaml:11:22: warmup_iterations must be between 0 and 1000000000", 0) == 0);
  CHECK(err(Replace(kGood, "iterations: 400", "iterations: 400\n  check_every: 0"))
            .rfind("x.yaml:11:16: check_every must be between 1 and", 0) == 0);
  CHECK(err(Replace(kGood, "iterations: 400", "iterations: 400\n  collective_timeout: 0s"))
            .rfind("x.yaml:11:23: collective_timeout must be between 1ms and 24h", 0) == 0);
  CHECK(err(Replace(kGood, "iterations: 400", "iterations: 400\n  hang_timeout: 30d"))
            .rfind("x.yaml:11:17: hang_timeout: unknown duration unit", 0) == 0);
  CHECK(err(Replace(kGood, "max_detection_ms: 100", "max_detection_ms: .nan")) ==
        "x.yaml:22:21: max_detection_ms must be between 0 and 8.64e+07, not nan");
  CHECK(err(Replace(kGood, "max_detection_ms: 100", "max_detection_ms: -1"))
            .rfind("x.yaml:22:21: max_detection_ms must be between 0 and", 0) == 0);
  CHECK(err(Replace(kGood, "min_degraded_ratio: 0.4", "min_degraded_ratio: 1.5")) ==
        "x.yaml:23:23: min_degraded_ratio must be between 0 and 1, not 1.5");
  CHECK(err(Replace(kGood, "min_degraded_ratio: 0.4", "max_throughput_loss_s: .inf"))
            .rfind("x.yaml:23:26: max_throughput_loss_s must be between 0 and", 0) == 0);
  CHECK(err(Replace(kGood, "ccl: ftccl", "ccl: gloo") + "restart:\n  max_restarts: 1000000\n")
            .rfind("x.yaml:25:17: max_restarts must be between 0 and 100", 0) == 0);
  CHECK(err(Replace(kGood, "ccl: ftccl", "ccl: gloo") + "restart:\n  delay: 2h\n") ==
        "x.yaml:25:10: delay must be between 0ns and 1h, not 2h");
  CHECK(
      err(Replace(kGood, "ccl: ftccl", "ccl: ftccl\n  ccl_options: {chunk_bytes: 99999999999}")) ==
      "x.yaml:9:30: ftccl option chunk_bytes must be within 1 B..1 GiB, not 93.13 GiB");

  // Totals: at most 1000 faults and 100000 firings in all, each count within its bound.
  std::string many = Replace(
      kGood, "faults:\n", "faults:\n" + [] {
        std::string f;
        for (int i = 0; i < 11; ++i)
          f += "  - {kind: nic_port_flap, target: h0/nic0, every: 1s, count: 10000, duration: "
               "1ms}\n";
        return f;
      }());
  CHECK(err(many) ==
        "x.yaml:22:5: the faults fire more than 100000 times in all (the sum of their counts)");
}

TEST_CASE("scenario: values at the bounds load", "[unit]") {
  auto s = ParseScenario(Replace(Replace(kGood, "at: 5s\n    duration: 2s",
                                         "every: 168h\n    count: 10000\n    duration: 1ms"),
                                 "size: 16MiB", "size: 16GiB"),
                         "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->faults[0].timing.count == 10000);
  CHECK(s->job.size_bytes == 16ull << 30);
}

TEST_CASE("scenario: kinds and targets are checked against the lab", "[unit]") {
  auto bad_target = ParseScenario(Replace(kGood, "target: h1/nic0", "target: h9/nic0"), "x.yaml");
  REQUIRE(bad_target.ok());
  Status st = ValidateAgainstCatalog(*bad_target, Catalog());
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(st.message().rfind("x.yaml:12:5: target 'h9/nic0' is not in the lab", 0) == 0);

  auto bad_kind =
      ParseScenario(Replace(kGood, "kind: nic_port_flap", "kind: nic_flapper"), "x.yaml");
  REQUIRE(bad_kind.ok());
  st = ValidateAgainstCatalog(*bad_kind, Catalog());
  CHECK(st.message().find(
            "unknown fault kind 'nic_flapper' (known: container_kill, nic_port_flap)") !=
        std::string::npos);

  auto bad_class =
      ParseScenario(Replace(kGood, "target_class: container", "target_class: nic"), "x.yaml");
  REQUIRE(bad_class.ok());
  st = ValidateAgainstCatalog(*bad_class, Catalog());
  CHECK(st.message().find("cannot aim at target class 'nic'") != std::string::npos);
}

TEST_CASE("scenario: ccl_options are checked and command-line overrides merge over them",
          "[unit]") {
  auto s = ParseScenario(
      Replace(kGood, "  iterations: 400\n",
              "  iterations: 400\n  ccl_options: {dead_timeout_ms: 900, keepalive_ms: 20}\n"),
      "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.ccl_options ==
        std::map<std::string, std::string>{{"dead_timeout_ms", "900"}, {"keepalive_ms", "20"}});

  auto bad_key = ParseScenario(
      Replace(kGood, "  iterations: 400\n", "  iterations: 400\n  ccl_options: {dead_ms: 9}\n"),
      "x.yaml");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message().rfind("x.yaml:11:17: unknown ftccl option 'dead_ms'", 0) == 0);

  // Out of range: the value's position; durations take units.
  auto bad_value =
      ParseScenario(Replace(kGood, "  iterations: 400\n",
                            "  iterations: 400\n  ccl_options: {dead_timeout_ms: 2h}\n"),
                    "x.yaml");
  REQUIRE_FALSE(bad_value.ok());
  CHECK(bad_value.status().message() ==
        "x.yaml:11:34: ftccl option dead_timeout_ms must be within 1ms..1h, not 2h");
  auto half = ParseScenario(Replace(kGood, "  iterations: 400\n",
                                    "  iterations: 400\n  ccl_options: {dead_timeout_ms: 0.5s}\n"),
                            "x.yaml");
  REQUIRE(half.ok());
  CHECK(half->job.ccl_options.at("dead_timeout_ms") == "0.5s");  // stored as written

  // An enum.
  Scenario algo = *s;
  CHECK(ApplyCclOverrides(algo, "", {{"algorithm", "ring"}}).ok());
  CHECK(algo.job.ccl_options.at("algorithm") == "ring");
  CHECK(ApplyCclOverrides(algo, "", {{"algorithm", "tree"}}).message() ==
        "--ccl-option: ftccl option algorithm wants auto, ring, hier, got 'tree'");
  // Unknown and out of range on the command line: the flag is the location.
  CHECK(ApplyCclOverrides(algo, "", {{"chunk", "1"}})
            .message()
            .rfind("--ccl-option: unknown ftccl option 'chunk' (known: chunk_bytes, ", 0) == 0);
  CHECK(ApplyCclOverrides(algo, "", {{"channels_per_nic", "65"}}).message() ==
        "--ccl-option: ftccl option channels_per_nic must be within 1..64, not 65");

  Scenario merged = *s;
  REQUIRE(ApplyCclOverrides(merged, "", {{"dead_timeout_ms", "1500"}}).ok());
  CHECK(merged.job.ccl_options.at("dead_timeout_ms") == "1500");
  CHECK(merged.job.ccl_options.at("keepalive_ms") == "20");

  Scenario gloo = *s;
  REQUIRE(ApplyCclOverrides(gloo, "gloo", {}).ok());
  CHECK(gloo.job.ccl == "gloo");
  CHECK(gloo.job.ccl_options.empty());  // ftccl's tuning does not carry over
  Status st = ApplyCclOverrides(gloo, "", {{"dead_timeout_ms", "10"}});
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(st.message() == "--ccl-option: gloo takes no options (got 'dead_timeout_ms')");
  CHECK(ApplyCclOverrides(gloo, "mpi", {}).message().find("--ccl: unknown ccl 'mpi'") == 0);
}

}  // namespace
}  // namespace fl::harness

namespace fl::harness {
namespace {

// Names and options come from the plug-ins' own descriptors, with the failing node's position.
TEST_CASE("scenario: ccl, workload and their options are checked against the plug-ins", "[unit]") {
  auto err = [](const std::string& text) {
    auto s = ParseScenario(text, "x.yaml");
    return s.ok() ? std::string("ok") : s.status().message();
  };
  CHECK(err(Replace(kGood, "workload: allreduce_loop", "workload: bert")) ==
        "x.yaml:7:13: unknown workload 'bert' (known: allreduce_loop, moe_alltoall, "
        "training_step)");
  // A workload option the job's workload does not declare: at the key.
  CHECK(err(Replace(kGood, "  iterations: 400\n", "  iterations: 400\n  compute: 5ms\n")) ==
        "x.yaml:11:12: compute applies to workload training_step only (allreduce_loop takes no "
        "options)");
  CHECK(err(Replace(Replace(kGood, "workload: allreduce_loop", "workload: training_step"),
                    "  iterations: 400\n", "  iterations: 400\n  compute: 5ms\n")) == "ok");
  // An unknown option at its name, an out-of-range one at its value.
  CHECK(err(Replace(kGood, "  iterations: 400\n",
                    "  iterations: 400\n  ccl_options:\n    dead_timeout: 300\n"))
            .rfind("x.yaml:12:5: unknown ftccl option 'dead_timeout' (known: chunk_bytes, "
                   "window_bytes, channels_per_nic, keepalive_ms, dead_timeout_ms, path_health, "
                   "peer_dead_ms, algorithm, host_id)",
                   0) == 0);
  CHECK(err(Replace(kGood, "  iterations: 400\n",
                    "  iterations: 400\n  ccl_options:\n    channels_per_nic: 0\n")) ==
        "x.yaml:12:23: ftccl option channels_per_nic must be within 1..64, not 0");
  CHECK(err(Replace(Replace(kGood, "ccl: ftccl", "ccl: gloo"), "  iterations: 400\n",
                    "  iterations: 400\n  ccl_options: {algorithm: ring}\n")) ==
        "x.yaml:11:17: gloo takes no options (got 'algorithm')");
}

// A workload's own options are the job keys its schema declares (workload_plugins.h): checked
// there at load, with the failing node's position, and kept as written for the rank
// (--workload-option), whose factory gets them typed.
TEST_CASE("scenario: a workload's options are checked against its schema and kept as text",
          "[unit]") {
  auto err = [](const std::string& text) {
    auto s = ParseScenario(text, "x.yaml");
    return s.ok() ? std::string("ok") : s.status().message();
  };
  const std::string training =
      Replace(kGood, "workload: allreduce_loop", "workload: training_step");
  auto with = [&](const std::string& lines) {
    return Replace(training, "  iterations: 400\n", "  iterations: 400\n" + lines);
  };
  auto s = ParseScenario(with("  compute: 5ms\n  compute_device: cpu\n"), "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.workload_options ==
        std::map<std::string, std::string>{{"compute", "5ms"}, {"compute_device", "cpu"}});
  // Not given: nothing stored; the workload's factory takes the schema's defaults.
  auto plain = ParseScenario(training, "x.yaml");
  REQUIRE(plain.ok());
  CHECK(plain->job.workload_options.empty());
  CHECK(ParseScenario(kGood, "x.yaml").value().job.workload_options.empty());
  // Out of range or of the wrong type: at the value.
  CHECK(err(with("  compute: 2h\n"))
            .rfind("x.yaml:11:12: training_step option compute must be within 0", 0) == 0);
  CHECK(err(with("  compute: 0.5ms\n")) ==
        "x.yaml:11:12: training_step option compute wants whole milliseconds, got '0.5ms'");
  CHECK(err(with("  compute_device: tpu\n")) ==
        "x.yaml:11:19: training_step option compute_device wants cpu, gpu, auto, got 'tpu'");
  CHECK(err(with("  compute: [1, 2]\n")) ==
        "x.yaml:11:12: compute must be a single value (training_step option)");
  // An unknown key: at the key, with every key this workload's job takes.
  CHECK(err(with("  computer: 5ms\n")) ==
        "x.yaml:11:3: unknown key 'computer' in job (allowed: workload, ccl, size, dtype, "
        "iterations, duration, warmup_iterations, check_every, failover, collective_timeout, "
        "hang_timeout, ccl_options, on_rank_loss, shrink_grace, env, compute, compute_device)");
  CHECK(err(Replace(kGood, "  iterations: 400\n", "  iterations: 400\n  computer: 5ms\n")) ==
        "x.yaml:11:3: unknown key 'computer' in job (allowed: workload, ccl, size, dtype, "
        "iterations, duration, warmup_iterations, check_every, failover, collective_timeout, "
        "hang_timeout, ccl_options, on_rank_loss, shrink_grace, env)");
  // Another workload's option: naming who takes it.
  CHECK(err(Replace(Replace(kGood, "workload: allreduce_loop", "workload: moe_alltoall"),
                    "  iterations: 400\n", "  iterations: 400\n  compute_device: gpu\n")) ==
        "x.yaml:11:19: compute_device applies to workload training_step only (moe_alltoall takes "
        "no options)");
}

TEST_CASE(
    "scenario: on_rank_loss shrink needs a CCL that can shrink, and shrink_grace goes with it",
    "[unit]") {
  auto err = [](const std::string& text) {
    auto s = ParseScenario(text, "x.yaml");
    return s.ok() ? std::string("ok") : s.status().message();
  };
  auto with = [&](const std::string& ccl, const std::string& lines) {
    return Replace(Replace(kGood, "ccl: ftccl", "ccl: " + ccl), "  iterations: 400\n",
                   "  iterations: 400\n" + lines);
  };
  auto s = ParseScenario(with("nccl", "  on_rank_loss: shrink\n  shrink_grace: 12s\n"), "x.yaml");
  REQUIRE(s.ok());
  CHECK(s->job.on_rank_loss == "shrink");
  CHECK(s->job.shrink_grace_ns == 12 * kNsPerSec);
  CHECK(ParseScenario(kGood, "x.yaml").value().job.on_rank_loss == "abort");
  CHECK(err(with("ftccl", "  on_rank_loss: shrink\n")) ==
        "x.yaml:11:17: on_rank_loss: shrink needs a CCL that can shrink its communicator (nccl, "
        "with ncclCommShrink); ftccl cannot");
  CHECK(err(with("nccl", "  on_rank_loss: elastic\n")) ==
        "x.yaml:11:17: on_rank_loss must be abort or shrink, not 'elastic'");
  CHECK(err(with("nccl", "  shrink_grace: 5s\n")) ==
        "x.yaml:11:17: shrink_grace applies with on_rank_loss: shrink only");
  CHECK(err(with("nccl", "  on_rank_loss: shrink\n  shrink_grace: 0s\n"))
            .rfind("x.yaml:12:17: ", 0) == 0);
}

TEST_CASE("scenario: a command job refuses any workload's options", "[unit]") {
  constexpr const char* kCommandJob = R"(name: c
lab:
  topology: /labs/rail.yaml
job:
  command: [/usr/bin/true]
  compute: 5ms
)";
  auto s = ParseScenario(kCommandJob, "x.yaml");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().rfind("x.yaml:6:12: 'compute' configures faultline-worker's workload",
                                   0) == 0);
}

TEST_CASE("scenario loader: lab.topology beside the file, then here, then above the file",
          "[unit]") {
  // An installed tree: /usr/share/faultline/configs/scenarios/s.yaml names
  // configs/labs/t.yaml, which is found from any working directory.
  testing::TempDir dir("fl_resolve");
  const std::string root = dir.path() + "/share/faultline";
  REQUIRE(MakeDirs(root + "/configs/scenarios", 0755).ok());
  REQUIRE(MakeDirs(root + "/configs/labs", 0755).ok());
  REQUIRE(WriteFileAtomic(root + "/configs/labs/t.yaml", "name: t\nhosts: 2\n").ok());
  const std::string sc = root + "/configs/scenarios/s.yaml";
  REQUIRE(WriteFileAtomic(sc,
                          "name: s\nlab: {topology: configs/labs/t.yaml}\n"
                          "job: {iterations: 10}\n")
              .ok());
  auto s = LoadScenarioFile(sc);
  REQUIRE(s.ok());
  CHECK(s->lab.topology == root + "/configs/labs/t.yaml");
  // Beside the scenario wins.
  REQUIRE(MakeDirs(root + "/configs/scenarios/configs/labs", 0755).ok());
  REQUIRE(WriteFileAtomic(root + "/configs/scenarios/configs/labs/t.yaml", "name: t\n").ok());
  s = LoadScenarioFile(sc);
  REQUIRE(s.ok());
  CHECK(s->lab.topology == root + "/configs/scenarios/configs/labs/t.yaml");
  // Nowhere: left as written, for the lab to say it is missing.
  REQUIRE(WriteFileAtomic(sc,
                          "name: s\nlab: {topology: configs/labs/none.yaml}\n"
                          "job: {iterations: 10}\n")
              .ok());
  s = LoadScenarioFile(sc);
  REQUIRE(s.ok());
  CHECK(s->lab.topology == "configs/labs/none.yaml");
}

}  // namespace
}  // namespace fl::harness
