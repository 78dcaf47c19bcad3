// `faultline doctor`: every precondition of a run checked before anything is touched
// (harness/suite/doctor.h, docs/operations.md "faultline doctor"); Nagios exit codes.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <tuple>

#include "common/build_info.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/suite/doctor.h"

namespace fl::harness {
namespace {

struct DoctorArgs {
  suite::DoctorOptions o;
  bool json = false;
  std::string agent_wait = "15s", max_clock_offset = "500ms";
};

int Doctor(DoctorArgs& a) {
  QuietLogsUnlessAsked();
  if (a.o.suite_file.empty() && a.o.scenario_files.empty() && a.o.lab_file.empty()) {
    std::fprintf(stderr, "faultline doctor: give --suite, --scenario or --lab (see --help)\n");
    return 2;
  }
  for (auto [flag, text, out] :
       {std::tuple{"--agent-wait", &a.agent_wait, &a.o.agent_wait},
        std::tuple{"--max-clock-offset", &a.max_clock_offset, &a.o.max_clock_offset}}) {
    auto v = ParseDurationFlag(flag, *text);
    if (!v.ok()) {
      std::fprintf(stderr, "faultline doctor: %s\n", v.status().ToUserString().c_str());
      return 2;
    }
    *out = *v;
  }
  a.o.coordinator_version = VersionAndRevision();
  auto lines = suite::RunDoctor(a.o);
  if (a.json)
    std::printf("%s\n", suite::DoctorJson(lines).dump(2).c_str());
  else
    std::fputs(suite::FormatDoctor(lines).c_str(), stdout);
  return static_cast<int>(suite::WorstLevel(lines));
}

}  // namespace

void AddDoctorCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<DoctorArgs>();
  auto* c = app.add_subcommand("doctor", HelpText(R"(
check every precondition of a run before anything is touched: the suite's scenarios on
the lab (targets exist), each planned fault against the agents' policy, certificates
(expired: CRITICAL, under 30 days: WARNING), faults left in the journal, switches'
SSH host keys (unknown or changed: CRITICAL, never accepted), an inventory's agents
(each reachable, its version, its clock, its NICs), room for results, what the
lab needs of this host. One line per finding, OK, WARNING or CRITICAL with what to do;
exit 0, 1 or 2 as Nagios plugins do (docs/operations.md))"));
  c->add_option("--lab", a->o.lab_file, "the lab: a topology or an inventory file");
  c->add_option("--suite", a->o.suite_file, "a suite file: each of its scenarios is checked");
  c->add_option("--scenario", a->o.scenario_files, "a scenario to check (repeatable)");
  c->add_option("--policy", a->o.policy_file,
                "the policy file the hosts' agents run with (/etc/faultline/policy.yaml)");
  c->add_option("--tls-dir", a->o.tls_dir,
                "the lab's TLS folder (default: tls/ beside the inventory's token file)");
  c->add_option("--journal-dir", a->o.journal_dir,
                "this host's fault journal (default $FAULTLINE_STATE_DIR/journal)");
  c->add_option("--cert-warn-days", a->o.cert_warn_days,
                "a certificate expiring within this many days is a WARNING")
      ->capture_default_str();
  c->add_flag(
      "--no-agents", [a](int64_t) { a->o.agents = false; },
      "do not ask an inventory's agents (by default each must dial in: its version,\n"
      "clock and NICs are checked; they are sent Shutdown after, their service restarts\n"
      "them)");
  c->add_option("--agent-wait", a->agent_wait, "how long to wait for the agents")
      ->capture_default_str();
  c->add_option("--max-clock-offset", a->max_clock_offset,
                "an agent's clock off by more than this is CRITICAL (a tenth of it: WARNING)")
      ->capture_default_str();
  c->add_flag("--json", a->json, "the findings as JSON");
  AddDbOption(c, &a->o.db);
  RunAfterParse(c, a, exit_code, Doctor);
}

}  // namespace fl::harness
