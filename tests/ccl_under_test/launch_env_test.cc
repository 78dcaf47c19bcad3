// What a rank reads from its launcher: rank and world size from flags or the variables of
// Slurm, torchrun and Open MPI (precedence, disagreement, bad values), and NICs by name.
#include <catch2/catch.hpp>

#include <map>

#include "ccl_under_test/api/launch_env.h"

namespace fl::ccl {
namespace {

// A fake environment.
GetenvFn Env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST_CASE("launch env: each launcher's variables give rank, size and local rank", "[unit]") {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string source;
  };
  for (const Case& c : std::vector<Case>{
           {{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}}, "slurm"},
           {{{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}, "torch"},
           {{{"OMPI_COMM_WORLD_RANK", "5"},
             {"OMPI_COMM_WORLD_SIZE", "8"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
            "openmpi"},
           {{{"FL_RANK", "5"}, {"FL_WORLD_SIZE", "8"}, {"FL_LOCAL_RANK", "1"}}, "faultline"},
       }) {
    auto e = RankFromEnvironment(Env(c.vars));
    INFO(c.source);
    REQUIRE(e.ok());
    CHECK(e->rank == 5);
    CHECK(e->world_size == 8);
    CHECK(e->local_rank == 1);
    CHECK(e->source == c.source);
  }
  // SLURM_NPROCS is the older spelling of SLURM_NTASKS; the local rank is optional.
  auto old = RankFromEnvironment(Env({{"SLURM_PROCID", "2"}, {"SLURM_NPROCS", "4"}}));
  REQUIRE(old.ok());
  CHECK(old->world_size == 4);
  CHECK(old->local_rank == -1);
  CHECK(RankFromEnvironment(Env({})).status().code() == Code::kNotFound);
  // Empty variables count as unset.
  CHECK(RankFromEnvironment(Env({{"RANK", ""}})).status().code() == Code::kNotFound);
}

TEST_CASE("launch env: bad values are InvalidArgument naming the variable", "[unit]") {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{{"RANK", "1"}}, "WORLD_SIZE"},
           {{{"RANK", "x"}, {"WORLD_SIZE", "4"}}, "RANK='x'"},
           {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "RANK='-1'"},
           {{{"RANK", "4"}, {"WORLD_SIZE", "4"}}, "RANK=4 is not below WORLD_SIZE=4"},
           {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0"},
           {{{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}, "WORLD_SIZE="},
           {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "2"}},
            "SLURM_LOCALID=2"},
           {{{"OMPI_COMM_WORLD_RANK", "3"}}, "OMPI_COMM_WORLD_SIZE"},
       }) {
    auto e = RankFromEnvironment(Env(c.vars));
    INFO(c.names << ": " << e.status().ToString());
    CHECK(e.status().code() == Code::kInvalidArgument);
    CHECK_THAT(e.status().message(), Catch::Contains(c.names));
  }
}

