// The results store goes away in the middle of a real run on the local lab (issue 29): a real
// PostgreSQL server stopped with -m immediate and started again, and a SQLite file on a small
// tmpfs that fills up. The writer spools what the store will not take (reports/store/spool.h);
// nothing is lost either way. Root only (the lab, the mount).
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "common/file_util.h"
#include "injectors/journal.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/pg_server.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::Faultline;
using testing::Netns;
using testing::TempDir;
using testing::WriteLab;

std::string OutageScenario(const std::string& dir, const std::string& duration) {
  const std::string p = dir + "/outage.yaml";
  REQUIRE(WriteFileAtomic(p, "name: store_outage\nseed: 5\nlab: {topology: " + WriteLab(dir) +
                                 "}\njob:\n  size: 256KiB\n  duration: " + duration +
                                 "\n  warmup_iterations: 10\n  collective_timeout: 20s\n"
                                 "faults:\n  - kind: bandwidth_throttle\n    target: h0.nic0\n"
                                 "    at: 500ms\n    duration: 1s\n    params: {rate: 200mbit}\n"
                                 "expectations:\n  survives: true\n")
              .ok());
  return p;
}

// The one run in the store once it has samples (read on a connection of the test's own).
std::optional<reports::RunData> RunWithSamples(const std::string& db) {
  auto store = reports::Store::Open(db, {.create = false});
  if (!store.ok()) return std::nullopt;
  auto runs = (*store)->ListRuns({});
  if (!runs.ok() || runs->size() != 1) return std::nullopt;
  auto data = (*store)->LoadRun(runs->front().id);
  if (!data.ok() || data->samples.size() < 20) return std::nullopt;
  return std::move(*data);
}

// Every rank's iterations form one unbroken range: a lost batch would leave a hole.
void RequireNoHoles(const reports::RunData& data) {
  std::map<int32_t, std::set<int64_t>> its;
  for (const auto& s : data.samples) its[s.rank].insert(s.iteration);
  REQUIRE(its.size() == 4);
  for (const auto& [rank, set] : its) {
    INFO("rank " << rank << ": " << set.size() << " iterations, " << *set.begin() << " to "
                 << *set.rbegin());
    CHECK(static_cast<int64_t>(set.size()) == *set.rbegin() - *set.begin() + 1);
    CHECK(set.size() > 30);
  }
}

std::string SpoolOf(const std::string& run_id) {
  return injectors::StateDir() + "/spool/" + run_id + ".spool";
}

// Removes a run's spool at scope exit, so that a test that fails half-way leaves none behind.
struct SpoolGuard {
  std::string path;
  ~SpoolGuard() {
    if (!path.empty()) unlink(path.c_str());
  }
};

TEST_CASE(
    "faultline run: PostgreSQL stopped with -m immediate mid-run and started again - every "
    "row reaches it and the run passes",
    "[.root][serial][integration]") {
  TempDir dir("fl_outage");
  std::string error;
  auto server = testing::PgServer::Start(&error);
  INFO(error);
  REQUIRE(server);
  const std::string pg = server->Uri();
  const auto before = Netns();
  SpoolGuard guard;  // destroyed after the coordinator below has ended
  Faultline f({"run", OutageScenario(dir.path(), "8s"), "--db", pg}, dir.path());
  std::optional<reports::RunData> early;
  REQUIRE(WaitUntil([&] { return (early = RunWithSamples(pg)).has_value(); },
                    Deadline::After(120 * kNsPerSec), 100 * kNsPerMs));
  guard.path = SpoolOf(early->run.id);
  const size_t samples_then = early->samples.size();
  REQUIRE(server->StopImmediate());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  REQUIRE(server->StartAgain());
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err() << "\n---\n" << server->Log());
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  // The writer said where the rows went meanwhile, and that they came back.
  CHECK_THAT(f.err(), Catch::Contains("rows go to the spool"));
  CHECK(Netns() == before);
  auto data = RunWithSamples(pg);
  REQUIRE(data.has_value());
  CHECK(data->run.status == reports::RunStatus::kPassed);
  CHECK(data->samples.size() > samples_then);
  RequireNoHoles(*data);
  bool counted = false;
  for (const auto& m : data->metrics) {
    if (m.name != "telemetry_dropped") continue;
    counted = true;
    CHECK(m.value == 0);
  }
  CHECK(counted);
  for (const auto& v : data->verdicts) CHECK(v.expectation != "telemetry_complete");
  CHECK(access(SpoolOf(data->run.id).c_str(), F_OK) != 0);
}

