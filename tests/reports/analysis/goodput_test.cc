// The goodput projection (reports/analysis/goodput.h) against the case worked out by hand in
// docs/goodput.md, "A worked example".
#include "reports/analysis/goodput.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace fl::reports::analysis {
namespace {

MeasuredFault Loss(const std::string& run, const std::string& kind, double loss_s) {
  MeasuredFault f;
  f.run_id = run;
  f.fault_id = "f0";
  f.kind = kind;
  f.throughput_loss_s = loss_s;
  return f;
}

// docs/goodput.md's worked example: 1,024 GPUs for 10 days, checkpoints every hour, a relaunch
// takes 10 minutes.
FailureRates WorkedRates() {
  FailureRates r;
  r.source = "rates.yaml";
  r.classes.push_back({"nic", "rates.yaml:2:5", "nic_port_flap", std::nullopt, false, 1, 0.001});
  r.classes.push_back({"host", "rates.yaml:6:5", "container_kill", std::nullopt, false, 8, 0.002});
  r.classes.push_back({"gpu", "rates.yaml:10:5", "", 0.0, true, 1, 0.0005});
  return r;
}

std::vector<MeasuredFault> WorkedFaults() {
  MeasuredFault killed = Loss("r3", "container_kill", 5);
  killed.ended_job = true;  // the job did not survive: the loss measured in the lab is not used
  return {Loss("r1", "nic_port_flap", 20), Loss("r2", "nic_port_flap", 40), killed};
}

ProjectionOptions WorkedOptions() {
  ProjectionOptions o;
  o.cluster_gpus = 1024;
  o.job_days = 10;
  o.checkpoint_interval_s = 3600;
  o.restart_s = 600;
  o.trials = 20000;
  o.seed = 7;
  return o;
}

TEST_CASE("goodput projection: the worked example of docs/goodput.md, by hand", "[goodput]") {
  auto p = ProjectGoodput(WorkedRates(), WorkedFaults(), WorkedOptions());
  REQUIRE(p.ok());
  REQUIRE(p->classes.size() == 3);
  // Costliest first: gpu 5.12 x 1800 s, host 2.56 x 2400 s, nic 10.24 x 30 s.
  const ClassProjection& gpu = p->classes[0];
  const ClassProjection& host = p->classes[1];
  const ClassProjection& nic = p->classes[2];
  CHECK(gpu.name == "gpu");
  CHECK(host.name == "host");
  CHECK(nic.name == "nic");

  CHECK(nic.components == 1024);
  CHECK(nic.failures_per_job == Approx(10.24));
  CHECK(nic.samples == 2);
  CHECK(nic.restarts == 0);
  CHECK(nic.mean_cost_s == Approx(30));
  CHECK(nic.cost_p25_s == Approx(25));
  CHECK(nic.cost_p75_s == Approx(35));
  CHECK(nic.expected_lost_s == Approx(307.2));

  CHECK(host.components == 128);
  CHECK(host.failures_per_job == Approx(2.56));
  CHECK(host.samples == 1);
  CHECK(host.restarts == 1);
  CHECK(host.mean_cost_s == Approx(600 + 1800));  // R + C/2
  CHECK(host.expected_lost_s == Approx(6144));

  CHECK(gpu.components == 1024);
  CHECK(gpu.failures_per_job == Approx(5.12));
  CHECK(gpu.samples == 0);
  CHECK(gpu.mean_cost_s == Approx(1800));  // 0 + C/2
  CHECK(gpu.expected_lost_s == Approx(9216));

  CHECK(p->expected_failures == Approx(17.92));
  CHECK(p->expected_lost_s == Approx(15667.2));
  CHECK(p->expected_ettr == Approx(1 - 15667.2 / 864000.0));  // 0.981867
  CHECK(gpu.share == Approx(9216 / 15667.2));
  CHECK(host.share == Approx(6144 / 15667.2));
  CHECK(nic.share == Approx(307.2 / 15667.2));

  // The simulation's mean is the expectation: the lost time per job has a standard deviation
  // of sqrt(sum of rate x E[cost^2]) = 6,296 s (docs/goodput.md), so over 20,000 jobs the
  // mean ETTR is within 4 standard errors (4 x 6296 / 864000 / sqrt(20000) = 2.1e-4).
  CHECK(std::fabs(p->ettr_mean - p->expected_ettr) < 2.1e-4);
  CHECK(p->ettr_p5 < p->ettr_median);
  CHECK(p->ettr_median < p->ettr_p95);
  CHECK(p->ettr_p95 <= 1.0);
  // The 5% to 95% spread is about 2 x 1.645 standard deviations (0.0073 each) when the lost
  // time is near normal; it is skewed here, so only its order is checked.
  CHECK(p->ettr_p95 - p->ettr_p5 > 0.015);
  CHECK(p->ettr_p95 - p->ettr_p5 < 0.035);
  CHECK(p->notes.empty());

  // The same seed gives the same figures; another seed other ones.
  auto again = ProjectGoodput(WorkedRates(), WorkedFaults(), WorkedOptions());
  REQUIRE(again.ok());
  CHECK(again->ettr_median == p->ettr_median);
  ProjectionOptions other = WorkedOptions();
  other.seed = 8;
  auto moved = ProjectGoodput(WorkedRates(), WorkedFaults(), other);
  REQUIRE(moved.ok());
  CHECK(moved->ettr_mean != p->ettr_mean);
  CHECK(moved->expected_ettr == p->expected_ettr);

  const std::string text = RenderProjectionText(*p);
  CHECK_THAT(text, Catch::Contains("1024 GPUs, a 10.0 days job"));
  CHECK_THAT(text, Catch::Contains("ETTR 0.9819"));
  CHECK_THAT(text, Catch::Contains("costliest: gpu, 58.8% of the lost time"));
  CHECK_THAT(ProjectionJson(*p), Catch::Contains("\"expected_ettr\": 0.98186"));
}

TEST_CASE("goodput projection: what a measured fault costs", "[goodput]") {
  ProjectionOptions o = WorkedOptions();
  MeasuredFault f = Loss("r", "k", 12.5);
  auto c = CostOf(f, o);
  REQUIRE(c);
  CHECK(c->lost_s == 12.5);
  CHECK_FALSE(c->restart);
  f.throughput_loss_s = -0.3;  // ran faster than its baseline: no gain is credited
  CHECK(CostOf(f, o)->lost_s == 0);
  f.restart_cost_ms = 4500;  // relaunched by the coordinator
  CHECK(CostOf(f, o)->lost_s == 4.5);
  CHECK(CostOf(f, o)->restart);
  f.ended_job = true;
  f.hang_s = 30;  // hung: noticed by the watchdog after its timeout, then relaunched
  CHECK(CostOf(f, o)->lost_s == 630);
  f.hang_s.reset();
  CHECK(CostOf(f, o)->lost_s == 600);
  MeasuredFault none;
  none.kind = "k";
  CHECK_FALSE(CostOf(none, o));
}

TEST_CASE("goodput projection: refusals and notes", "[goodput]") {
  SECTION("a class whose fault kind no run measured names its place and what was measured") {
    FailureRates r = WorkedRates();
    r.classes.push_back({"tor", "rates.yaml:14:5", "tor_port_down", std::nullopt, false, 1, 1e-4});
    auto p = ProjectGoodput(r, WorkedFaults(), WorkedOptions());
    REQUIRE(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(), Catch::Contains("rates.yaml:14:5: class 'tor'"));
    CHECK_THAT(p.status().message(),
               Catch::Contains("measured: container_kill (1), nic_port_flap (2)"));
  }
  SECTION("faults without a cost and kinds in no class are said") {
    auto faults = WorkedFaults();
    MeasuredFault no_cost;
    no_cost.kind = "nic_port_flap";
    faults.push_back(no_cost);
    faults.push_back(Loss("r9", "pfc_storm", 3));
    auto p = ProjectGoodput(WorkedRates(), faults, WorkedOptions());
    REQUIRE(p.ok());
    REQUIRE(p->notes.size() == 2);
    CHECK_THAT(p->notes[0], Catch::Contains("1 nic_port_flap fault(s) had no measured cost"));
    CHECK_THAT(p->notes[1], Catch::Contains("in no class of rates.yaml: pfc_storm (1 fault(s))"));
    CHECK(p->classes.back().samples == 2);  // the fault without a cost is not a sample
  }
  SECTION("options out of range") {
    ProjectionOptions o = WorkedOptions();
    o.cluster_gpus = 0;
    CHECK(ProjectGoodput(WorkedRates(), WorkedFaults(), o).status().code() ==
          Code::kInvalidArgument);
    o = WorkedOptions();
    o.job_days = std::nan("");
    CHECK(ProjectGoodput(WorkedRates(), WorkedFaults(), o).status().code() ==
          Code::kInvalidArgument);
    o = WorkedOptions();
    o.trials = 0;
    CHECK(ProjectGoodput(WorkedRates(), WorkedFaults(), o).status().code() ==
          Code::kInvalidArgument);
  }
  SECTION("a simulation too large to draw is refused, not run for hours") {
    FailureRates r = WorkedRates();
    r.classes[0].failures_per_day = 100;  // 1,024,000 NIC failures per job
    ProjectionOptions o = WorkedOptions();
    o.trials = 1000;
    auto p = ProjectGoodput(r, WorkedFaults(), o);
    REQUIRE(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(), Catch::Contains("ask for fewer trials"));
  }
  SECTION("losing more than a tenth of the job warns that the model is optimistic") {
    FailureRates r = WorkedRates();
    r.classes[2].failures_per_day = 0.01;  // 102.4 GPU failures x 1800 s = 21% of 10 days
    auto p = ProjectGoodput(r, WorkedFaults(), WorkedOptions());
    REQUIRE(p.ok());
    CHECK(p->expected_ettr < 0.9);
    REQUIRE_FALSE(p->notes.empty());
    CHECK_THAT(p->notes.back(), Catch::Contains("over 10% of the job"));
  }
}

TEST_CASE("goodput projection: Poisson draws have the mean and variance asked", "[goodput]") {
  for (double mean : {0.0, 0.3, 3.0, 40.0}) {
    Rng rng(11);
    const int n = 200000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; ++i) {
      const double k = static_cast<double>(DrawPoisson(rng, mean));
      sum += k;
      sum2 += k * k;
    }
    const double m = sum / n, var = sum2 / n - m * m;
    INFO("mean " << mean << ": drawn mean " << m << ", variance " << var);
    // 5 standard errors of the mean (sqrt(mean / n)); the variance within 3%.
    CHECK(std::fabs(m - mean) <= 5 * std::sqrt(mean / n) + 1e-12);
    CHECK(std::fabs(var - mean) <= 0.03 * mean + 1e-12);
  }
}

}  // namespace
}  // namespace fl::reports::analysis
