// ftccl-perf: an nccl-tests-style collective benchmark with a correctness check.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "ccl_under_test/ftccl/device_info.h"
#include "common/log.h"

int main(int argc, char** argv) {
  fl::log::ConfigureFromEnv();
  CLI::App app{
      "ftccl-perf: collective benchmark with correctness check (nccl-tests style).\n"
      "Prints size, time, algbw, busbw and #wrong per message size."};
  bool devices = false;
  app.add_flag("--devices", devices, "list the CUDA and RDMA devices this build can use, then exit");
  CLI11_PARSE(app, argc, argv);
  if (devices) {
    std::fputs(fl::ccl::ftccl::DescribeDevices().c_str(), stdout);
    return 0;
  }
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
