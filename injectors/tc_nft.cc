#include "injectors/tc_nft.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

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

namespace {

std::string Str(const nlohmann::json& j, std::string_view key) {
  return JsonGetOr<std::string>(j, key, "", "tc").value_or(std::string());
}

bool IsIngressKind(const std::string& kind) { return kind == "ingress" || kind == "clsact"; }

const QdiscNode* RootOf(const QdiscTree& t) {
  for (const auto& n : t.nodes)
    if (n.parent == "root") return &n;
  return nullptr;
}

// The major number of a handle or class id ("1:" and "1:3" -> "1"; ":3" and "0:" -> "", as tc
// prints the classes of a default root as ":3").
std::string Major(const std::string& id) {
  std::string m = id.substr(0, id.find(':'));
  return m == "0" ? "" : m;
}

// An unsigned JSON integer as a decimal string; false when v is not one.
bool UintText(const nlohmann::json& v, std::string* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) return false;
  *out = std::to_string(v.get<uint64_t>());
  return true;
}

// A time option: tc -j prints microseconds as a number (older versions a string such as "5ms").
bool TimeText(const nlohmann::json& v, std::string* out) {
  if (UintText(v, out)) {
    *out += "us";
    return true;
  }
  if (v.is_string() && IsSafeName(v.get<std::string>(), 32)) {
    *out = v.get<std::string>();
    return true;
  }
  return false;
}

// The tc arguments that recreate node's options (after "<kind>"), or FailedPrecondition naming
// what cannot be passed back.
StatusOr<std::vector<std::string>> OptionArgs(const QdiscNode& n, const std::string& ifname) {
  std::vector<std::string> args;
  auto refuse = [&](const std::string& why) {
    return FailedPreconditionError(ifname + ": qdisc " + n.kind + " " + n.handle + " (parent " +
                                   n.parent + ") " + why +
                                   ": a revert could not restore it exactly");
  };
  const nlohmann::json& o = n.options.is_object() ? n.options : nlohmann::json::object();
  // The option key, when set, passed back as `arg <text>`; `bad` says what a value text()
  // cannot read is.
  auto pass = [&](const char* key, const char* arg,
                  bool (*text)(const nlohmann::json&, std::string*), const char* bad) -> Status {
    auto it = o.find(key);
    if (it == o.end()) return OkStatus();
    std::string v;
    if (!text(*it, &v)) return refuse(std::string(bad) + key);
    args.insert(args.end(), {arg, v});
    return OkStatus();
  };
  auto number = [&](const char* key, const char* arg) {
    return pass(key, arg, UintText, "has a non-numeric ");
  };
  auto time = [&](const char* key) { return pass(key, key, TimeText, "has an unreadable "); };
  auto only = [&](std::initializer_list<std::string_view> keys) -> Status {
    for (const auto& [k, v] : o.items()) {
      bool known = false;
      for (auto key : keys) known = known || key == k;
      if (!known) return refuse("has option '" + k + "' faultline does not restore");
    }
    return OkStatus();
  };
  if (n.kind == "tbf") {
    FL_RETURN_IF_ERROR(only({"rate", "burst", "lat"}));
    std::string rate, burst, lat;
    if (!o.contains("rate") || !UintText(o["rate"], &rate) || !o.contains("burst") ||
        !UintText(o["burst"], &burst) || !o.contains("lat") || !UintText(o["lat"], &lat))
      return refuse("lacks a numeric rate, burst or lat");
    args = {"rate",    std::to_string(std::stoull(rate) * 8) + "bit", "burst", burst, "latency",
            lat + "us"};
  } else if (n.kind == "pfifo" || n.kind == "bfifo") {
    FL_RETURN_IF_ERROR(only({"limit"}));
    FL_RETURN_IF_ERROR(number("limit", "limit"));
  } else if (n.kind == "pfifo_fast") {
    // Not configurable through tc: its bands and priomap are always the kernel's.
    FL_RETURN_IF_ERROR(only({"bands", "priomap", "multiqueue"}));
  } else if (n.kind == "fq_codel") {
    FL_RETURN_IF_ERROR(only({"limit", "flows", "quantum", "target", "interval", "ce_threshold",
                             "memory_limit", "drop_batch", "ecn"}));
    FL_RETURN_IF_ERROR(number("limit", "limit"));
    FL_RETURN_IF_ERROR(number("flows", "flows"));
    FL_RETURN_IF_ERROR(number("quantum", "quantum"));
    FL_RETURN_IF_ERROR(time("target"));
    FL_RETURN_IF_ERROR(time("interval"));
    FL_RETURN_IF_ERROR(time("ce_threshold"));
    FL_RETURN_IF_ERROR(number("memory_limit", "memory_limit"));
    FL_RETURN_IF_ERROR(number("drop_batch", "drop_batch"));
    auto ecn = o.find("ecn");
    if (ecn != o.end()) {
      if (!ecn->is_boolean()) return refuse("has a non-boolean ecn");
      args.push_back(ecn->get<bool>() ? "ecn" : "noecn");
    }
  } else if (n.kind == "mq") {
    FL_RETURN_IF_ERROR(only({}));
  } else {
    return refuse("is of a kind faultline does not restore");
  }
  return args;
}

