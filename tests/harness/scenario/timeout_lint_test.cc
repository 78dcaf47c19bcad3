#include "harness/scenario/timeout_lint.h"

#include <catch2/catch.hpp>

#include "harness/scenario/job_env.h"

namespace fl::harness {
namespace {

Scenario Base(const std::string& ccl) {
  Scenario s;
  s.job.ccl = ccl;
  s.job.collective_timeout_ns = 10 * kNsPerSec;
  s.job.hang_timeout_ns = 30 * kNsPerSec;
  return s;
}

FaultSpec Flap(Nanos duration) {
  FaultSpec f;
  f.kind = "nic_port_flap";
  f.target = "h1/nic0";
  f.duration_ns = duration;
  f.where = "x.yaml:12:5";
  return f;
}

bool Has(const std::vector<std::string>& w, const std::string& part) {
  for (const auto& line : w)
    if (line.find(part) != std::string::npos) return true;
  return false;
}

TEST_CASE("timeout lint: ftccl's defaults under the job's defaults are fine", "[unit]") {
  Scenario s = Base("ftccl");
  s.faults.push_back(Flap(2 * kNsPerSec));
  CHECK(LintTimeouts(s).empty());
}

TEST_CASE("timeout lint: a collective timeout below ftccl's dead timeout warns, naming both",
          "[unit]") {
  Scenario s = Base("ftccl");
  s.job.ccl_options["dead_timeout_ms"] = "15000";
  auto w = LintTimeouts(s);
  REQUIRE(w.size() == 1);
  CHECK(w[0] ==
        "job.collective_timeout (10s, the scenario) fires before ftccl dead_timeout_ms "
        "(15s, job.ccl_options) can detect a silent fault: the job fails on the outer "
        "timeout instead of the CCL's recovery");
  s.job.hang_timeout_ns = 12 * kNsPerSec;
  CHECK(LintTimeouts(s).size() == 2);  // the hang timeout too
}

TEST_CASE("timeout lint: the hang timeout must outlast the collective timeout", "[unit]") {
  Scenario s = Base("gloo");
  s.job.hang_timeout_ns = 5 * kNsPerSec;
  auto w = LintTimeouts(s);
  REQUIRE(w.size() == 1);
  CHECK(Has(w, "job.hang_timeout (5s, the scenario) fires before job.collective_timeout"));
}

TEST_CASE("timeout lint: nccl's IB retries against the job's timeouts and a flap", "[unit]") {
  Scenario s = Base("nccl");
  // NCCL's defaults, made explicit by its plug-in: 4.096us x 2^20 x 7 = 30 s.
  auto w = LintTimeouts(s);
  CHECK(Has(w,
            "job.collective_timeout (10s, the scenario) fires before NCCL_IB_TIMEOUT=20 x "
            "NCCL_IB_RETRY_CNT=7"));
  CHECK(Has(w,
            "NCCL_IB_TIMEOUT from the nccl default env, NCCL_IB_RETRY_CNT from the nccl "
            "default env"));

  // Tuned down in job.env: 4.096us x 2^14 x 7 = 470 ms < every outer timeout.
  s.job.env = {{"NCCL_IB_TIMEOUT", "14"}};
  CHECK(LintTimeouts(s).empty());
  // A 2 s flap outlasts NCCL's retries: NCCL gives up before the link is back.
  s.faults.push_back(Flap(2 * kNsPerSec));
  w = LintTimeouts(s);
  REQUIRE(w.size() == 1);
  CHECK(Has(w,
            "fault nic_port_flap on h1/nic0 (2s, x.yaml:12:5) lasts longer than "
            "NCCL_IB_TIMEOUT=14"));
  CHECK(Has(w, "NCCL_IB_TIMEOUT from job.env"));
  // Retries that ride out the flap, but a process-group timeout shorter than the flap.
  s.job.env = {{"NCCL_IB_TIMEOUT", "18"}, {"FAULTLINE_PG_TIMEOUT", "1s"}};  // 7.3 s of retries
  w = LintTimeouts(s);
  CHECK(Has(w, "FAULTLINE_PG_TIMEOUT (1s, job.env) fires before fault nic_port_flap"));
  CHECK(Has(w, "FAULTLINE_PG_TIMEOUT (1s, job.env) fires before NCCL_IB_TIMEOUT=18"));
}

TEST_CASE("timeout lint: ftccl with failover routes around a long flap", "[unit]") {
  Scenario s = Base("ftccl");
  s.faults.push_back(Flap(60 * kNsPerSec));  // longer than every timeout
  CHECK(LintTimeouts(s).empty());
  FaultSpec kill;
  kill.kind = "container_kill";
  kill.duration_ns = 60 * kNsPerSec;
  s.faults.push_back(kill);
  CHECK(LintTimeouts(s).empty());
}

TEST_CASE("timeout lint: a process-group timeout that is not a duration is said", "[unit]") {
  Scenario s = Base("gloo");
  s.job.env = {{"FAULTLINE_PG_TIMEOUT", "soon"}};
  auto w = LintTimeouts(s);
  REQUIRE(w.size() == 1);
  CHECK(Has(w, "FAULTLINE_PG_TIMEOUT='soon' is not a duration"));
}

TEST_CASE("job env: the CCL's defaults under job.env", "[unit]") {
  Scenario s = Base("nccl");
  s.job.env = {{"NCCL_IB_TIMEOUT", "16"}, {"OMP_NUM_THREADS", "2"}};
  ccl::CclEnvContext lab;
  lab.nic_names = {"eth1", "eth2"};
  auto env = EffectiveJobEnv(s, lab);
  CHECK(env.at("NCCL_IB_TIMEOUT") == "16");  // job.env wins
  CHECK(env.at("NCCL_IB_RETRY_CNT") == "7");
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "=eth1,eth2");
  CHECK(env.at("OMP_NUM_THREADS") == "2");
  CHECK_FALSE(env.count("NCCL_IB_HCA"));                       // no RDMA devices in this lab
  CHECK_FALSE(env.count("NCCL_IB_RESILIENCY_PORT_FAILOVER"));  // documented, not forced
  CHECK(JobEnvSource(s, "NCCL_IB_TIMEOUT") == "job.env");
  CHECK(JobEnvSource(s, "NCCL_IB_RETRY_CNT") == "the nccl default env");
  CHECK(JobEnvSource(s, "NCCL_DEBUG").empty());
  CHECK(EffectiveJobEnv(Base("ftccl")).empty());
}

}  // namespace
}  // namespace fl::harness
