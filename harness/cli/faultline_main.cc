#include "common/main_guard.h"
#include "harness/cli/cli.h"

int main(int argc, char** argv) {
  return fl::GuardedMain("faultline", [&] { return fl::harness::RunCli(argc, argv); });
}
