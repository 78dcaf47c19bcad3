// faultline-worker as a process: ranks started the way an agent on a lab without a shared
// filesystem starts them (--store tcp://ADDR --store-token-file FILE), their rank from a
// launcher's variables and their NIC by interface name; and its argument errors (exit 2).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>

#include "ccl_under_test/api/tcp_store.h"
#include "common/file_util.h"
#include "tests/child_process.h"

#ifndef FL_WORKER_PATH
#error "FL_WORKER_PATH must name the faultline-worker binary"
#endif

namespace fl::workloads {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/fl-worker-kv-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

int RunWorker(std::vector<std::string> args, const std::string& out) {
  std::vector<std::string> argv = {"/usr/bin/env",         "-u", "RANK",         "-u",
                                   "WORLD_SIZE",           "-u", "SLURM_PROCID", "-u",
                                   "OMPI_COMM_WORLD_RANK", "-u", "FL_RANK",      FL_WORKER_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  fl::testing::ChildProcess::Options po;
  po.out = out;
  fl::testing::ChildProcess p(argv, po);
  auto code = p.Wait(Deadline::After(30 * kNsPerSec));
  return code ? *code : -1000;
}

TEST_CASE("faultline-worker: ranks meet through a TCP store, rank from the launcher, NIC by name",
          "[integration]") {
  TempDir dir;
  const std::string token_file = dir.path + "/token";
  REQUIRE(WriteFileAtomic(token_file, "worker-test-token\n").ok());
  chmod(token_file.c_str(), 0600);
  auto srv = ccl::TcpStoreServer::Start("127.0.0.1:0", "worker-test-token");
  REQUIRE(srv.ok());
  const int n = 2;
  std::vector<std::unique_ptr<fl::testing::ChildProcess>> ranks;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "SLURM_PROCID=" + std::to_string(r),
                                     "SLURM_NTASKS=" + std::to_string(n),
                                     "SLURM_LOCALID=" + std::to_string(r),
                                     FL_WORKER_PATH,
                                     "--ccl-option",
                                     "host_id=none",
                                     "--store",
                                     "tcp://" + (*srv)->address(),
                                     "--store-token-file",
                                     token_file,
                                     "--job-id",
                                     "kvworker",
                                     "--nics",
                                     r == 0 ? "lo" : "127.0.0.2",
                                     "--size",
                                     "64KiB",
                                     "--iterations",
                                     "5"};
    fl::testing::ChildProcess::Options po;
    po.out = dir.path + "/out." + std::to_string(r);
    po.err = dir.path + "/err." + std::to_string(r);
    ranks.push_back(std::make_unique<fl::testing::ChildProcess>(argv, po));
    REQUIRE(ranks.back()->pid() > 0);
  }
  for (int r = 0; r < n; ++r) {
    auto code = ranks[r]->Wait(Deadline::After(60 * kNsPerSec));
    auto out = ReadFile(dir.path + "/out." + std::to_string(r));
    auto err = ReadFile(dir.path + "/err." + std::to_string(r));
    REQUIRE(out.ok());
    INFO("rank " << r << " stderr:\n" << (err.ok() ? *err : "") << "\nstdout:\n" << *out);
    REQUIRE(code.has_value());
    CHECK(*code == 0);
    CHECK(Count(*out, "\"t\":\"sample\",\"rank\":" + std::to_string(r)) == 5);
    CHECK(Count(*out, "\"mismatch\":true") == 0);
  }
  CHECK((*srv)->stats().auth_failures == 0);
}

