// Detectors scored against injected faults with real monitoring: Debian's Prometheus scrapes a
// node_exporter running inside a lab host's namespace (that host's own TCP and NIC counters)
// and the run's own live metrics (`faultline run --metrics-listen`),
// evaluates the shipped example rules (configs/alerts/example_rules.yml), and sends what fires
// to a real Alertmanager, whose webhook is `faultline alerts receive`; a run injects packet
// loss on that host's NIC (on the lab kept up, `run --on-lab`); `faultline score` then holds
// the alerts against the run's faults. Root only (the lab).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/file_util.h"
#include "common/http_put.h"
#include "tests/child_process.h"
#include "tests/harness/run_testing.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using testing::ChildProcess;
using testing::Faultline;
using testing::TempDir;
using testing::WriteLab;

bool Ready(const std::string& host, int port, const std::string& path) {
  return WaitUntil(
      [&] {
        auto r = HttpSend("GET", HttpUrl{host, port, path}, "text/plain", "",
                          Deadline::After(kNsPerSec));
        return r.ok() && r->status == 200;
      },
      Deadline::After(30 * kNsPerSec), 100 * kNsPerMs);
}

TEST_CASE(
    "detectors: real Prometheus and Alertmanager over a lab host's counters - the loss "
    "rule catches the loss, the silent rule nothing, the noisy rule's false alarms "
    "are counted",
    "[.root][serial]") {
  for (const char* bin : {"/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager",
                          "/usr/bin/prometheus-node-exporter"})
    REQUIRE(access(bin, X_OK) == 0);  // scripts/setup.sh installs them
  TempDir dir("fl_prom");
  const std::string d = dir.path();
  const std::string lab = WriteLab(d);
  const std::string name = "pr" + std::to_string(getpid() % 100000);
  testing::LabUp lab_up(lab, name, d);
  REQUIRE(lab_up.ok());
  // h1's management address: where its node_exporter listens, inside h1's namespace.
  std::string h1;
  {
    Faultline status({"lab", "status", name}, d, "status");
    REQUIRE(status.Wait(Deadline::After(30 * kNsPerSec)) == std::optional<int>(0));
    std::smatch m;
    const std::string out = status.out();
    REQUIRE(std::regex_search(out, m, std::regex("h1\\.mgmt0\\s+mgmt0\\s+([0-9.]+)/")));
    h1 = m[1];
  }
  const int ne_port = testing::FreeTcpPort("127.0.0.1"),
            am_port = testing::FreeTcpPort("127.0.0.1"),
            prom_port = testing::FreeTcpPort("127.0.0.1"),
            recv_port = testing::FreeTcpPort("127.0.0.1"),
            fl_port = testing::FreeTcpPort("127.0.0.1");
  ChildProcess::Options quiet;
  quiet.out = d + "/ne.log";
  quiet.netns = "fl-" + name + "-h1";
  ChildProcess node_exporter(
      {"/usr/bin/prometheus-node-exporter",
       "--web.listen-address=" + h1 + ":" + std::to_string(ne_port), "--collector.disable-defaults",
       "--collector.netstat", "--collector.netdev"},
      quiet);
  REQUIRE(Ready(h1, ne_port, "/metrics"));

  const std::string alerts = d + "/alerts.jsonl";
  Faultline receiver(
      {"alerts", "receive", "--listen", "127.0.0.1:" + std::to_string(recv_port), "--out", alerts},
      d, "receiver");
  REQUIRE(WriteFileAtomic(d + "/am.yml",
                          "route:\n  receiver: fl\n  group_by: [alertname]\n  group_wait: 0s\n"
                          "  group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n"
                          "  - name: fl\n    webhook_configs:\n      - url: http://127.0.0.1:" +
                              std::to_string(recv_port) + "/\n        send_resolved: true\n")
              .ok());
  ChildProcess::Options am_o;
  am_o.out = d + "/am.log";
  ChildProcess alertmanager(
      {"/usr/bin/prometheus-alertmanager", "--config.file=" + d + "/am.yml",
       "--storage.path=" + d + "/am", "--web.listen-address=127.0.0.1:" + std::to_string(am_port),
       "--cluster.listen-address="},
      am_o);
  REQUIRE(Ready("127.0.0.1", am_port, "/-/ready"));
  const std::string rules = FL_SOURCE_DIR "/configs/alerts/example_rules.yml";
  REQUIRE(WriteFileAtomic(d + "/prom.yml",
                          "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                          "rule_files: ['" +
                              rules +
                              "']\n"
                              "alerting:\n  alertmanagers:\n    - static_configs:\n"
                              "        - targets: ['127.0.0.1:" +
                              std::to_string(am_port) +
                              "']\n"
                              "scrape_configs:\n  - job_name: h1\n    static_configs:\n"
                              "      - targets: ['" +
                              h1 + ":" + std::to_string(ne_port) + "']\n" +
                              "        labels: {target: h1}\n"
                              "  - job_name: faultline\n    static_configs:\n"
                              "      - targets: ['127.0.0.1:" +
                              std::to_string(fl_port) + "']\n")
              .ok());
  ChildProcess::Options prom_o;
  prom_o.out = d + "/prom.log";
  ChildProcess prometheus({"/usr/bin/prometheus", "--config.file=" + d + "/prom.yml",
                           "--storage.tsdb.path=" + d + "/prom",
                           "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                          prom_o);
  REQUIRE(Ready("127.0.0.1", prom_port, "/-/ready"));
  // A few seconds of healthy scrapes before the run: the rate has its window.
  std::this_thread::sleep_for(std::chrono::seconds(4));

  const std::string scenario = d + "/loss.yaml";
  REQUIRE(WriteFileAtomic(scenario, "name: prom_loss\nseed: 4\nlab: {topology: " + lab +
                                        "}\njob:\n  size: 256KiB\n  duration: 16s\n"
                                        "  warmup_iterations: 10\n  collective_timeout: 20s\n"
                                        "faults:\n  - kind: packet_loss\n    target: h1.nic0\n"
                                        "    at: 5s\n    duration: 6s\n"
                                        "    params: {percent: 10}\n")
              .ok());
  const std::string db = d + "/results.db";
  {
    Faultline run({"run", scenario, "--db", db, "--on-lab", name, "-q", "--metrics-listen",
                   "127.0.0.1:" + std::to_string(fl_port)},
                  d, "run");
    auto rc = run.Wait(Deadline::After(180 * kNsPerSec));
    INFO(run.out() + run.err());
    REQUIRE(rc.has_value());
    REQUIRE((*rc == 0 || *rc == 1));
  }
  // The loss alert resolves a few seconds after the loss ends; the noisy one fires again. Its
  // firings inside the fault window and grace (5 s to 16 s of the run) count as detections, so
  // its false alarm is one that starts after the run: it starts once every 10 s, and 13 s holds
  // one start and its delivery whatever the phase (8 s missed it when a start fell 8.6 s late).
  std::this_thread::sleep_for(std::chrono::seconds(13));
  // Prometheus scraped faultline's own endpoint during the run.
  {
    auto q = HttpSend("GET",
                      HttpUrl{"127.0.0.1", prom_port,
                              "/api/v1/query?query=max_over_time(faultline_job_samples_total[5m])"},
                      "text/plain", "", Deadline::After(10 * kNsPerSec));
    REQUIRE(q.ok());
    INFO(q->body);
    auto qj = nlohmann::json::parse(q->body);
    REQUIRE(qj["data"]["result"].size() == 1);
    CHECK(std::stod(qj["data"]["result"][0]["value"][1].get<std::string>()) > 100);
  }
  for (ChildProcess* p : {&prometheus, &alertmanager}) {
    kill(p->pid(), SIGTERM);
    REQUIRE(p->Wait(Deadline::After(30 * kNsPerSec)).has_value());
  }
  kill(receiver.pid(), SIGINT);
  REQUIRE(receiver.Wait(Deadline::After(20 * kNsPerSec)) == std::optional<int>(0));

  Faultline score({"score", "latest", "--db", db, "--alerts", alerts, "--rules", rules, "--grace",
                   "5s", "--json"},
                  d, "score");
  REQUIRE(score.Wait(Deadline::After(60 * kNsPerSec)) == std::optional<int>(0));
  INFO(score.out() + score.err() + ReadFile(alerts).value_or(""));
  auto j = nlohmann::json::parse(score.out());
  std::map<std::string, nlohmann::json> by;
  for (const auto& det : j["detectors"]) by[det["name"].get<std::string>()] = det;
  REQUIRE(by.count("TcpRetransmits"));
  REQUIRE(by.count("NeverFires"));  // a rule of the file that raised nothing still scores
  REQUIRE(by.count("WrongResults"));
  CHECK(by["WrongResults"]["alerts"] == 0);  // ftccl kept every result exact
  CHECK(by["WrongResults"]["recall"] == 0.0);
  REQUIRE(by.count("Noisy"));
  CHECK(by["TcpRetransmits"]["recall"] == 1.0);
  CHECK(by["TcpRetransmits"]["false_alarms"] == 0);
  CHECK(by["NeverFires"]["recall"] == 0.0);
  CHECK(by["NeverFires"]["alerts"] == 0);
  CHECK(by["Noisy"]["false_alarms"].get<int>() >= 1);
}

}  // namespace
}  // namespace fl::harness::suite
