#include "harness/agent/fingerprint.h"

#include <dlfcn.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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
  ethtool_cmd cmd;
  std::memset(&cmd, 0, sizeof cmd);
  cmd.cmd = ETHTOOL_GSET;
  ifr.ifr_data = reinterpret_cast<char*>(&cmd);
  if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
    uint32_t speed = ethtool_cmd_speed(&cmd);
    if (speed != 0 && speed != UINT32_MAX && speed != 65535) nic->set_speed_mbps(speed);
  }
  std::memset(&ifr, 0, sizeof ifr);
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) {
    char mac[20];
    auto* m = reinterpret_cast<unsigned char*>(ifr.ifr_hwaddr.sa_data);
    std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    nic->set_mac(mac);
  }
  close(fd);
}

}  // namespace

std::string NcclVersion() {
  const char* name = std::getenv("FL_NCCL_LIBRARY");
  void* h = dlopen(name && *name ? name : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) return "";                 // no NCCL on this host: not recorded
  using GetVersion = int (*)(int*);  // ncclResult_t ncclGetVersion(int*); 0 = ncclSuccess
  auto get = reinterpret_cast<GetVersion>(dlsym(h, "ncclGetVersion"));
  int code = 0;
  std::string out;
  if (get && get(&code) == 0 && code > 0) {
    // NCCL_VERSION_CODE: X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
    out = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
    if (dlsym(h, "ncclCommShrink")) out += " +shrink";
  }
  dlclose(h);
  return out;
}

faultline::v1::Fingerprint CollectFingerprint() {
  faultline::v1::Fingerprint fp;
  utsname u;
  if (uname(&u) == 0) fp.set_kernel(std::string(u.sysname) + " " + u.release + " " + u.machine);
  // Interfaces of this process's network namespace (if_nameindex asks the kernel over
  // netlink; /sys/class/net would show the namespace /sys was mounted in).
  if (struct if_nameindex* ifs = if_nameindex()) {
    for (struct if_nameindex* i = ifs; i->if_index != 0; ++i) {
      std::string name = i->if_name;
      if (name == "lo") continue;
      auto* nic = fp.add_nics();
      nic->set_name(name);
      FillDriverInfo(name, nic);
    }
    if_freenameindex(ifs);
  }
  for (const auto& r : ccl::ftccl::ListRdmaDevices())
    fp.add_rdma_devices(r.name + " " + r.node_guid);
  for (const auto& g : ccl::ftccl::CudaDevices()) fp.add_gpus(g.name);
  fp.set_cuda_driver(ReadTrimmed("/sys/module/nvidia/version"));
  fp.set_nccl_version(NcclVersion());
  fp.set_ccl_build(std::string("ftccl 0.1.0") + (ccl::ftccl::CudaBuilt() ? " +cuda" : "") +
                   " +verbs");
  return fp;
}

}  // namespace fl::harness
