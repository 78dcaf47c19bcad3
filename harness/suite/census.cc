#include "harness/suite/census.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "common/units.h"
#include "harness/coordinator/control_server.h"
#include "harness/coordinator/fan_out.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness::suite {
namespace {

namespace pb = faultline::v1;

// "ipv4:10.0.0.1:54321" -> "10.0.0.1"; "ipv6:[fd00::1]:80" -> "fd00::1".
std::string PeerIp(const std::string& peer) {
  std::string s = peer;
  if (auto c = s.find(':'); c != std::string::npos && s.rfind("ip", 0) == 0) s = s.substr(c + 1);
  if (!s.empty() && s[0] == '[') return s.substr(1, s.find(']') - 1);
  if (auto c = s.rfind(':'); c != std::string::npos) s = s.substr(0, c);
  return s;
}

lab::HostFacts FactsOf(const AgentInfo& info) {
  lab::HostFacts f;
  f.host = info.host;
  f.peer_ip = PeerIp(info.peer);
  f.agent_version = info.agent_version;
  const pb::Fingerprint& fp = info.fingerprint;
  for (const auto& n : fp.nics()) {
    lab::HostFacts::Nic nic;
    nic.ifname = n.name();
    nic.driver = n.driver();
    nic.firmware = n.firmware();
    nic.pci = n.pci_address();
    nic.mac = n.mac();
    nic.numa = n.numa_node();
    nic.speed_mbps = n.speed_mbps();
    nic.state = n.oper_state();
    nic.ipv4.assign(n.ipv4().begin(), n.ipv4().end());
    nic.rdma_device = n.rdma_device();
    nic.rdma_port = n.rdma_port();
    nic.lldp_switch = n.lldp_switch();
    nic.lldp_port = n.lldp_port();
    f.nics.push_back(std::move(nic));
  }
  for (const auto& g : fp.gpu_devices())
    f.gpus.push_back({g.pci_address(), g.numa_node(), g.name()});
  f.lldp_read = fp.lldp_read();
  f.lldp_note = fp.lldp_note();
  f.policy_source = fp.policy_source();
  f.policy_yaml = fp.policy_yaml();
  f.lacks.assign(fp.lacks().begin(), fp.lacks().end());
  return f;
}

}  // namespace

std::vector<lab::HostFacts> Census::SeenFacts() const {
  std::vector<lab::HostFacts> out;
  for (const auto& h : hosts)
    if (h.seen) out.push_back(h.facts);
  return out;
}

StatusOr<Census> TakeCensus(const CensusOptions& options) {
  auto say = [&](const std::string& line) {
    if (options.progress)
      options.progress(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  };
  ControlServerOptions so;
  so.listen_address = options.listen;
  so.token = options.token;
  so.run_id = "census-" + std::to_string(WallNowNs() / kNsPerSec);
  so.tls = options.tls;
  so.lease_ns = 10 * kNsPerSec;  // nothing is leased: the agents hold no fault
  const Nanos t0 = MonoNowNs();
  FL_ASSIGN_OR_RETURN(auto server, ControlServer::Start(so));
  say("[census] waiting up to " + FormatDuration(options.wait) + " for " +
      std::to_string(options.hosts.size()) + " agents to dial in at " + server->address());
  const Deadline end = Deadline::After(options.wait);
  size_t last = 0;
  while (!end.Expired()) {
    if (server->WaitForAgents(options.hosts, Deadline::After(200 * kNsPerMs)).ok()) break;
    size_t now = 0;
    for (const auto& h : options.hosts) now += server->Agent(h).ok() ? 1 : 0;
    if (now != last)
      say("[census] " + std::to_string(now) + " of " + std::to_string(options.hosts.size()) +
          " agents registered");
    last = now;
  }
  Census census;
  std::vector<std::string> seen;
  for (const auto& h : options.hosts) {
    CensusHost ch;
    ch.host = h;
    if (auto info = server->Agent(h); info.ok()) {
      ch.seen = true;
      ch.facts = FactsOf(*info);
      seen.push_back(h);
    } else {
      census.missing.push_back(h);
    }
    census.hosts.push_back(std::move(ch));
  }
  for (const auto& info : server->Agents()) {
    if (std::find(options.hosts.begin(), options.hosts.end(), info.host) != options.hosts.end())
      continue;
    CensusHost ch;
    ch.host = info.host;
    ch.seen = true;
    ch.facts = FactsOf(info);
    seen.push_back(info.host);
    census.hosts.push_back(std::move(ch));
  }
  // Clocks, then Shutdown (the agent's service starts it again for the next run).
  std::mutex mu;
  std::map<std::string, StatusOr<ClockOffset>> clocks;
  FanOut(
      seen, kFanOutWidth,
      [&](const std::string& host) -> Status {
        auto off = server->SyncClock(host, 5, Deadline::After(5 * kNsPerSec));
        pb::CoordinatorMessage m;
        m.mutable_shutdown()->set_reason("census over");
        Status st = server->Call(host, m, Deadline::After(5 * kNsPerSec)).status();
        std::lock_guard lock(mu);
        clocks.emplace(host, std::move(off));
        return st;
      },
      Deadline::After(12 * kNsPerSec));
  for (auto& ch : census.hosts) {
    auto it = clocks.find(ch.host);
    if (it == clocks.end()) continue;
    if (it->second.ok())
      ch.clock = *it->second;
    else
      ch.clock_error = it->second.status().message();
  }
  server->Shutdown();
  char took[32];
  std::snprintf(took, sizeof took, " in %.2f s", static_cast<double>(MonoNowNs() - t0) / 1e9);
  say("[census] " + std::to_string(seen.size()) + " agents answered" +
      (census.missing.empty() ? std::string()
                              : ", " + std::to_string(census.missing.size()) + " did not") +
      took);
  return census;
}

}  // namespace fl::harness::suite