TEST_CASE("faultline-worker: store and rank arguments are checked (exit 2)", "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  const std::string token_file = dir.path + "/token";
  REQUIRE(WriteFileAtomic(token_file, "t\n").ok());
  const std::vector<std::string> base = {"--rank", "0", "--world-size", "1", "--iterations", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // No store at all; both kinds; a tcp store without its token file; a directory with a
  // token file; a token file that is not there.
  CHECK(RunWorker(with({}), out) == 2);
  CHECK(RunWorker(with({"--store", dir.path, "--store-dir", dir.path}), out) == 2);
  CHECK(RunWorker(with({"--store", "tcp://127.0.0.1:1"}), out) == 2);
  CHECK(RunWorker(with({"--store", dir.path, "--store-token-file", token_file}), out) == 2);
  CHECK(RunWorker(with({"--store", "tcp://127.0.0.1:1", "--store-token-file", dir.path + "/none"}),
                  out) == 2);
  // An interface that does not exist.
  CHECK(RunWorker(with({"--store-dir", dir.path + "/rdv", "--nics", "fl-no-such-if0"}), out) == 2);
  auto msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("fl-no-such-if0"));
  // No rank from flags or the environment.
  CHECK(RunWorker({"--store-dir", dir.path + "/rdv", "--iterations", "1"}, out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("--rank"));
  // CCL options are checked against the CCL's schema before anything joins: an unknown name
  // and an out-of-range value are exit 2, naming the flag and the option.
  CHECK(RunWorker(with({"--store-dir", dir.path + "/rdv", "--ccl-option", "dead_ms=9"}), out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("--ccl-option: unknown ftccl option 'dead_ms' (known: "));
  CHECK(RunWorker(with({"--store-dir", dir.path + "/rdv", "--ccl-option", "channels_per_nic=99"}),
                  out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("channels_per_nic must be within 1..64, not 99"));
  // A typed option reaches the factory: the run works with it.
  CHECK(RunWorker(with({"--store-dir", dir.path + "/rdv", "--ccl-option", "dead_timeout_ms=2s",
                        "--ccl-option", "host_id=none"}),
                  out) == 0);
  // --store-dir alone still works (world of one).
  CHECK(RunWorker(with({"--store-dir", dir.path + "/rdv"}), out) == 0);
}

TEST_CASE("faultline-worker: --on-rank-loss shrink with a CCL that cannot shrink is exit 2",
          "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  const std::vector<std::string> base = {"--rank",       "0", "--world-size", "1",
                                         "--iterations", "3", "--store-dir",  dir.path + "/rdv"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // ftccl has no Shrink: refused after joining, before the first iteration (no sample).
  CHECK(RunWorker(with({"--on-rank-loss", "shrink"}), out) == 2);
  auto msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("--on-rank-loss shrink: ftccl cannot shrink"));
  CHECK_THAT(*msg, !Catch::Contains("\"t\":\"sample\""));
  CHECK(RunWorker(with({"--on-rank-loss", "restart"}), out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("on_rank_loss must be abort or shrink"));
  CHECK(RunWorker(with({"--on-rank-loss", "shrink", "--shrink-grace", "soon"}), out) == 2);
  // abort (the default) runs as before.
  CHECK(RunWorker(with({"--on-rank-loss", "abort"}), out) == 0);
}

TEST_CASE("faultline-worker: workload options are checked against the workload's schema",
          "[integration]") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  const std::vector<std::string> base = {"--rank",       "0",   "--world-size", "1",
                                         "--iterations", "2",   "--store-dir",  dir.path + "/rdv",
                                         "--size",       "4KiB"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // Another workload's option, an unknown one, a value out of its range, not key=value: exit 2
  // before anything joins, naming the flag and the option.
  CHECK(RunWorker(with({"--workload-option", "compute=5ms"}), out) == 2);
  auto msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg,
             Catch::Contains("--workload-option: allreduce_loop takes no options (got 'compute')"));
  CHECK(RunWorker(with({"--workload", "training_step", "--workload-option", "computer=5ms"}),
                  out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("--workload-option: unknown training_step option 'computer' "
                                   "(known: compute, compute_device)"));
  CHECK(RunWorker(with({"--workload", "training_step", "--workload-option", "compute_device=tpu"}),
                  out) == 2);
  msg = ReadFile(out);
  REQUIRE(msg.ok());
  CHECK_THAT(*msg, Catch::Contains("compute_device wants cpu, gpu, auto, got 'tpu'"));
  CHECK(RunWorker(with({"--workload", "training_step", "--workload-option", "compute"}), out) == 2);
  // Typed values reach training_step's factory: the run works with them.
  CHECK(RunWorker(with({"--workload", "training_step", "--workload-option", "compute=1ms",
                        "--workload-option", "compute_device=cpu"}),
                  out) == 0);
  // None given: the schema's defaults.
  CHECK(RunWorker(with({"--workload", "training_step"}), out) == 0);
}

}  // namespace
}  // namespace fl::workloads