TEST_CASE("launch env: precedence, agreement, and a launcher inside a Slurm step", "[unit]") {
  // Two sets that agree are fine; the first in the order names the source.
  auto agree = RankFromEnvironment(
      Env({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  REQUIRE(agree.ok());
  CHECK(agree->source == "torch");
  // Same world size, different rank: contradictory.
  auto clash = RankFromEnvironment(Env({{"RANK", "3"},
                                        {"WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_RANK", "2"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK(clash.status().code() == Code::kInvalidArgument);
  CHECK_THAT(clash.status().message(), Catch::Contains("RANK=3 WORLD_SIZE=4 (torch-style)"));
  CHECK_THAT(clash.status().message(), Catch::Contains("OMPI_COMM_WORLD_RANK=2"));
  CHECK_THAT(clash.status().message(), Catch::Contains("--rank"));
  // A larger outer world is no enclosing launcher: an error too.
  CHECK(RankFromEnvironment(
            Env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "8"}}))
            .status()
            .code() == Code::kInvalidArgument);
  // Local ranks that disagree.
  CHECK(RankFromEnvironment(Env({{"RANK", "1"},
                                 {"WORLD_SIZE", "2"},
                                 {"LOCAL_RANK", "0"},
                                 {"SLURM_PROCID", "1"},
                                 {"SLURM_NTASKS", "2"},
                                 {"SLURM_LOCALID", "1"}}))
            .status()
            .code() == Code::kInvalidArgument);
  // torchrun (2 nodes x 4) inside an srun step of 2 tasks: the step's variables describe
  // torchrun's task; the ranks are torch's.
  auto nested = RankFromEnvironment(Env({{"RANK", "6"},
                                         {"WORLD_SIZE", "8"},
                                         {"LOCAL_RANK", "2"},
                                         {"SLURM_PROCID", "1"},
                                         {"SLURM_NTASKS", "2"},
                                         {"SLURM_LOCALID", "0"}}));
  REQUIRE(nested.ok());
  CHECK(nested->rank == 6);
  CHECK(nested->local_rank == 2);
  CHECK(nested->source == "torch");
  // mpirun inside an allocation likewise: Open MPI before Slurm.
  auto mpi = RankFromEnvironment(Env({{"OMPI_COMM_WORLD_RANK", "5"},
                                      {"OMPI_COMM_WORLD_SIZE", "16"},
                                      {"SLURM_PROCID", "0"},
                                      {"SLURM_NTASKS", "2"}}));
  REQUIRE(mpi.ok());
  CHECK(mpi->source == "openmpi");
  CHECK(mpi->rank == 5);
  // A bad value in a set that would not be chosen is still an error (naming it).
  auto bad_other = RankFromEnvironment(
      Env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "zero"}, {"SLURM_NTASKS", "2"}}));
  CHECK(bad_other.status().code() == Code::kInvalidArgument);
  CHECK_THAT(bad_other.status().message(), Catch::Contains("SLURM_PROCID"));
}

TEST_CASE("launch env: flags win over the environment, both or neither", "[unit]") {
  auto env = Env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
  auto f = ResolveRank(3, 8, env);
  REQUIRE(f.ok());
  CHECK(f->rank == 3);
  CHECK(f->world_size == 8);
  CHECK(f->source == "flags");
  CHECK(f->local_rank == -1);  // the environment describes another rank: not taken
  auto same = ResolveRank(1, 4, env);
  REQUIRE(same.ok());
  CHECK(same->local_rank == 1);
  // Flags win even over an environment that is itself broken.
  CHECK(ResolveRank(0, 2, Env({{"RANK", "junk"}})).ok());
  CHECK(ResolveRank(3, std::nullopt, env).status().code() == Code::kInvalidArgument);
  CHECK(ResolveRank(std::nullopt, 4, env).status().code() == Code::kInvalidArgument);
  CHECK(ResolveRank(4, 4, env).status().code() == Code::kInvalidArgument);
  CHECK(ResolveRank(-1, 4, env).status().code() == Code::kInvalidArgument);
  CHECK(ResolveRank(0, 0, env).status().code() == Code::kInvalidArgument);
  auto from_env = ResolveRank(std::nullopt, std::nullopt, env);
  REQUIRE(from_env.ok());
  CHECK(from_env->rank == 1);
  CHECK(from_env->source == "torch");
  CHECK(ResolveRank(std::nullopt, std::nullopt, Env({})).status().code() == Code::kNotFound);
}

TEST_CASE("launch env: NICs by address or interface name", "[unit]") {
  const std::vector<InterfaceAddress> ifs = {
      {"lo", ""},           {"lo", "127.0.0.1"},  {"eth0", ""},
      {"eth0", "10.0.0.5"}, {"eth0", "10.0.0.6"}, {"ib0", ""},
  };
  auto r = ResolveNicsWith({"eth0", "198.18.1.2", "lo"}, ifs);
  REQUIRE(r.ok());
  CHECK(*r == std::vector<std::string>{"10.0.0.5", "198.18.1.2", "127.0.0.1"});
  auto none = ResolveNicsWith({"ib0"}, ifs);
  CHECK(none.status().code() == Code::kInvalidArgument);
  CHECK_THAT(none.status().message(), Catch::Contains("'ib0' has no IPv4 address"));
  auto missing = ResolveNicsWith({"eth9"}, ifs);
  CHECK(missing.status().code() == Code::kInvalidArgument);
  CHECK_THAT(missing.status().message(), Catch::Contains("'eth9'"));
  CHECK_THAT(missing.status().message(), Catch::Contains("lo, eth0, ib0"));
  CHECK(ResolveNicsWith({""}, ifs).status().code() == Code::kInvalidArgument);
  // On this host: lo is 127.0.0.1; addresses pass through without reading interfaces.
  auto lo = ResolveNics({"lo", "127.0.0.9"});
  REQUIRE(lo.ok());
  CHECK(*lo == std::vector<std::string>{"127.0.0.1", "127.0.0.9"});
  CHECK(ResolveNics({"fl-no-such-if0"}).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::ccl
