// What `faultline run` and `faultline replay` are asked to do (harness/cli/run_cmd.cc fills it;
// RunScenario and DescribeRunPlan in run_driver.h take it). Plain data.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"

namespace fl::harness {

struct RunOptions {
  std::string scenario_path;
  std::string db_path = "results.db";
  std::optional<uint64_t> seed;
  std::map<std::string, std::string> tags;
  bool json = false;
  std::string replay_of;    // run id this replays (its scenario text and seed are used)
  std::string bin_dir;      // where faultline-agent and faultline-worker are; empty: beside us
  std::string policy_path;  // policy for agents the lab starts; empty: the lab's default
  Nanos lease_ns = 3 * kNsPerSec;
  bool dry_run = false;  // validate and print the plan; provision nothing, store nothing
  // The run directory (StateDir()/runs/<id>) is removed when the run ends; with this, a
  // failed run's is kept (its token is removed all the same).
  bool keep_run_dir = false;
  // Overrides of the scenario's job.ccl and job.ccl_options (recorded as tags ccl=NAME and
  // ccl.KEY=VALUE; a replay applies the stored run's ones unless given again).
  std::string ccl;
  std::map<std::string, std::string> ccl_options;
  // The lab to run on (a topology, or a file of real hosts), instead of the scenario's `lab:`.
  // A replay without it reuses the stored run's lab file text.
  std::string lab_file;
  // A local lab already up to run on (Lab::UseRunningLab): checked before, left up after.
  std::string on_lab;
  // HOST:PORT to serve the run's live metrics on while it runs (live_metrics.h); empty: none.
  std::string metrics_listen;
  // Labs of real hosts speak mutual TLS with the certificates in tls_dir (default: tls/ beside
  // the lab's token file; docs/control_plane.md); no_tls: token only.
  std::string tls_dir;
  bool no_tls = false;
};

}  // namespace fl::harness
