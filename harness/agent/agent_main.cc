// faultline-agent: runs on every lab host, dials in to the coordinator, starts ranks, applies
// and reverts faults under leases, and relays telemetry.
#include <CLI/CLI.hpp>

#include "common/log.h"

int main(int argc, char** argv) {
  fl::log::ConfigureFromEnv();
  CLI::App app{
      "faultline-agent: the per-host side of faultline. Dials in to the coordinator over gRPC,\n"
      "starts ranks in containers, applies and reverts faults under leases (and reverts on its\n"
      "own when the coordinator goes away), and relays worker telemetry."};
  std::string coordinator, token_file, host;
  app.add_option("--coordinator", coordinator, "coordinator address host:port");
  app.add_option("--token-file", token_file, "file holding the shared authentication token");
  app.add_option("--host", host, "the topology host name this agent serves");
  CLI11_PARSE(app, argc, argv);
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
