#include "ccl_under_test/adapters/nccl/nccl_plugin.h"

#include <charconv>

namespace fl::ccl::adapters {
namespace {

constexpr int kDefaultIbTimeout = 20;
constexpr int kDefaultIbRetry = 7;

int EnvInt(const std::map<std::string, std::string>& env, const char* name, int fallback) {
  auto it = env.find(name);
  if (it == env.end()) return fallback;
  int v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < 0) return fallback;
  return v;
}

std::string ExactList(const std::vector<std::string>& names) {
  std::string s = "=";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
  return s;
}

std::map<std::string, std::string> DefaultEnv(const CclEnvContext& ctx) {
  std::map<std::string, std::string> env = {
      {"NCCL_IB_TIMEOUT", std::to_string(kDefaultIbTimeout)},
      {"NCCL_IB_RETRY_CNT", std::to_string(kDefaultIbRetry)},
  };
  if (!ctx.nic_names.empty()) env["NCCL_SOCKET_IFNAME"] = ExactList(ctx.nic_names);
  if (!ctx.rdma_devices.empty()) env["NCCL_IB_HCA"] = ExactList(ctx.rdma_devices);
  return env;
}

CclTimeouts Timeouts(const OptionValues&, const std::map<std::string, std::string>& env, bool) {
  const int t = EnvInt(env, "NCCL_IB_TIMEOUT", kDefaultIbTimeout);
  const int r = EnvInt(env, "NCCL_IB_RETRY_CNT", kDefaultIbRetry);
  const Nanos give_up = NcclIbGiveUp(t, r);
  const std::string name = "NCCL_IB_TIMEOUT=" + std::to_string(t) +
                           " x NCCL_IB_RETRY_CNT=" + std::to_string(r) + " (4.096us x 2^" +
                           std::to_string(t) + " x " + std::to_string(r) + ")";
  const std::vector<std::string> vars = {"NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT"};
  CclTimeouts out;
  out.timeouts.push_back({CclTimeout::Kind::kDetect, name, give_up, "", vars});
  out.timeouts.push_back({CclTimeout::Kind::kGiveUp, name, give_up, "", vars});
  out.routes_around_path_faults = false;
  return out;
}

}  // namespace

Nanos NcclIbGiveUp(int ib_timeout, int retry_cnt) {
  if (ib_timeout > 31) ib_timeout = 31;  // the verbs attribute has 5 bits
  const long double one = 4096.0L * static_cast<long double>(1ull << ib_timeout);  // ns
  return static_cast<Nanos>(one * (retry_cnt < 1 ? 1 : retry_cnt));
}

const CclPlugin& NcclPlugin() {
  static const CclPlugin* p = new CclPlugin{
      "nccl",
      "NVIDIA NCCL (GPU; libnccl loaded at run time): IB/RoCE retries, then fail-stop",
      OptionSchema("nccl", {}),
      DefaultEnv,
      Timeouts,
      /*may_shrink=*/true,  // with a libnccl that has ncclCommShrink (NCCL >= 2.27)
      /*nic_binding=*/NicBinding::kAllRails,
      /*needs_gpu=*/true,
      /*fails_over=*/false,  // IB retries, then fail-stop
  };
  return *p;
}

}  // namespace fl::ccl::adapters
