#include "ccl_under_test/ftccl/ftccl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/ftccl_comm.h"
#include "ccl_under_test/ftccl/ftccl_plugin.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "ccl_under_test/ftccl/transport/tcp/tcp_transport.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {
namespace {

// "ip:port" -> "ip", sorted.
std::vector<std::string> NicIps(std::vector<std::string> addrs) {
  for (auto& a : addrs) a = a.substr(0, a.rfind(':'));
  std::sort(addrs.begin(), addrs.end());
  return addrs;
}

}  // namespace

HostLayout MakeHostLayout(const std::vector<std::string>& ids,
                          const std::vector<std::vector<std::string>>& nics) {
  HostLayout l;
  std::vector<std::string> order;
  for (const std::string& id : ids) {
    if (id.empty()) return {};
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  }
  l.ranks.resize(order.size());
  l.host_of.resize(ids.size());
  l.local_of.resize(ids.size());
  for (size_t r = 0; r < ids.size(); ++r) {
    const int h = static_cast<int>(std::find(order.begin(), order.end(), ids[r]) - order.begin());
    l.host_of[r] = h;
    l.local_of[r] = static_cast<int>(l.ranks[h].size());
    l.ranks[h].push_back(static_cast<int>(r));
  }
  for (const auto& host : l.ranks) {
    if (host.size() != l.ranks[0].size()) return {};
  }
  l.hosts = static_cast<int>(l.ranks.size());
  l.local = l.hosts ? static_cast<int>(l.ranks[0].size()) : 0;
  l.shared_nics = true;
  for (const auto& host : l.ranks) {
    for (int r : host) l.shared_nics &= NicIps(nics[r]) == NicIps(nics[host[0]]);
  }
  return l;
}

std::optional<EngineStats> GetStats(const Communicator& comm) {
  auto* f = dynamic_cast<const FtcclCommunicator*>(&comm);
  if (!f) return std::nullopt;
  return f->stats();
}

FtcclOptions FtcclOptionsFrom(const OptionValues& v, FtcclOptions o) {
  EngineOptions& e = o.engine;
  e.chunk_bytes = v.Bytes("chunk_bytes").value_or(e.chunk_bytes);
  e.window_bytes = v.Bytes("window_bytes").value_or(e.window_bytes);
  e.channels_per_nic = static_cast<int>(v.Int("channels_per_nic").value_or(e.channels_per_nic));
  e.keepalive_interval = v.Duration("keepalive_ms").value_or(e.keepalive_interval);
  e.dead_timeout = v.Duration("dead_timeout_ms").value_or(e.dead_timeout);
  e.peer_dead_timeout = v.Duration("peer_dead_ms").value_or(e.peer_dead_timeout);
  e.health.enabled = v.Bool("path_health").value_or(e.health.enabled);
  if (auto h = v.Text("host_id")) e.host_id = *h == "none" ? "" : *h;
  o.algorithm = v.Text("algorithm").value_or(o.algorithm);
  return o;
}

StatusOr<std::unique_ptr<Communicator>> CreateFtcclCommunicator(const CommConfig& config,
                                                                const FtcclOptions& options) {
  auto transport = options.transport;
  if (!transport) {
    transport::tcp::TcpOptions tcp;
    tcp.user_timeout = std::max<Nanos>(options.engine.dead_timeout * 4, kNsPerSec);
    transport = transport::tcp::CreateTcpTransport(tcp);
  }
  if (options.algorithm != "auto" && options.algorithm != "ring" && options.algorithm != "hier") {
    return InvalidArgumentError("ftccl: unknown algorithm '" + options.algorithm + "' (" +
                                kAlgorithms + ")");
  }
  FL_ASSIGN_OR_RETURN(auto engine,
                      Engine::Create(config, transport, options.engine, options.host_transport));
  return std::unique_ptr<Communicator>(
      std::make_unique<FtcclCommunicator>(std::move(engine), options.algorithm));
}

Status RegisterFtccl(CclRegistry& registry) {
  const CclPlugin& p = FtcclPlugin();
  return registry.Register(
      p.name,
      [](const CommConfig& config) {
        FtcclOptions base;
        base.engine.host_id = "auto";  // host-local channels and relay between ranks of one host
        return CreateFtcclCommunicator(config, FtcclOptionsFrom(config.options, base));
      },
      p.options);
}

}  // namespace fl::ccl::ftccl
