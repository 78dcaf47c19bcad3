// nic_samples (schema version 5): the NIC counter readings of the agents, written directly and
// through the batched writer, read back by LoadRun in (host, NIC, time) order; a version 4
// file migrates with its rows kept.
#include <algorithm>
#include <catch2/catch.hpp>
#include <tuple>

#include "reports/store/batch_writer.h"
#include "reports/store/schema.h"
#include "reports/store/sqlite.h"
#include "reports/store/store.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports {
namespace {

using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;  // 2025-11-30T01:00:00Z

RunRecord Run(const std::string& id) {
  RunRecord r;
  r.id = id;
  r.scenario_name = "nic_flap";
  r.scenario_text = "name: nic_flap\n";
  r.start_wall_ns = kT0;
  return r;
}

NicSampleRecord Nic(const std::string& run, const std::string& host, const std::string& nic,
                    Nanos t, uint64_t tx) {
  NicSampleRecord n;
  n.run_id = run;
  n.host = host;
  n.nic = nic;
  n.wall_ns = t;
  n.tx_bytes = tx;
  n.rx_bytes = tx / 2;
  n.tx_packets = tx / 1500;
  n.rx_packets = tx / 3000;
  return n;
}

TEST_CASE("nic samples: every field round-trips, extremes included, in host-NIC-time order",
          "[unit]") {
  TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  REQUIRE(store.ok());
  REQUIRE((*store)->CreateRun(Run("r1")).ok());
  REQUIRE((*store)->CreateRun(Run("r2")).ok());

  NicSampleRecord full = Nic("r1", "h1", "nic0", kT0 + 100 * kNsPerMs, UINT64_MAX);
  full.rx_bytes = 1ULL << 63;  // past INT64_MAX: the bits survive the INTEGER column
  full.rx_dropped = 3;
  full.tx_dropped = 4;
  full.rx_errors = 5;
  full.tx_errors = 6;
  full.rx_pause = 0;  // reported and zero is not absent
  full.tx_pause = UINT64_MAX;
  full.extra = {{"rx_queue_drops", 7}, {"rdma_port_xmit_data", UINT64_MAX}, {"a.b:c-d", 0}};
  std::vector<NicSampleRecord> rows = {
      Nic("r1", "h1", "nic1", kT0 + 200 * kNsPerMs, 10),
      full,
      Nic("r1", "h0", "nic0", kT0 + 300 * kNsPerMs, 20),
      Nic("r1", "h1", "nic0", kT0 + 50 * kNsPerMs, 30),  // earlier than `full`
      Nic("r2", "h1", "nic0", kT0, 40),                  // another run's
  };
  REQUIRE((*store)->InsertNicSamples(rows).ok());
  REQUIRE((*store)->InsertNicSamples({}).ok());

  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  REQUIRE(data->nics.size() == 4);
  CHECK(data->nics[0] == rows[2]);  // h0 nic0
  CHECK(data->nics[1] == rows[3]);  // h1 nic0, 50 ms
  CHECK(data->nics[2] == full);     // h1 nic0, 100 ms
  CHECK(data->nics[3] == rows[0]);  // h1 nic1
  CHECK_FALSE(data->nics[0].rx_pause.has_value());
  CHECK(data->nics[2].rx_pause == 0u);

  auto other = (*store)->LoadRun("r2");
  REQUIRE(other.ok());
  REQUIRE(other->nics.size() == 1);
  CHECK(other->nics[0] == rows[4]);

  // The extras are a JSON object in the column (ad-hoc SQL can read them).
  auto raw = sql::Db::Open(dir.File("r.db"), {});
  REQUIRE(raw.ok());
  auto st = (*raw)->Prepare(
      "SELECT extra_json, rx_pause, tx_pause FROM nic_samples WHERE run_id = 'r1' AND host = "
      "'h0'");
  REQUIRE(st.ok());
  REQUIRE(*st->Step());
  CHECK(st->Text(0) == "{}");
  CHECK_FALSE(st->OptInt(1).has_value());
  CHECK_FALSE(st->OptInt(2).has_value());
}

TEST_CASE("nic samples: extra counters as JSON, and text that is not such an object", "[unit]") {
  CHECK(NicExtraJson({}) == "{}");
  const std::map<std::string, uint64_t> m = {{"x", 1}, {"y", UINT64_MAX}};
  auto back = ParseNicExtra(NicExtraJson(m));
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK(ParseNicExtra("").ok());
  CHECK(ParseNicExtra("[1]").status().code() == Code::kDataLoss);
  CHECK(ParseNicExtra("{\"x\": -1}").status().code() == Code::kDataLoss);
  CHECK(ParseNicExtra("{\"x\": \"1\"}").status().code() == Code::kDataLoss);
  CHECK(ParseNicExtra("{not json").status().code() == Code::kDataLoss);

  // A row whose extras were edited into nonsense keeps its counters, loses its extras.
  TempDir dir;
  auto store = Store::Open(dir.File("r.db"));
  REQUIRE(store.ok());
  REQUIRE((*store)->CreateRun(Run("r1")).ok());
  NicSampleRecord n = Nic("r1", "h0", "nic0", kT0, 99);
  n.extra = {{"rx_queue_drops", 1}};
  REQUIRE((*store)->InsertNicSamples({&n, 1}).ok());
  auto raw = sql::Db::Open(dir.File("r.db"), {});
  REQUIRE(raw.ok());
  REQUIRE((*raw)->Exec("UPDATE nic_samples SET extra_json = 'oops'").ok());
  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  REQUIRE(data->nics.size() == 1);
  CHECK(data->nics[0].tx_bytes == 99);
  CHECK(data->nics[0].extra.empty());
}

TEST_CASE("nic samples: the batched writer commits them with samples and events", "[unit]") {
  TempDir dir;
  {
    auto store = Store::Open(dir.File("r.db"));
    REQUIRE(store.ok());
    REQUIRE((*store)->CreateRun(Run("r1")).ok());
  }
  auto writer = BatchWriter::Open(dir.File("r.db"));
  REQUIRE(writer.ok());
  std::vector<NicSampleRecord> nics;
  for (int i = 0; i < 50; ++i)
    nics.push_back(Nic("r1", "h" + std::to_string(i % 2), "nic" + std::to_string(i % 3),
                       kT0 + i * 100 * kNsPerMs, 1000u * i));
  nics[7].extra = {{"rx_queue_drops", 3}};
  nics[8].tx_pause = 12;
  REQUIRE((*writer)->PushNicSamples(nics, Deadline::After(kNsPerSec)).ok());
  SampleRecord s{"r1", 0, 1, kT0, kT0 + 1000, 4096, true, false};
  REQUIRE((*writer)->Push(s, Deadline::After(kNsPerSec)).ok());
  EventRecord e{"r1", -1, kT0, "steady_state", "{}"};
  REQUIRE((*writer)->Push(e, Deadline::After(kNsPerSec)).ok());
  REQUIRE((*writer)->Flush(Deadline::After(10 * kNsPerSec)).ok());
  CHECK((*writer)->GetStats().committed_rows == 52);
  REQUIRE((*writer)->Close(Deadline::After(10 * kNsPerSec)).ok());

  auto store = Store::Open(dir.File("r.db"));
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 1);
  CHECK(data->events.size() == 1);
  REQUIRE(data->nics.size() == nics.size());
  auto want = nics;
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return std::tie(a.host, a.nic, a.wall_ns) < std::tie(b.host, b.nic, b.wall_ns);
  });
  CHECK(data->nics == want);
}

TEST_CASE("nic samples: a version 4 database migrates to 5 and keeps its rows", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  {
    Store::Options v4;
    v4.schema_version = 4;
    auto store = Store::Open(path, v4);
    REQUIRE(store.ok());
    CHECK(*(*store)->SchemaVersion() == 4);
    REQUIRE((*store)->CreateRun(Run("r-old")).ok());
    SampleRecord s{"r-old", 1, 5, kT0, kT0 + 10, 64, true, false};
    REQUIRE((*store)->InsertSamples({&s, 1}).ok());
    // No nic_samples table yet: a version 4 run simply has no NIC readings.
    auto old = (*store)->InsertNicSamples({});
    CHECK_FALSE(old.ok());
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);
  auto data = (*store)->LoadRun("r-old");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 1);
  CHECK(data->nics.empty());
  NicSampleRecord n = Nic("r-old", "h0", "nic0", kT0, 1);
  REQUIRE((*store)->InsertNicSamples({&n, 1}).ok());
  data = (*store)->LoadRun("r-old");
  REQUIRE(data.ok());
  REQUIRE(data->nics.size() == 1);
  CHECK(data->nics[0] == n);
}

}  // namespace
}  // namespace fl::reports
