// faultline-worker: one rank of a job. Runs a workload (allreduce_loop, training_step,
// moe_alltoall) over a CCL and streams per-iteration samples and CCL events to its agent.
#include <CLI/CLI.hpp>

#include "common/log.h"

int main(int argc, char** argv) {
  fl::log::ConfigureFromEnv();
  CLI::App app{"faultline-worker: one rank of a resilience job (started by faultline-agent)."};
  std::string workload = "allreduce_loop";
  app.add_option("--workload", workload, "allreduce_loop | training_step | moe_alltoall")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