bool Near(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_number() || !b.is_number()) return a == b;
  double x = a.get<double>(), y = b.get<double>();
  double tol = std::max(std::abs(x), std::abs(y)) / 100 + 8;
  return std::abs(x - y) <= tol;
}

// The options without the counters tc -j prints among them (htb's direct_packets_stat: the
// packets that went through the root unclassified), which change with traffic, not config.
nlohmann::json ConfigOptions(const nlohmann::json& options) {
  if (!options.is_object()) return options;
  nlohmann::json o = options;
  o.erase("direct_packets_stat");
  return o;
}

bool SameOptions(const QdiscNode& a, const QdiscNode& b) {
  if (a.kind != "tbf") return ConfigOptions(a.options) == ConfigOptions(b.options);
  // tc reports tbf's rate, burst and latency recomputed from kernel ticks.
  if (!a.options.is_object() || !b.options.is_object()) return a.options == b.options;
  if (a.options.size() != b.options.size()) return false;
  for (const auto& [k, v] : a.options.items()) {
    auto it = b.options.find(k);
    if (it == b.options.end() || !Near(v, *it)) return false;
  }
  return true;
}

std::string Describe(const QdiscNode& n) {
  return n.kind + " " + n.handle + " " + (n.parent == "root" ? "root" : "parent " + n.parent) +
         (n.options.is_object() && !n.options.empty() ? " " + n.options.dump() : "");
}

}  // namespace

StatusOr<QdiscTree> ParseQdiscTree(std::string_view tc_json, const std::string& ifname) {
  auto parsed = ParseJson(tc_json, "tc -j qdisc show dev " + ifname);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  if (!j.is_array())
    return InvalidArgumentError("tc -j qdisc show dev " + ifname + ": not a JSON array");
  QdiscTree t;
  for (const auto& e : j) {
    QdiscNode n;
    n.kind = Str(e, "kind");
    n.handle = Str(e, "handle");
    if (IsIngressKind(n.kind)) continue;
    n.parent = JsonGetOr<bool>(e, "root", false, "tc").value_or(false) ? "root" : Str(e, "parent");
    n.options = JsonGetOr<nlohmann::json>(e, "options", nlohmann::json::object(), "tc")
                    .value_or(nlohmann::json::object());
    t.nodes.push_back(std::move(n));
  }
  std::stable_sort(t.nodes.begin(), t.nodes.end(), [](const QdiscNode& a, const QdiscNode& b) {
    bool ra = a.parent == "root", rb = b.parent == "root";
    if (ra != rb) return ra;
    return a.parent != b.parent ? a.parent < b.parent : a.handle < b.handle;
  });
  return t;
}

StatusOr<QdiscTree> ReadQdiscTree(const std::string& netns, const std::string& ifname) {
  FL_ASSIGN_OR_RETURN(std::string out,
                      RunChecked({"tc", "-j", "qdisc", "show", "dev", ifname}, In(netns)));
  auto t = ParseQdiscTree(out, ifname);
  if (!t.ok()) return InternalError(t.status().message());
  return t;
}

bool IsDefaultTree(const QdiscTree& t) {
  for (const auto& n : t.nodes)
    if (n.handle != "0:" && !n.handle.empty()) return false;
  return true;
}

Status CheckRestorableTree(const QdiscTree& t, const std::string& ifname) {
  return RestoreTreeCommands(ifname, t).status();
}

