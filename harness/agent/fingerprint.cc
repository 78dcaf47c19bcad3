#include "harness/agent/fingerprint.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/rdma/verbs_devices.h"
#include "common/file_util.h"
#include "common/process.h"
#include "harness/lab/lldp.h"
#include "injectors/sys.h"

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

// The kernel's view of the link through this namespace's socket (sysfs would show the
// namespace /sys was mounted in): "down" (not IFF_UP), "no-carrier" (up, no IFF_RUNNING), "up".
std::string OperState(const std::string& ifname) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  std::string state;
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
    state = !(ifr.ifr_flags & IFF_UP)       ? "down"
            : (ifr.ifr_flags & IFF_RUNNING) ? "up"
                                            : "no-carrier";
  close(fd);
  return state;
}

// IPv4 addresses per interface (getifaddrs asks this namespace's kernel over netlink).
std::map<std::string, std::vector<std::string>> Ipv4Addresses() {
  std::map<std::string, std::vector<std::string>> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN];
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) out[a->ifa_name].push_back(buf);
  }
  freeifaddrs(list);
  return out;
}

// The NUMA node in a device's sysfs folder; -1 when it has none (or says -1).
int NumaNode(const std::string& device_dir) {
  const std::string v = ReadTrimmed(device_dir + "/numa_node");
  if (v.empty()) return -1;
  try {
    return std::stoi(v);
  } catch (...) {
    return -1;
  }
}

// "0000:3b:00.0": domain:bus:device.function.
bool IsPciAddress(const std::string& s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != 4 && i != 7 && i != 10 && !std::isxdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

// The PCI address of a sysfs device folder: the deepest PCI function on its path (a virtio
// NIC's device is virtioN under its PCI function); empty when it is not on PCI.
std::string PciAddress(const std::string& device_link) {
  std::error_code ec;
  auto target = std::filesystem::canonical(device_link, ec);
  if (ec) return "";
  std::string pci;
  for (const auto& part : target)
    if (IsPciAddress(part.string())) pci = part.string();
  return pci;
}

// The physical facts of a NIC from sysfs, when /sys shows it (a NIC of the namespace /sys was
// mounted in: the host's own NICs on a real host; nothing for a lab's veths).
void FillPhysical(const std::string& ifname, faultline::v1::NicInfo* nic) {
  const std::string dev = "/sys/class/net/" + ifname + "/device";
  nic->set_numa_node(-1);
  std::error_code ec;
  if (!std::filesystem::exists(dev, ec)) return;
  nic->set_pci_address(PciAddress(dev));
  if (!nic->pci_address().empty())
    nic->set_numa_node(NumaNode("/sys/bus/pci/devices/" + nic->pci_address()));
}

// RDMA device and port per network interface: /sys/class/infiniband/DEV/ports/N/gid_attrs/
// ndevs/0 names the netdev of a RoCE port; DEV/device/net/IF that of an InfiniBand one.
std::map<std::string, std::pair<std::string, uint32_t>> RdmaPorts() {
  std::map<std::string, std::pair<std::string, uint32_t>> out;
  std::error_code ec;
  const std::filesystem::path root = "/sys/class/infiniband";
  if (!std::filesystem::exists(root, ec)) return out;
  for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
    const std::string dev = d.path().filename().string();
    std::error_code pec;
    for (const auto& p : std::filesystem::directory_iterator(d.path() / "ports", pec)) {
      uint32_t port = 0;
      try {
        port = static_cast<uint32_t>(std::stoul(p.path().filename().string()));
      } catch (...) {
        continue;
      }
      const std::string nd = ReadTrimmed((p.path() / "gid_attrs/ndevs/0").string());
      if (!nd.empty()) out.emplace(nd, std::make_pair(dev, port));
    }
    std::error_code nec;
    for (const auto& n : std::filesystem::directory_iterator(d.path() / "device/net", nec))
      out.emplace(n.path().filename().string(), std::make_pair(dev, 1u));
  }
  return out;
}

