#include "injectors/tc_nft.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/json_util.h"
#include "injectors/sys.h"

namespace fl::injectors {
namespace {
constexpr Nanos kToolTimeout = 5 * kNsPerSec;
CommandOptions In(const std::string& netns, std::string stdin_data = "") {
  CommandOptions o;
  o.netns = netns;
  o.stdin_data = std::move(stdin_data);
  o.timeout = kToolTimeout;
  return o;
}
}  // namespace

StatusOr<RootQdisc> ReadRootQdisc(const std::string& netns, const std::string& ifname) {
  FL_ASSIGN_OR_RETURN(std::string out,
                      RunChecked({"tc", "-j", "qdisc", "show", "dev", ifname}, In(netns)));
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_array()) return InternalError("tc -j qdisc show " + ifname + ": unexpected output");
  RootQdisc q;
  // tc's output is read without trusting its shape: a member of an unexpected type reads as
  // absent, never as an exception.
  for (const auto& e : j) {
    if (!JsonGetOr<bool>(e, "root", false, "tc").value_or(false)) continue;
    q.kind = JsonGetOr<std::string>(e, "kind", "", "tc").value_or(std::string());
    q.handle = JsonGetOr<std::string>(e, "handle", "", "tc").value_or(std::string());
    if (q.kind == "tbf") {
      nlohmann::json o = JsonGetOr<nlohmann::json>(e, "options", nullptr, "tc").value_or(nullptr);
      q.rate_bps = JsonGetOr<uint64_t>(o, "rate", 0, "tc").value_or(0) * 8;
      q.burst_bytes = JsonGetOr<uint64_t>(o, "burst", 0, "tc").value_or(0);
      q.latency_us = JsonGetOr<uint64_t>(o, "lat", 0, "tc").value_or(0);
    }
  }
  return q;
}

bool IsDefaultRoot(const RootQdisc& q) { return q.kind.empty() || q.handle == "0:"; }

bool IsRestorableRoot(const RootQdisc& q) { return IsDefaultRoot(q) || q.kind == "tbf"; }

bool SameRoot(const RootQdisc& a, const RootQdisc& b) {
  if (IsDefaultRoot(a) || IsDefaultRoot(b)) return IsDefaultRoot(a) && IsDefaultRoot(b);
  auto near = [](uint64_t x, uint64_t y) {
    uint64_t tol = std::max(x, y) / 100 + 8;
    return (x > y ? x - y : y - x) <= tol;
  };
  return a.kind == b.kind && near(a.rate_bps, b.rate_bps) && near(a.burst_bytes, b.burst_bytes);
}

Status SetTbf(const std::string& netns, const std::string& ifname, uint64_t rate_bps,
              uint64_t burst_bytes, uint64_t limit_bytes, uint64_t latency_us) {
  std::vector<std::string> argv = {"tc",
                                   "qdisc",
                                   "replace",
                                   "dev",
                                   ifname,
                                   "root",
                                   "tbf",
                                   "rate",
                                   std::to_string(rate_bps) + "bit",
                                   "burst",
                                   std::to_string(burst_bytes)};
  if (limit_bytes) {
    argv.insert(argv.end(), {"limit", std::to_string(limit_bytes)});
  } else {
    argv.insert(argv.end(),
                {"latency", latency_us ? std::to_string(latency_us) + "us" : std::string("50ms")});
  }
  return RunChecked(argv, In(netns)).status();
}

Status RestoreRootQdisc(const std::string& netns, const std::string& ifname, const RootQdisc& q) {
  if (!IsRestorableRoot(q))
    return FailedPreconditionError(ifname + ": cannot restore a root qdisc " + q.kind);
  if (!IsDefaultRoot(q)) return SetTbf(netns, ifname, q.rate_bps, q.burst_bytes, 0, q.latency_us);
  FL_ASSIGN_OR_RETURN(RootQdisc now, ReadRootQdisc(netns, ifname));
  if (IsDefaultRoot(now)) return OkStatus();  // already the default
  return RunChecked({"tc", "qdisc", "del", "dev", ifname, "root"}, In(netns)).status();
}

Status NftApply(const std::string& netns, const std::string& ruleset) {
  return RunChecked({"nft", "-f", "-"}, In(netns, ruleset)).status();
}

StatusOr<bool> NftTableExists(const std::string& netns, const std::string& family,
                              const std::string& table) {
  FL_ASSIGN_OR_RETURN(std::string out, RunChecked({"nft", "list", "tables", family}, In(netns)));
  return out.find("table " + family + " " + table + "\n") != std::string::npos;
}

Status NftDeleteTable(const std::string& netns, const std::string& family,
                      const std::string& table) {
  if (!netns.empty() && !NetnsExists(netns)) return OkStatus();
  FL_ASSIGN_OR_RETURN(bool exists, NftTableExists(netns, family, table));
  if (!exists) return OkStatus();
  return RunChecked({"nft", "delete", "table", family, table}, In(netns)).status();
}

}  // namespace fl::injectors