StatusOr<std::vector<std::vector<std::string>>> RestoreTreeCommands(const std::string& ifname,
                                                                    const QdiscTree& prior) {
  std::vector<std::vector<std::string>> cmds;
  if (IsDefaultTree(prior)) return cmds;
  const QdiscNode* root = RootOf(prior);
  auto refuse = [&](const QdiscNode& n, const std::string& why) {
    return FailedPreconditionError(ifname + ": qdisc " + n.kind + " " + n.handle + " (parent " +
                                   n.parent + ") " + why +
                                   ": a revert could not restore it exactly");
  };
  if (!root) return refuse(prior.nodes.front(), "hangs under no root qdisc listed");
  bool root_default = root->handle == "0:" || root->handle.empty();
  if (root_default) {
    // A kernel-default root whose children were configured: only under a default mq, where the
    // kernel re-creates the per-queue classes when the root comes back.
    if (root->kind != "mq") return refuse(*root, "has configured children under a default root");
  } else {
    FL_ASSIGN_OR_RETURN(auto args, OptionArgs(*root, ifname));
    std::vector<std::string> c = {"tc",   "qdisc",  "replace",    "dev",     ifname,
                                  "root", "handle", root->handle, root->kind};
    c.insert(c.end(), args.begin(), args.end());
    cmds.push_back(std::move(c));
  }
  for (const auto& n : prior.nodes) {
    if (&n == root) continue;
    if (root->kind != "mq") return refuse(n, "is a child of " + root->kind);
    if (n.parent.find(':') == std::string::npos || Major(n.parent) != Major(root->handle))
      return refuse(n, "is not a per-queue child of the mq root");
    if (n.kind == "mq") return refuse(n, "nests an mq");
    if (n.handle == "0:" || n.handle.empty()) {
      // A kernel-default child: attached again with the root. Only its kind is known.
      continue;
    }
    FL_ASSIGN_OR_RETURN(auto args, OptionArgs(n, ifname));
    std::vector<std::string> c = {"tc",     "qdisc",  "replace", "dev",    ifname,
                                  "parent", n.parent, "handle",  n.handle, n.kind};
    c.insert(c.end(), args.begin(), args.end());
    cmds.push_back(std::move(c));
  }
  return cmds;
}

Status RestoreQdiscTree(const std::string& netns, const std::string& ifname,
                        const QdiscTree& prior) {
  FL_ASSIGN_OR_RETURN(auto cmds, RestoreTreeCommands(ifname, prior));
  FL_ASSIGN_OR_RETURN(QdiscTree now, ReadQdiscTree(netns, ifname));
  if (SameTree(prior, now)) return OkStatus();  // already back (a second revert)
  const QdiscNode* root = RootOf(now);
  if (root && root->handle != "0:" && !root->handle.empty())
    FL_RETURN_IF_ERROR(
        RunChecked({"tc", "qdisc", "del", "dev", ifname, "root"}, In(netns)).status());
  for (const auto& c : cmds) FL_RETURN_IF_ERROR(RunChecked(c, In(netns)).status());
  return OkStatus();
}

bool SameTree(const QdiscTree& a, const QdiscTree& b, std::string* why) {
  auto differ = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (a.nodes.empty() || b.nodes.empty()) {
    if (IsDefaultTree(a) && IsDefaultTree(b)) return true;
    return differ("the default tree, against " + DescribeTree(a.nodes.empty() ? b : a));
  }
  if (a.nodes.size() != b.nodes.size())
    return differ(std::to_string(a.nodes.size()) + " qdiscs against " +
                  std::to_string(b.nodes.size()) + ": " + DescribeTree(a) + " | " +
                  DescribeTree(b));
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const QdiscNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.kind != y.kind || x.handle != y.handle || x.parent != y.parent || !SameOptions(x, y))
      return differ(Describe(x) + " against " + Describe(y));
  }
  return true;
}

std::string DescribeTree(const QdiscTree& t) {
  if (t.nodes.empty()) return "(default)";
  std::string s;
  for (const auto& n : t.nodes) s += (s.empty() ? "" : "; ") + Describe(n);
  return s;
}

nlohmann::json TreeToJson(const QdiscTree& t) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& n : t.nodes)
    a.push_back(
        {{"kind", n.kind}, {"handle", n.handle}, {"parent", n.parent}, {"options", n.options}});
  return a;
}

QdiscTree TreeFromJson(const nlohmann::json& j) {
  QdiscTree t;
  if (!j.is_array()) return t;
  for (const auto& e : j) {
    QdiscNode n;
    n.kind = Str(e, "kind");
    n.handle = Str(e, "handle");
    n.parent = Str(e, "parent");
    n.options = JsonGetOr<nlohmann::json>(e, "options", nlohmann::json::object(), "tc")
                    .value_or(nlohmann::json::object());
    t.nodes.push_back(std::move(n));
  }
  return t;
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
