// Command jobs under the agent's policy (allow_commands, agent_policy.h): which programs an
// agent starts, on a disposable site and on real hosts.
#include <catch2/catch.hpp>

#include "harness/agent/agent_policy.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

pb::LaunchRanks OneRank() {
  pb::LaunchRanks l;
  auto* r = l.add_ranks();
  r->set_rank(0);
  r->set_world_size(2);
  return l;
}

std::vector<std::string> Job(std::vector<std::string> command) {
  std::vector<std::string> a = {"--job-id", "r1-0", "--progress-format", "lines", "--"};
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

TEST_CASE("command policy: allow_commands loads absolute paths only, with file:line:col",
          "[unit]") {
  auto p = ParseAgentPolicy("allow_commands: [/usr/bin/python3, /opt/nccl-tests/build/]\n", "p");
  REQUIRE(p.ok());
  CHECK(p->allow_commands.size() == 2);
  auto bad = ParseAgentPolicy("allow_commands: [python3]\n", "p.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("p.yaml:1:18: allow_commands entries must be absolute", 0) ==
        0);
}

TEST_CASE("command policy: real hosts refuse every command unless allow_commands names it",
          "[unit]") {
  const std::vector<std::string> dirs = {"/var/lib/faultline"};
  AgentPolicy none;  // the default: no allow_commands
  Status st = CheckLaunch(none, OneRank(), Job({"/usr/bin/python3", "t.py"}), dirs, false);
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK(st.message().find("allow_commands") != std::string::npos);
  // A local lab's own agents (a disposable site) run commands without a list.
  CHECK(CheckLaunch(none, OneRank(), Job({"/usr/bin/python3", "t.py"}), dirs, true).ok());

  auto p = ParseAgentPolicy("allow_commands: [/usr/bin/python3, /opt/nccl-tests/build]\n", "p");
  REQUIRE(p.ok());
  CHECK(CheckLaunch(*p, OneRank(), Job({"/usr/bin/python3", "t.py"}), dirs, false).ok());
  CHECK(CheckLaunch(*p, OneRank(), Job({"/opt/nccl-tests/build/all_reduce_perf", "-N", "0"}), dirs,
                    false)
            .ok());
  // Whole components: /opt/nccl-tests/build2 is not under /opt/nccl-tests/build.
  CHECK(CheckLaunch(*p, OneRank(), Job({"/opt/nccl-tests/build2/x"}), dirs, false).code() ==
        Code::kFailedPrecondition);
  CHECK(CheckLaunch(*p, OneRank(), Job({"/usr/bin/python3x"}), dirs, false).code() ==
        Code::kFailedPrecondition);
  CHECK(CheckLaunch(*p, OneRank(), Job({"/opt/nccl-tests/build/../../../bin/sh"}), dirs, false)
            .code() == Code::kInvalidArgument);
  CHECK(CheckLaunch(*p, OneRank(), Job({"python3"}), dirs, true).code() == Code::kInvalidArgument);
  CHECK(CheckLaunch(*p, OneRank(), Job({}), dirs, true).code() == Code::kInvalidArgument);
}

TEST_CASE("command policy: the command's own arguments are not worker flags", "[unit]") {
  const std::vector<std::string> dirs = {"/var/lib/faultline"};
  AgentPolicy none;
  // --rank after "--" is the command's, not an attempt to set the agent's --rank.
  CHECK(CheckLaunch(none, OneRank(), Job({"/usr/bin/python3", "t.py", "--rank", "3"}), dirs, true)
            .ok());
  // Before "--" it still is the agent's to set.
  std::vector<std::string> a = {"--log-dir", "/tmp/x", "--", "/bin/true"};
  CHECK(CheckLaunch(none, OneRank(), a, dirs, true).code() == Code::kFailedPrecondition);
}

TEST_CASE("command policy: --env may not name the dynamic loader on real hosts", "[unit]") {
  const std::vector<std::string> dirs = {"/var/lib/faultline"};
  auto p = ParseAgentPolicy("allow_commands: [/usr/bin/python3]\n", "p");
  REQUIRE(p.ok());
  std::vector<std::string> a = {"--env", "LD_PRELOAD=/tmp/x.so", "--", "/usr/bin/python3"};
  CHECK(CheckLaunch(*p, OneRank(), a, dirs, false).code() == Code::kFailedPrecondition);
  a[1] = "NCCL_IB_TIMEOUT=18";
  CHECK(CheckLaunch(*p, OneRank(), a, dirs, false).ok());
  a[1] = "=x";
  CHECK(CheckLaunch(*p, OneRank(), a, dirs, false).code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::harness
