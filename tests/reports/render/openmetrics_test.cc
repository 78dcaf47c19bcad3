// The metrics for dashboards: the text `faultline report --openmetrics` writes is checked by
// Prometheus' own promtool (Debian's prometheus package, installed by scripts/setup.sh), and
// `--pushgateway` pushes it to a real Pushgateway (prometheus-pushgateway) on loopback, whose
// /metrics must then carry the run's series.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "../../child_process.h"
#include "../temp_dir.h"
#include "common/http_put.h"
#include "helpers.h"
#include "reports/render/openmetrics.h"
#include "synthetic_run.h"
#include "tests/test_util.h"

namespace fl::reports::render {
namespace {

using testing::ReadAll;
using testing::SyntheticRunSpec;

// The value of the first sample line that starts with prefix, NaN when there is none.
double ValueOf(const std::string& text, const std::string& prefix) {
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return NAN;
  size_t eol = text.find('\n', at + 1);
  std::string line = text.substr(at + 1, eol - at - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

bool Have(const char* program) { return access(program, X_OK) == 0; }

TEST_CASE("OpenMetrics text: label values escape the quote, HELP text does not", "[unit]") {
  CHECK(EscapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  RunData run;
  run.run.id = "r1";
  run.run.scenario_name = "s\"1";
  run.metrics.push_back({"r1", std::nullopt, "odd\"name\\x", 0.5, "ratio"});
  const std::string text = RenderOpenMetrics(run);
  CHECK(text.find("scenario=\"s\\\"1\"") != std::string::npos);
  CHECK(text.find("# HELP faultline_run_odd\"name\\x odd\"name\\\\x (ratio in the results "
                  "database, docs/metrics.md)\n") != std::string::npos);
}

TEST_CASE("OpenMetrics text: base units, labels, one HELP and TYPE per family", "[unit]") {
  SyntheticRunSpec spec;
  RunData run = testing::MakeSyntheticRun(spec);
  run.run.tags["cluster"] = "lab-a";
  run.run.tags["nic.firmware"] = "22.39";
  const std::string text = RenderOpenMetrics(run);
  // f0 was detected 40 ms after its injection: 0.04 s, labelled with its kind and target.
  const std::string f0 = "faultline_fault_detection_latency_seconds{run=\"" + run.run.id + "\"";
  CHECK(std::fabs(ValueOf(text, f0) - spec.detect_ms / 1000) < 1e-9);
  CHECK(text.find("cluster=\"lab-a\"") != std::string::npos);
  CHECK(text.find("tag_nic_firmware=\"22.39\"") != std::string::npos);
  CHECK(text.find("tag_fw=\"22.39\"") != std::string::npos);
  CHECK(text.find(",fault=\"f0\",kind=\"" + run.faults[0].kind + "\",target=\"" +
                  run.faults[0].target + "\"") != std::string::npos);
  CHECK(text.find("_ms{") == std::string::npos);  // no milliseconds anywhere
  // Exactly one outcome state is 1.
  size_t ones = 0, at = 0;
  while ((at = text.find("faultline_run_outcome{", at)) != std::string::npos) {
    size_t eol = text.find('\n', at);
    ones += text.substr(at, eol - at).ends_with(" 1");
    at = eol;
  }
  CHECK(ones == 1);
  // Each family's HELP and TYPE appear once.
  CHECK(text.find("# TYPE faultline_fault_recovery_seconds gauge\n") != std::string::npos);
  CHECK(text.find("# TYPE faultline_fault_recovery_seconds gauge\n",
                  text.find("# TYPE faultline_fault_recovery_seconds") + 1) == std::string::npos);
}

TEST_CASE("TagLabelName makes any tag key a valid label name", "[unit]") {
  CHECK(TagLabelName("fw") == "tag_fw");
  CHECK(TagLabelName("nic.firmware") == "tag_nic_firmware");
  CHECK(TagLabelName("a-b c\"") == "tag_a_b_c_");
}

TEST_CASE("faultline report --openmetrics passes promtool check metrics", "[integration]") {
  INFO("promtool comes from Debian's prometheus package, which scripts/setup.sh installs");
  REQUIRE(Have("/usr/bin/promtool"));
  for (bool hostile : {false, true}) {
    testing::TempDir dir;
    SyntheticRunSpec spec;
    spec.hostile = hostile;  // quotes, backslashes and newlines in label values
    RunData run = testing::MakeSyntheticRun(spec);
    const std::string db = dir.File("results.db"), out = dir.File("run.prom");
    REQUIRE(testing::WriteRun(db, run).ok());
    auto res = testing::RunProcess(
        {FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--openmetrics", out},
        dir.File("cli.log"), std::chrono::seconds(60));
    INFO(ReadAll(dir.File("cli.log")));
    REQUIRE(res.exit_code == 0);
    const std::string text = ReadAll(out);
    REQUIRE(text.find("faultline_fault_detection_latency_seconds") != std::string::npos);
    auto check = testing::RunProcess(
        {"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < '" + out + "'"},
        dir.File("promtool.log"), std::chrono::seconds(60));
    INFO("hostile: " << hostile << "\npromtool: " << ReadAll(dir.File("promtool.log")));
    CHECK(check.exit_code == 0);
    CHECK(ReadAll(dir.File("promtool.log")).empty());  // no lint warning either
  }
}

TEST_CASE("faultline report --pushgateway pushes to a real Pushgateway", "[integration]") {
  INFO("prometheus-pushgateway comes from Debian, installed by scripts/setup.sh");
  REQUIRE(Have("/usr/bin/prometheus-pushgateway"));
  testing::TempDir dir;
  const int port = ::fl::testing::FreeTcpPort("127.0.0.1");
  fl::testing::ChildProcess::Options gw_opts;
  gw_opts.out = dir.File("gw.log");
  gw_opts.cwd = dir.path();
  fl::testing::ChildProcess gw(
      {"/usr/bin/prometheus-pushgateway", "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      gw_opts);
  REQUIRE(gw.pid() > 0);
  HttpUrl metrics{"127.0.0.1", port, "/metrics"};
  REQUIRE(WaitUntil(
      [&] {
        auto r = HttpSend("GET", metrics, "text/plain", "", Deadline::After(kNsPerSec));
        return r.ok() && r->status == 200;
      },
      Deadline::After(20 * kNsPerSec), 50 * kNsPerMs));

  SyntheticRunSpec spec;
  RunData run = testing::MakeSyntheticRun(spec);
  const std::string db = dir.File("results.db");
  REQUIRE(testing::WriteRun(db, run).ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto res =
      testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--pushgateway", url},
                          dir.File("cli.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("cli.log")) << ReadAll(dir.File("gw.log")));
  REQUIRE(res.exit_code == 0);
  auto got = HttpSend("GET", metrics, "text/plain", "", Deadline::After(5 * kNsPerSec));
  REQUIRE(got.ok());
  // The gateway adds its grouping labels (job, scenario) to what it serves.
  CHECK(got->body.find("faultline_fault_detection_latency_seconds{") != std::string::npos);
  CHECK(got->body.find("job=\"faultline\"") != std::string::npos);
  CHECK(got->body.find("scenario=\"" + spec.scenario + "\"") != std::string::npos);

  // A gateway that is not there is an error with the address, exit 3.
  auto bad = testing::RunProcess(
      {FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--pushgateway",
       "http://127.0.0.1:" + std::to_string(::fl::testing::FreeTcpPort("127.0.0.1"))},
      dir.File("bad.log"), std::chrono::seconds(60));
  CHECK(bad.exit_code == 3);
  CHECK(ReadAll(dir.File("bad.log")).find("cannot connect to 127.0.0.1") != std::string::npos);
}

TEST_CASE("ParseHttpUrl takes http:// URLs and says what is wrong with others", "[unit]") {
  auto u = ParseHttpUrl("http://gw.example:9091/prefix");
  REQUIRE(u.ok());
  CHECK(u->host == "gw.example");
  CHECK(u->port == 9091);
  CHECK(u->path == "/prefix");
  auto v6 = ParseHttpUrl("http://[::1]:9091");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->path == "/");
  CHECK(ParseHttpUrl("https://gw:9091").status().message().find("https") != std::string::npos);
  CHECK(!ParseHttpUrl("http://gw:0").ok());
  CHECK(!ParseHttpUrl("http://gw:99999").ok());
  CHECK(!ParseHttpUrl("http://:80").ok());
  CHECK(!ParseHttpUrl("ftp://gw").ok());
  CHECK(!ParseHttpUrl("http://u:p@gw").ok());
  CHECK(!ParseHttpUrl("http://gw/a b").ok());
}

}  // namespace
}  // namespace fl::reports::render
