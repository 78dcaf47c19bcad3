#include "harness/cli/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "common/build_info.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::harness {

void AddLabCommands(CLI::App& app, int* exit_code);        // harness/cli/lab_cmd.cc
void AddRunCommands(CLI::App& app, int* exit_code);        // harness/cli/run_cmd.cc
void AddReportCommands(CLI::App& app, int* exit_code);     // harness/cli/report_cmd.cc
void AddSuiteCommands(CLI::App& app, int* exit_code);      // harness/cli/suite_cmd.cc
void AddCertsCommands(CLI::App& app, int* exit_code);      // harness/cli/certs_cmd.cc
void AddPluginCommands(CLI::App& app, int* exit_code);     // harness/cli/plugins_cmd.cc
void AddStoreCommands(CLI::App& app, int* exit_code);      // harness/cli/store_cmd.cc
void AddProjectCommands(CLI::App& app, int* exit_code);    // harness/cli/project_cmd.cc
void AddSweepCommands(CLI::App& app, int* exit_code);      // harness/cli/sweep_cmd.cc
void AddScoreCommands(CLI::App& app, int* exit_code);      // harness/cli/score_cmd.cc
void AddAlertsCommands(CLI::App& app, int* exit_code);     // harness/cli/alerts_cmd.cc
void AddGateCommands(CLI::App& app, int* exit_code);       // harness/cli/gate_cmd.cc
void AddDoctorCommands(CLI::App& app, int* exit_code);     // harness/cli/doctor_cmd.cc
void AddInventoryCommands(CLI::App& app, int* exit_code);  // harness/cli/inventory_cmd.cc
void AddServeCommands(CLI::App& app, int* exit_code);      // harness/cli/serve_cmd.cc

// Command modules: each lives in harness/cli/<name>_cmd.cc and adds its subcommands to the
// app; a subcommand's callback stores the process exit code in *exit_code.
//   void AddLabCommands(CLI::App& app, int* exit_code);   // harness/cli/lab_cmd.cc

bool ParseKeyValues(const char* cmd, const char* flag, const std::vector<std::string>& in,
                    std::map<std::string, std::string>* out) {
  for (const auto& t : in) {
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "faultline %s: %s wants key=value, got '%s'\n", cmd, flag, t.c_str());
      return false;
    }
    (*out)[t.substr(0, eq)] = t.substr(eq + 1);
  }
  return true;
}

std::string DefaultDb() {
  const char* env = std::getenv("FAULTLINE_DB");
  return env != nullptr && *env != '\0' ? env : "results.db";
}

void AddDbOption(CLI::App* command, std::string* db) {
  *db = DefaultDb();
  command
      ->add_option("--db", *db,
                   "results database: a SQLite file, or a PostgreSQL server shared by many\n"
                   "coordinators as postgresql://[user[:password]@]host[:port]/dbname\n"
                   "(default: $FAULTLINE_DB, else results.db)")
      ->capture_default_str();
}

int ErrorExit(const char* cmd, const Status& st) {
  std::fprintf(stderr, "faultline %s: %s\n", cmd, st.ToUserString().c_str());
  return st.code() == Code::kInvalidArgument || st.code() == Code::kNotFound ? 2 : 3;
}

StatusOr<Nanos> ParseDurationFlag(const char* flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Status(d.status()).Prepend(flag);
  return *d;
}

std::optional<std::string> OptionalFlag(const std::string& value) {
  if (value.empty()) return std::nullopt;
  return value;
}

void QuietLogsUnlessAsked() {
  // A constant spec that always parses.
  if (!std::getenv("FAULTLINE_LOG")) log::Configure("warn").IgnoreError();
}

int RunCli(int argc, char** argv) {
  log::ConfigureFromEnv();
  CLI::App app{
      "faultline: fault-injection and resilience test harness for GPU training clusters.\n"
      "Drives a multi-node job running a collective library while injectors flap NICs, take\n"
      "ToR links down, trigger PFC storms and kill containers; records recovery latency,\n"
      "throughput loss and correctness, and turns them into verdicts and reports.\n\n"
      "Exit codes: 0 pass, 1 an expectation failed, 2 bad input, 3 infrastructure error.\n"
      "Logging: FAULTLINE_LOG=info (or e.g. warn,lab=debug)."};
  app.require_subcommand(1);
  int exit_code = 0;
  const std::string version = VersionLine("faultline");
  app.set_version_flag("--version", version, "print the version and git revision, and exit");
  app.add_subcommand("version", "print the version and git revision, and exit")
      ->callback([version] { std::printf("%s\n", version.c_str()); });
  AddRunCommands(app, &exit_code);
  AddLabCommands(app, &exit_code);
  AddReportCommands(app, &exit_code);
  AddSuiteCommands(app, &exit_code);
  AddCertsCommands(app, &exit_code);
  AddPluginCommands(app, &exit_code);
  AddStoreCommands(app, &exit_code);
  AddProjectCommands(app, &exit_code);
  AddSweepCommands(app, &exit_code);
  AddScoreCommands(app, &exit_code);
  AddAlertsCommands(app, &exit_code);
  AddGateCommands(app, &exit_code);
  AddDoctorCommands(app, &exit_code);
  AddInventoryCommands(app, &exit_code);
  AddServeCommands(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace fl::harness