// A 64 MiB tmpfs of the test's own, unmounted (lazily, whatever is left in it) at scope exit.
struct SmallFs {
  std::string path;
  bool mounted = false;
  explicit SmallFs(std::string p) : path(std::move(p)) {
    REQUIRE(MakeDirs(path).ok());
    mounted =
        mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755") == 0;
    INFO(std::strerror(errno));
    REQUIRE(mounted);
  }
  ~SmallFs() {
    if (mounted) umount2(path.c_str(), MNT_DETACH);
  }
  // Writes a file until the file system is full.
  void Fill(const std::string& name) const {
    std::FILE* out = std::fopen((path + "/" + name).c_str(), "w");
    REQUIRE(out != nullptr);
    std::string block(64 * 1024, 'x');
    while (std::fwrite(block.data(), 1, block.size(), out) == block.size() &&
           std::fflush(out) == 0) {
    }
    std::fclose(out);
  }
};

TEST_CASE(
    "faultline run: a SQLite store on a file system that fills up mid-run - exit 3 naming the "
    "spool - faultline store replay writes every row once there is room",
    "[.root][serial][integration]") {
  TempDir dir("fl_outage");
  SmallFs fs(dir.path() + "/fs");
  const std::string db = fs.path + "/r.db";
  const auto before = Netns();
  SpoolGuard guard;  // destroyed after the coordinator below has ended
  Faultline f({"run", OutageScenario(dir.path(), "6s"), "--db", db}, dir.path());
  std::optional<reports::RunData> early;
  REQUIRE(WaitUntil([&] { return (early = RunWithSamples(db)).has_value(); },
                    Deadline::After(120 * kNsPerSec), 100 * kNsPerMs));
  guard.path = SpoolOf(early->run.id);
  fs.Fill("filler");
  auto rc = f.Wait(Deadline::After(300 * kNsPerSec));
  INFO(f.err());
  REQUIRE(rc.has_value());
  CHECK(*rc == 3);
  const std::string spool = SpoolOf(early->run.id);
  CHECK_THAT(f.err(), Catch::Contains("the run is not analysed"));
  CHECK_THAT(f.err(), Catch::Contains("rows are kept in the spool " + spool));
  CHECK_THAT(f.err(), Catch::Contains("faultline store replay " + spool));
  CHECK(Netns() == before);
  REQUIRE(access(spool.c_str(), F_OK) == 0);

  // Still full: the replay fails, and keeps the file.
  {
    Faultline r({"store", "replay", spool}, dir.path(), "replay_full");
    CHECK(r.Wait(Deadline::After(120 * kNsPerSec)) == 3);
    CHECK(access(spool.c_str(), F_OK) == 0);
  }
  REQUIRE(unlink((fs.path + "/filler").c_str()) == 0);
  Faultline r({"store", "replay", spool}, dir.path(), "replay");
  auto replayed = r.Wait(Deadline::After(120 * kNsPerSec));
  INFO(r.err() << r.out());
  REQUIRE(replayed.has_value());
  CHECK(*replayed == 0);
  CHECK_THAT(r.out(), Catch::Contains("of run " + early->run.id + " into " + db));
  CHECK_THAT(r.out(), Catch::Contains("its final status with them"));
  CHECK(access(spool.c_str(), F_OK) != 0);
  auto data = RunWithSamples(db);
  REQUIRE(data.has_value());
  CHECK(data->run.status == reports::RunStatus::kError);
  CHECK_THAT(data->run.message, Catch::Contains("not analysed"));
  CHECK(data->samples.size() > early->samples.size());
  RequireNoHoles(*data);
  // A second replay of the same file: it is gone, and nothing is written twice.
  Faultline again({"store", "replay", spool}, dir.path(), "again");
  CHECK(again.Wait(Deadline::After(60 * kNsPerSec)) == 2);
}

}  // namespace
}  // namespace fl::harness