// The GPUs the nvidia driver has bound: PCI address, NUMA node, and the model its procfs names.
void FillGpus(faultline::v1::Fingerprint* fp) {
  std::error_code ec;
  const std::filesystem::path drv = "/sys/bus/pci/drivers/nvidia";
  if (!std::filesystem::exists(drv, ec)) return;
  std::vector<std::string> addrs;
  for (const auto& e : std::filesystem::directory_iterator(drv, ec)) {
    const std::string n = e.path().filename().string();
    if (IsPciAddress(n)) addrs.push_back(n);
  }
  std::sort(addrs.begin(), addrs.end());
  for (const auto& a : addrs) {
    auto* g = fp->add_gpu_devices();
    g->set_pci_address(a);
    g->set_numa_node(NumaNode((drv / a).string()));
    auto info = ReadFile("/proc/driver/nvidia/gpus/" + a + "/information");
    if (!info.ok()) continue;
    std::istringstream in(*info);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Model:", 0) != 0) continue;
      std::string m = line.substr(6);
      while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.erase(m.begin());
      g->set_name(m);
    }
  }
}

// Each NIC's LLDP neighbour from the lldpd of this host (or namespace), when one runs.
void FillLldp(const FingerprintOptions& options, faultline::v1::Fingerprint* fp) {
  const std::string socket =
      options.lldp_socket.empty() ? "/run/lldpd.socket" : options.lldp_socket;
  auto tool = ResolveTool("lldpcli");
  std::error_code ec;
  if (!tool.ok()) {
    fp->set_lldp_note("lldpcli is not installed (apt-get install lldpd)");
    return;
  }
  if (!std::filesystem::exists(socket, ec)) {
    fp->set_lldp_note("lldpd is not running (no " + socket + ")");
    return;
  }
  RunOptions ro;
  ro.timeout = 3 * kNsPerSec;
  auto r = Run({*tool, "-u", socket, "-f", "json", "show", "neighbors"}, ro);
  if (!r.ok() || r->exit_code != 0) {
    std::string why = r.ok() ? r->err : r.status().message();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    fp->set_lldp_note("lldpcli failed: " + why);
    return;
  }
  auto neighbors = lab::ParseLldpNeighbors(r->out);
  if (!neighbors.ok()) {
    fp->set_lldp_note(neighbors.status().message());
    return;
  }
  fp->set_lldp_read(true);
  for (auto& nic : *fp->mutable_nics())
    for (const auto& n : *neighbors)
      if (n.ifname == nic.name()) {
        nic.set_lldp_switch(n.chassis);
        nic.set_lldp_port(n.port);
      }
}

// What the injectors need of this host that it lacks: the tools they run, cgroup v2 (ranks'
// containers), AF_PACKET raw sockets (PFC frames).
void FillLacks(faultline::v1::Fingerprint* fp) {
  for (const char* tool : {"ip", "tc", "nft"})
    if (!ResolveTool(tool).ok()) fp->add_lacks(std::string(tool) + ": not installed");
  if (auto cg = injectors::Cgroup2Root(); !cg.ok())
    fp->add_lacks("cgroup v2: " + cg.status().message());
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0)
    fp->add_lacks(std::string("AF_PACKET: ") + std::strerror(errno));
  else
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

faultline::v1::Fingerprint CollectFingerprint(const FingerprintOptions& options) {
  faultline::v1::Fingerprint fp;
  utsname u;
  if (uname(&u) == 0) fp.set_kernel(std::string(u.sysname) + " " + u.release + " " + u.machine);
  // Interfaces of this process's network namespace (if_nameindex asks the kernel over
  // netlink; /sys/class/net would show the namespace /sys was mounted in).
  const auto addresses = Ipv4Addresses();
  const auto rdma = RdmaPorts();
  if (struct if_nameindex* ifs = if_nameindex()) {
    for (struct if_nameindex* i = ifs; i->if_index != 0; ++i) {
      std::string name = i->if_name;
      if (name == "lo") continue;
      auto* nic = fp.add_nics();
      nic->set_name(name);
      FillDriverInfo(name, nic);
      nic->set_oper_state(OperState(name));
      FillPhysical(name, nic);
      if (auto a = addresses.find(name); a != addresses.end())
        for (const auto& ip : a->second) nic->add_ipv4(ip);
      if (auto r = rdma.find(name); r != rdma.end()) {
        nic->set_rdma_device(r->second.first);
        nic->set_rdma_port(r->second.second);
      }
    }
    if_freenameindex(ifs);
  }
  FillLldp(options, &fp);
  FillGpus(&fp);
  FillLacks(&fp);
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
