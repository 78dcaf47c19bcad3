// The Alertmanager webhook receiver (harness/alerts/receiver.h): real HTTP on loopback, and a
// real Alertmanager (Debian's prometheus-alertmanager) sending it an alert firing and
// resolved, read back by the alerts parser of `faultline score`.
#include "harness/alerts/receiver.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/http_put.h"
#include "common/units.h"
#include "reports/analysis/alerts.h"
#include "tests/child_process.h"
#include "tests/test_util.h"

namespace fl::harness::alerts {
namespace {

using testing::TempDir;

HttpReply Send(int port, const std::string& method, const std::string& body,
               const std::string& path = "/") {
  HttpUrl url{"127.0.0.1", port, path};
  auto r = HttpSend(method, url, "application/json", body, Deadline::After(10 * kNsPerSec));
  REQUIRE(r.ok());
  return *r;
}

// A receiver on a free loopback port writing to `out`.
std::unique_ptr<AlertReceiver> StartOn(const std::string& out) {
  ReceiverOptions o;
  o.listen = "127.0.0.1:0";
  o.out_path = out;
  auto r = AlertReceiver::Start(o);
  REQUIRE(r.ok());
  return std::move(*r);
}

TEST_CASE("alert receiver: a notification is written as one line, anything else is refused",
          "[unit]") {
  TempDir dir("fl_recv");
  const std::string out = dir.path() + "/alerts.jsonl";
  auto r = StartOn(out);
  const int port = r->port();
  REQUIRE(port > 0);

  CHECK(Send(port, "POST", "{\"version\": \"4\",\n \"alerts\": []}").status == 200);
  CHECK(Send(port, "POST", "[1, 2]").status == 400);
  CHECK(Send(port, "POST", "{not json").status == 400);
  CHECK(Send(port, "GET", "").status == 405);
  {
    // Over the limit: a 413 once the headers say so, or a reset while the client still sends.
    auto big = HttpSend("POST", HttpUrl{"127.0.0.1", port, "/"}, "application/json",
                        std::string(2 << 20, ' '), Deadline::After(10 * kNsPerSec));
    CHECK((!big.ok() || big->status == 413));
  }
  CHECK(Send(port, "POST", R"({"detector": "x", "time_ns": 5})").status == 200);
  CHECK(r->received() == 2);
  r->Stop();
  auto text = ReadFile(out);
  REQUIRE(text.ok());
  CHECK(*text == "{\"alerts\":[],\"version\":\"4\"}\n{\"detector\":\"x\",\"time_ns\":5}\n");

  // A second receiver appends to the same file.
  auto again = StartOn(out);
  CHECK(Send(again->port(), "POST", "{}").status == 200);
  again->Stop();
  CHECK(ReadFile(out)->size() == text->size() + 3);
}

TEST_CASE("alert receiver: bad addresses and files are refused before it listens", "[unit]") {
  TempDir dir("fl_recv");
  ReceiverOptions o;
  o.out_path = dir.path() + "/a.jsonl";
  for (const char* bad : {"localhost:80", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:x", ":80"}) {
    INFO(bad);
    o.listen = bad;
    auto r = AlertReceiver::Start(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
  }
  o.listen = "127.0.0.1:0";
  o.out_path = dir.path() + "/no/such/dir/a.jsonl";
  CHECK_FALSE(AlertReceiver::Start(o).ok());
  o.out_path = "";
  CHECK(AlertReceiver::Start(o).status().code() == Code::kInvalidArgument);
}

TEST_CASE("alert receiver: a real Alertmanager's alert, firing then resolved, scores as one",
          "[integration]") {
  const std::string am = "/usr/bin/prometheus-alertmanager";
  REQUIRE(access(am.c_str(), X_OK) == 0);  // scripts/setup.sh installs it
  TempDir dir("fl_am");
  const std::string out = dir.path() + "/alerts.jsonl";
  auto r = StartOn(out);
  const int am_port = testing::FreeTcpPort("127.0.0.1");
  REQUIRE(WriteFileAtomic(dir.path() + "/am.yml",
                          "route:\n"
                          "  receiver: fl\n"
                          "  group_by: [alertname]\n"
                          "  group_wait: 0s\n"
                          "  group_interval: 1s\n"
                          "  repeat_interval: 1h\n"
                          "receivers:\n"
                          "  - name: fl\n"
                          "    webhook_configs:\n"
                          "      - url: http://127.0.0.1:" +
                              std::to_string(r->port()) +
                              "/\n"
                              "        send_resolved: true\n")
              .ok());
  testing::ChildProcess::Options po;
  po.out = dir.path() + "/am.log";
  testing::ChildProcess alertmanager(
      {am, "--config.file=" + dir.path() + "/am.yml", "--storage.path=" + dir.path() + "/data",
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      po);
  auto log = [&] { return ReadFile(dir.path() + "/am.log").value_or(""); };
  HttpUrl ready{"127.0.0.1", am_port, "/-/ready"};
  REQUIRE(WaitUntil(
      [&] {
        auto rep = HttpSend("GET", ready, "text/plain", "", Deadline::After(kNsPerSec));
        return rep.ok() && rep->status == 200;
      },
      Deadline::After(30 * kNsPerSec), 100 * kNsPerMs));

  const Nanos start = (WallNowNs() / kNsPerSec - 5) * kNsPerSec;
  const std::string starts = FormatWallIso(start);
  const std::string alert = R"({"labels": {"alertname": "LossHigh", "target": "h1.nic0"}, )"
                            R"("startsAt": ")" +
                            starts + "\"";
  INFO(log());
  CHECK(Send(am_port, "POST", "[" + alert + "}]", "/api/v2/alerts").status == 200);
  REQUIRE(WaitUntil([&] { return r->received() >= 1; }, Deadline::After(20 * kNsPerSec)));
  // Resolved: the same alert with an end in the past.
  const std::string ends = FormatWallIso(WallNowNs() - kNsPerSec);
  CHECK(Send(am_port, "POST", "[" + alert + R"(, "endsAt": ")" + ends + "\"}]", "/api/v2/alerts")
            .status == 200);
  REQUIRE(WaitUntil([&] { return r->received() >= 2; }, Deadline::After(20 * kNsPerSec)));
  r->Stop();

  auto set = reports::analysis::LoadAlerts(out);
  REQUIRE(set.ok());
  CHECK(set->copies >= 2);
  REQUIRE(set->alerts.size() == 1);
  const auto& a = set->alerts[0];
  CHECK(a.detector == "LossHigh");
  CHECK(a.target == "h1.nic0");
  CHECK(a.start_ns / kNsPerMs == start / kNsPerMs);
  REQUIRE(a.end_ns.has_value());
  CHECK(*a.end_ns > a.start_ns);
}

}  // namespace
}  // namespace fl::harness::alerts
