#include <csignal>

#include "common/main_guard.h"
#include "harness/cli/cli.h"

int main(int argc, char** argv) {
  // A closed terminal pipe (`faultline run ... | head`) must not kill a run before it reverts
  // its faults and tears its lab down: writes then fail with EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  return fl::GuardedMain("faultline", [&] { return fl::harness::RunCli(argc, argv); });
}
