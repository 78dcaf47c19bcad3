#include "harness/agent/fingerprint.h"

#include <dirent.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/rdma/verbs_devices.h"
#include "common/file_util.h"

namespace fl::harness {
namespace {

std::string ReadTrimmed(const std::string& path) {
  auto s = ReadFile(path);
  if (!s.ok()) return "";
  std::string v = *s;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}

void FillDriverInfo(const std::string& ifname, faultline::v1::NicInfo* nic) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  ethtool_drvinfo info;
  std::memset(&info, 0, sizeof info);
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
    nic->set_driver(info.driver);
    nic->set_firmware(info.fw_version);
  }
  close(fd);
}

}  // namespace

faultline::v1::Fingerprint CollectFingerprint() {
  faultline::v1::Fingerprint fp;
  utsname u;
  if (uname(&u) == 0) fp.set_kernel(std::string(u.sysname) + " " + u.release + " " + u.machine);
  if (DIR* d = opendir("/sys/class/net")) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name == "lo") continue;
      auto* nic = fp.add_nics();
      nic->set_name(name);
      nic->set_mac(ReadTrimmed("/sys/class/net/" + name + "/address"));
      std::string speed = ReadTrimmed("/sys/class/net/" + name + "/speed");
      if (!speed.empty() && speed[0] != '-') nic->set_speed_mbps(std::strtoull(speed.c_str(), nullptr, 10));
      FillDriverInfo(name, nic);
    }
    closedir(d);
  }
  for (const auto& r : ccl::ftccl::ListRdmaDevices()) fp.add_rdma_devices(r.name + " " + r.node_guid);
  for (const auto& g : ccl::ftccl::CudaDevices()) fp.add_gpus(g.name);
  fp.set_cuda_driver(ReadTrimmed("/sys/module/nvidia/version"));
  fp.set_ccl_build(std::string("ftccl 0.1.0") + (ccl::ftccl::CudaBuilt() ? " +cuda" : "") + " +verbs");
  return fp;
}

}  // namespace fl::harness
