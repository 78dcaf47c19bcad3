// `faultline serve` on PostgreSQL as a read-only role (docs/serve.md): a real server
// (tests/pg_server.h), runs written by the owner, then a role granted SELECT only; the role
// really cannot write, and the real `faultline serve` process with its URI answers every page
// and the API from the runs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "reports/store/store.h"
#include "tests/pg_server.h"
#include "tests/reports/render/browser.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

using nlohmann::json;

// The body of an HTTP reply, and its status line's code.
std::pair<int, std::string> Get(int port, const std::string& path) {
  const std::string reply =
      HttpGet(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const size_t sp = reply.find(' ');
  const size_t body = reply.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return {0, reply};
  return {std::stoi(reply.substr(sp + 1, 3)), reply.substr(body + 4)};
}

TEST_CASE("faultline serve on PostgreSQL as a read-only role: every page and the API answer",
          "[integration]") {
  std::string error;
  auto pg = fl::testing::PgServer::Start(&error);
  INFO(error);
  REQUIRE(pg);
  const std::string owner = pg->Uri();
  std::vector<std::string> ids;
  for (int n = 0; n < 3; ++n) {
    testing::SyntheticRunSpec spec;
    spec.run_id = "20260921-0" + std::to_string(n) + "0000-pg";
    spec.scenario = "flap";
    spec.duration_s = 20;
    RunData d = testing::MakeSyntheticRun(spec);
    d.run.start_wall_ns += n * 86400 * kNsPerSec;
    if (d.run.end_wall_ns) *d.run.end_wall_ns += n * 86400 * kNsPerSec;
    d.run.tags = {{"cluster", "rack7"}, {"suite", "nightly"}, {"fw", n < 2 ? "22.39" : "22.41"}};
    INFO(pg->Log());
    REQUIRE(testing::WriteRun(owner, d).ok());
    ids.push_back(spec.run_id);
  }
  // The reader: may connect and read, nothing else (PostgreSQL 15: no CREATE on public for
  // others either).
  REQUIRE(pg->Psql("CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA public TO reader; "
                   "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;") == 0);
  std::string reader = owner;
  reader.replace(reader.find("faultline@"), std::string("faultline@").size(), "reader@");
  {
    auto store = Store::Open(reader);
    INFO(store.status().ToString());
    REQUIRE(store.ok());
    RunRecord r;
    r.id = "not-allowed";
    r.scenario_name = "s";
    r.scenario_text = "name: s\n";
    r.start_wall_ns = kNsPerSec;
    const Status st = (*store)->CreateRun(r);
    INFO(st.ToString());
    CHECK_FALSE(st.ok());  // the role really is read-only
  }

  testing::TempDir dir;
  ServeProcess serve(reader, dir.path());
  auto [code, body] = Get(serve.port, "/healthz");
  CHECK(code == 200);
  std::tie(code, body) = Get(serve.port, "/api/v1/overview");
  REQUIRE(code == 200);
  auto j = json::parse(body);
  REQUIRE(j["groups"].size() == 1);
  CHECK(j["groups"][0]["cells"][0]["run_id"] == ids.back());
  std::tie(code, body) = Get(serve.port, "/api/v1/runs");
  REQUIRE(code == 200);
  CHECK(json::parse(body).size() == 3);
  std::tie(code, body) = Get(serve.port, "/api/v1/runs/" + ids[0]);
  REQUIRE(code == 200);
  CHECK(json::parse(body)["run_id"] == ids[0]);
  std::tie(code, body) = Get(serve.port, "/api/v1/trends?scenario=flap");
  REQUIRE(code == 200);
  CHECK_FALSE(json::parse(body)["series"].empty());
  std::tie(code, body) = Get(serve.port, "/api/v1/compare?a=tag:fw%3D22.39&b=tag:fw%3D22.41");
  REQUIRE(code == 200);
  CHECK(json::parse(body)["b"]["runs"].size() == 1);
  std::tie(code, body) =
      Get(serve.port, "/api/v1/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41");
  CHECK(code == 200);
  for (const std::string& page :
       std::vector<std::string>{"/", "/runs/" + ids[0], "/trends?scenario=flap",
                                "/compare?a=tag:fw%3D22.39&b=tag:fw%3D22.41", "/metrics"}) {
    std::tie(code, body) = Get(serve.port, page);
    INFO(page << ": " << body.substr(0, 300));
    CHECK(code == 200);
  }
  INFO(testing::ReadAll(serve.log));
  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::render
