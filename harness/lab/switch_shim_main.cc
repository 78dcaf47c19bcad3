// faultline-switch-shim: the ForceCommand of a local-lab switch's sshd (switch_shim.h).
//   faultline-switch-shim --switch NAME --state FILE       (the command: SSH_ORIGINAL_COMMAND)
// Kept light: no gRPC, no Asio; only the lab's switch state file, rtnetlink and nft.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/main_guard.h"
#include "harness/lab/switch_shim.h"

namespace {

int ShimMain(int argc, char** argv) {
  std::string name, state;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--switch") == 0 && i + 1 < argc) {
      name = argv[++i];
    } else if (std::strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
      state = argv[++i];
    } else {
      std::fprintf(stderr, "Error: usage: faultline-switch-shim --switch NAME --state FILE\n");
      return 1;
    }
  }
  if (name.empty() || state.empty() || state[0] != '/') {
    std::fprintf(stderr, "Error: usage: faultline-switch-shim --switch NAME --state /ABS/FILE\n");
    return 1;
  }
  const char* cmd = std::getenv("SSH_ORIGINAL_COMMAND");
  fl::lab::ShimResult r = fl::lab::RunShimCommand(name, state, cmd ? cmd : "");
  std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return fl::GuardedMain("faultline-switch-shim", [&] { return ShimMain(argc, argv); });
}
