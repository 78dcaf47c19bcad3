#include "tests/harness/site_fixture.h"

#include "tests/test_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/file_util.h"
#include "common/json_util.h"
#include "common/process.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/lab/local_lab.h"
#include "harness/lab/topology.h"
#include "injectors/pfc.h"
#include "injectors/sys.h"
#include "tests/injectors/lab_testing.h"

namespace fl::testing {
namespace {

constexpr const char* kUnitDir = FL_SOURCE_DIR "/configs/systemd";

}  // namespace

namespace {

void RemoveTree(const std::string& path) {
  if (path.empty()) return;
  nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); },
      16, FTW_DEPTH | FTW_PHYS);
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The unit file shipped for the agent, when there is one.
std::string FindAgentUnit() {
  std::string found;
  if (DIR* d = opendir(kUnitDir)) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.find("faultline-agent") == 0 && n.size() > 8 &&
          n.compare(n.size() - 8, 8, ".service") == 0)
        found = std::string(kUnitDir) + "/" + n;
    }
    closedir(d);
  }
  return found;
}

// tool's JSON output in netns; null on any failure (the caller records what failed).
StatusOr<nlohmann::json> ToolJson(const std::vector<std::string>& argv, const std::string& netns) {
  injectors::CommandOptions o;
  o.netns = netns;
  o.timeout = 10 * kNsPerSec;
  FL_ASSIGN_OR_RETURN(std::string out, injectors::RunChecked(argv, o));
  if (out.find_first_not_of(" \n\t") == std::string::npos) return nlohmann::json::array();
  return ParseJson(out, argv[0]);
}

std::string JsonString(const nlohmann::json& o, const char* key) {
  if (!o.is_object() || !o.contains(key)) return "";
  const auto& v = o[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// The base name of argv[0] of /proc/PID/cmdline ("" when gone), and the whole command line.
std::string ProcName(const std::string& pid, std::string* cmdline) {
  auto cmd = ReadFile("/proc/" + pid + "/cmdline");
  if (!cmd.ok() || cmd->empty()) return "";
  *cmdline = *cmd;
  std::string argv0 = cmd->substr(0, cmd->find('\0'));
  return argv0.substr(argv0.rfind('/') == std::string::npos ? 0 : argv0.rfind('/') + 1);
}
int ParentOf(int pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return 0;
  size_t close_paren = stat->rfind(')');  // comm may hold spaces and parentheses
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(stat->substr(close_paren + 1));
  std::string state;
  int ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// A cgroup path component names our lab when one of its '-'-separated words is the name
// ("fl-<lab>", "inv-<name>-<host>").
bool NamesUs(const std::string& component, const std::string& name) {
  std::istringstream words(component);
  for (std::string w; std::getline(words, w, '-');)
    if (w == name) return true;
  return false;
}

void ListCgroups(const std::string& dir, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    std::string r = rel.empty() ? e->d_name : rel + "/" + e->d_name;
    out->push_back(r);
    ListCgroups(dir + "/" + e->d_name, r, out);
  }
  closedir(d);
}

NodeState ReadNode(const std::string& node, const std::string& netns, std::string journal_dir,
                   std::vector<std::string>* errors) {
  NodeState n;
  n.node = node;
  n.netns = netns;
  auto fail = [&](const std::string& what, const Status& s) {
    errors->push_back(node + ": " + what + ": " + s.ToString());
  };
  if (auto nft = ToolJson({"/usr/sbin/nft", "-j", "list", "tables"}, netns); nft.ok()) {
    if (nft->is_object() && nft->contains("nftables") && (*nft)["nftables"].is_array())
      for (const auto& e : (*nft)["nftables"])
        if (e.is_object() && e.contains("table"))
          n.nft_tables.push_back(JsonString(e["table"], "family") + " " +
                                 JsonString(e["table"], "name"));
  } else {
    fail("nft list tables", nft.status());
  }
  auto links = ToolJson({"/usr/sbin/ip", "-j", "link", "show"}, netns);
  if (!links.ok()) fail("ip link show", links.status());
  for (const auto& l : links.ok() && links->is_array() ? *links : nlohmann::json::array()) {
    LinkState ls;
    ls.ifname = JsonString(l, "ifname");
    if (ls.ifname.empty() || ls.ifname == "lo") continue;
    if (l.contains("flags") && l["flags"].is_array())
      for (const auto& f : l["flags"]) {
        if (f == "UP") ls.admin_up = true;
        if (f == "LOWER_UP") ls.carrier = true;
      }
    bool has_ingress = false, has_clsact = false;
    auto q = ToolJson({"/usr/sbin/tc", "-j", "qdisc", "show", "dev", ls.ifname}, netns);
    if (!q.ok()) fail("tc qdisc show dev " + ls.ifname, q.status());
    for (const auto& e : q.ok() && q->is_array() ? *q : nlohmann::json::array()) {
      QdiscState qs;
      qs.kind = JsonString(e, "kind");
      qs.handle = JsonString(e, "handle");
      qs.parent = e.contains("root") ? "root" : JsonString(e, "parent");
      if (qs.kind == "ingress" || qs.kind == "clsact") qs.parent = qs.kind;
      if (e.contains("options") && !e["options"].empty()) qs.options = e["options"].dump();
      has_ingress |= qs.kind == "ingress" || qs.kind == "clsact";
      has_clsact |= qs.kind == "clsact";
      ls.qdiscs.push_back(std::move(qs));
    }
    std::vector<std::string> hooks;
    if (has_ingress) hooks.push_back("ingress");
    if (has_clsact) hooks.push_back("egress");
    for (const auto& hook : hooks) {
      auto f = ToolJson({"/usr/sbin/tc", "-j", "filter", "show", "dev", ls.ifname, hook}, netns);
      if (!f.ok()) {
        fail("tc filter show dev " + ls.ifname + " " + hook, f.status());
        continue;
      }
      for (const auto& e : f->is_array() ? *f : nlohmann::json::array())
        ls.filters.push_back(hook + ": " + e.dump());
    }
    n.links.push_back(std::move(ls));
  }
  if (!journal_dir.empty())
    if (DIR* d = opendir(journal_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string f = e->d_name;
        if (f.find(".json") != std::string::npos) n.journal.push_back(f);
      }
      closedir(d);
      std::sort(n.journal.begin(), n.journal.end());
    }
  return n;
}

}  // namespace

std::vector<std::string> HostSideFaultKinds() {
  return {"nic_port_flap",      "link_blackhole", "packet_loss",
          "bandwidth_throttle", "pfc_storm",      "container_kill"};
}

// ---- snapshots

namespace {
// Where each qdisc sits in its tree, without the handles the kernel picks ("root",
// "root/1" for the first class of the root, "ingress"): a tree restored by deleting and adding
// qdiscs again is the same tree with new handles.
std::vector<std::string> QdiscPlaces(const std::vector<QdiscState>& qdiscs) {
  std::vector<std::string> place(qdiscs.size());
  std::map<std::string, std::string> by_major;  // "8001:" -> its place
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < qdiscs.size(); ++i) {
      if (!place[i].empty()) continue;
      const QdiscState& q = qdiscs[i];
      if (q.parent == "root" || q.parent == "ingress" || q.parent == "clsact") {
        place[i] = q.parent;
      } else if (size_t colon = q.parent.find(':'); colon != std::string::npos) {
        auto it = by_major.find(q.parent.substr(0, colon + 1));
        if (it == by_major.end()) continue;
        place[i] = it->second + "/" + q.parent.substr(colon + 1);
      } else {
        continue;
      }
      by_major[q.handle.substr(0, q.handle.find(':') + 1)] = place[i];
      progress = true;
    }
  }
  for (size_t i = 0; i < qdiscs.size(); ++i)
    if (place[i].empty()) place[i] = "parent " + qdiscs[i].parent;  // an orphan: say so
  return place;
}
}  // namespace

std::vector<std::string> HostSnapshot::Facts(bool exact_handles) const {
  std::vector<std::string> f;
  for (const auto& n : nodes) {
    for (const auto& t : n.nft_tables) f.push_back(n.node + ": nft table " + t);
    for (const auto& l : n.links) {
      const std::string p = n.node + " " + l.ifname + ": ";
      f.push_back(p + "link " + (l.admin_up ? "up" : "down") + ", carrier " +
                  (l.carrier ? "up" : "down"));
      const std::vector<std::string> places = QdiscPlaces(l.qdiscs);
      for (size_t i = 0; i < l.qdiscs.size(); ++i) {
        const QdiscState& q = l.qdiscs[i];
        f.push_back(p + "qdisc " + q.kind + " at " + places[i] +
                    (exact_handles ? " handle " + q.handle + " parent " + q.parent : "") +
                    (q.options.empty() ? "" : " " + q.options));
      }
      for (const auto& fl : l.filters) f.push_back(p + "filter " + fl);
    }
    for (const auto& j : n.journal) f.push_back(n.node + ": journal entry " + j);
  }
  for (const auto& c : cgroups) f.push_back("cgroup faultline/" + c);
  for (const auto& p : processes) f.push_back("process " + p);
  std::sort(f.begin(), f.end());
  return f;
}

namespace {
// a and b the same up to a relative difference of tolerance in each number.
bool CloseJson(const nlohmann::json& a, const nlohmann::json& b, double tolerance) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::abs(x - y) <= tolerance * std::max(std::abs(x), std::abs(y));
  }
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !CloseJson(it.value(), b[it.key()], tolerance)) return false;
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!CloseJson(a[i], b[i], tolerance)) return false;
    return true;
  }
  return a == b;
}
// "h0 nic1: qdisc tbf at root {...}" -> the part before the JSON, and the JSON ("" if none).
std::pair<std::string, std::string> SplitJson(const std::string& fact) {
  size_t at = fact.find(" {");
  if (at == std::string::npos) return {fact, ""};
  return {fact.substr(0, at), fact.substr(at + 1)};
}
}  // namespace

std::vector<std::string> Diff(const HostSnapshot& before, const HostSnapshot& after,
                              DiffOptions options) {
  std::vector<std::string> a = before.Facts(options.exact_handles),
                           b = after.Facts(options.exact_handles), added, gone, out;
  std::multiset<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  for (const auto& f : b)
    if (!sa.count(f)) added.push_back(f);
  for (const auto& f : a)
    if (!sb.count(f)) gone.push_back(f);
  if (options.tolerance > 0) {
    // A fact that only changed its numbers by less than the tolerance is no difference.
    for (auto p = added.begin(); p != added.end();) {
      auto split = SplitJson(*p);
      const std::string key = split.first, text = split.second;  // (clang 14: no captured bindings)
      auto pj = nlohmann::json::parse(text, nullptr, false);
      auto match = std::find_if(gone.begin(), gone.end(), [&](const std::string& g) {
        auto [gkey, gtext] = SplitJson(g);
        if (gkey != key || text.empty() || gtext.empty() || pj.is_discarded()) return false;
        auto gj = nlohmann::json::parse(gtext, nullptr, false);
        return !gj.is_discarded() && CloseJson(pj, gj, options.tolerance);
      });
      if (match == gone.end()) {
        ++p;
        continue;
      }
      gone.erase(match);
      p = added.erase(p);
    }
  }
  for (const auto& f : added) out.push_back("+ " + f);
  for (const auto& f : gone) out.push_back("- " + f);
  for (const auto& e : after.errors) out.push_back("! cannot read: " + e);
  return out;
}

namespace {

// Cgroups under <cgroup2>/faultline (relative) whose path names the lab.
std::vector<std::string> CgroupsNaming(const std::string& name, std::vector<std::string>* errors) {
  std::vector<std::string> out, all;
  auto root = injectors::Cgroup2Root();
  if (!root.ok()) {
    errors->push_back("cgroup2: " + root.status().ToString());
    return out;
  }
  ListCgroups(*root + "/faultline", "", &all);
  for (const auto& c : all) {
    std::istringstream parts(c);
    for (std::string comp; std::getline(parts, comp, '/');)
      if (NamesUs(comp, name)) {
        out.push_back(c);
        break;
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Our processes: faultline's programs that descend from this process or whose command line
// names a file under dir (agents that srun started: not our children), and any process that
// lives in one of the lab's cgroups (ranks whose agent died are reparented away from us; their
// cgroup stays). descendants: count those at all; dir empty: no command-line match.
std::vector<std::string> ProcessesOf(const std::string& name, bool descendants,
                                     const std::string& dir) {
  std::vector<std::string> out;
  const int self = getpid();
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string pid = e->d_name;
    std::string cmdline;
    const std::string prog = ProcName(pid, &cmdline);
    if (prog.empty()) continue;
    std::string why;
    const bool faultline_prog =
        prog == "faultline-agent" || prog == "faultline-worker" || prog == "ftccl-perf";
    if (descendants && faultline_prog)
      for (int p = ParentOf(std::atoi(pid.c_str())), hops = 0; p > 1 && hops < 64;
           p = ParentOf(p), ++hops)
        if (p == self) {
          why = "our descendant";
          break;
        }
    if (why.empty() && faultline_prog && !dir.empty() &&
        cmdline.find(dir + "/") != std::string::npos)
      why = "uses " + dir;
    std::string cg = ReadFile("/proc/" + pid + "/cgroup").value_or("");
    if (size_t at = cg.find("/faultline/"); why.empty() && at != std::string::npos) {
      std::string rel = cg.substr(at + 11, cg.find('\n', at) - at - 11);
      std::istringstream parts(rel);
      for (std::string comp; std::getline(parts, comp, '/');)
        if (NamesUs(comp, name)) {
          why = "in cgroup faultline/" + rel;
          break;
        }
    }
    if (!why.empty()) out.push_back(prog + " pid " + pid + " (" + why + ")");
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> RemainsOf(const std::string& name, const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& ns : injectors::ListNetns())
    if (ns.rfind("fl-" + name + "-", 0) == 0) out.push_back("netns " + ns);
  for (const auto& c : CgroupsNaming(name, &out)) out.push_back("cgroup faultline/" + c);
  for (const auto& p : ProcessesOf(name, false, dir)) out.push_back("process " + p);
  if (lab::LocalLab::Open(name).status().code() != Code::kNotFound)
    out.push_back("lab state file of " + name);
  return out;
}

std::string FormatDiff(const std::vector<std::string>& diff) {
  return diff.empty() ? "(no difference)" : Join(diff, "\n");
}

HostSnapshot InventoryFixture::Snapshot() const {
  HostSnapshot s;
  for (const auto& h : hosts_)
    s.nodes.push_back(ReadNode(h, netns_of(h), journal_dir(h), &s.errors));
  for (const auto& node : lab_->plan().nodes)
    if (node.is_switch) s.nodes.push_back(ReadNode(node.name, node.netns, "", &s.errors));
  s.cgroups = CgroupsNaming(name_, &s.errors);
  s.processes = ProcessesOf(name_, true, dir_);
  return s;
}

// ---- the systemd unit

StatusOr<std::vector<std::string>> UnitExecStart(std::string_view text) {
  // Join continuation lines, then find ExecStart= in [Service].
  std::string joined;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      joined += line + " ";
    } else {
      joined += line + "\n";
    }
  }
  std::istringstream lines(joined);
  for (std::string line; std::getline(lines, line);) {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line.compare(b, 10, "ExecStart=") != 0) continue;
    std::string cmd = line.substr(b + 10);
    std::vector<std::string> argv;
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (char c : cmd) {
      if (quote) {
        if (c == quote)
          quote = 0;
        else
          cur += c;
      } else if (c == '"' || c == '\'') {
        quote = c;
        in_word = true;
      } else if (c == ' ' || c == '\t') {
        if (in_word) argv.push_back(cur);
        cur.clear();
        in_word = false;
      } else {
        cur += c;
        in_word = true;
      }
    }
    if (in_word) argv.push_back(cur);
    if (argv.empty()) continue;
    size_t strip = argv[0].find_first_not_of("-@+!:");
    argv[0] = strip == std::string::npos ? "" : argv[0].substr(strip);
    if (argv[0].empty()) continue;
    return argv;
  }
  return NotFoundError("no ExecStart= in the unit");
}

std::vector<std::string> UnitCommandWith(
    const std::vector<std::string>& exec_start, const std::string& binary,
    const std::vector<std::pair<std::string, std::string>>& values) {
  auto value_of = [&](const std::string& flag) -> const std::string* {
    for (const auto& [f, v] : values)
      if (f == flag) return &v;
    return nullptr;
  };
  // Variables, specifiers and absolute paths are the site's (its /etc/faultline/...).
  auto site_specific = [](const std::string& v) {
    return v.find('$') != std::string::npos || v.find('%') != std::string::npos ||
           (!v.empty() && v[0] == '/');
  };
  std::vector<std::string> out = {binary};
  std::set<std::string> seen;
  for (size_t i = 1; i < exec_start.size(); ++i) {
    const std::string& a = exec_start[i];
    if (a.rfind("--", 0) != 0) continue;  // a stray positional: not the agent's
    std::string flag = a, val;
    bool has_val = false;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      val = a.substr(eq + 1);
      has_val = true;
    } else if (i + 1 < exec_start.size() && exec_start[i + 1].rfind("--", 0) != 0) {
      val = exec_start[++i];
      has_val = true;
    }
    if (const std::string* v = value_of(flag)) {
      out.push_back(flag);
      out.push_back(*v);
      seen.insert(flag);
    } else if (!has_val) {
      out.push_back(flag);
    } else if (!site_specific(val)) {
      out.push_back(flag);
      out.push_back(val);
    }
  }
  for (const auto& [f, v] : values)
    if (!seen.count(f)) {
      out.push_back(f);
      out.push_back(v);
    }
  return out;
}

// ---- the fixture

std::string InventoryYaml(const InventoryFixtureOptions& o, const std::string& name,
                          const std::string& listen, const std::string& token_file,
                          const std::vector<InventoryHostNics>& hosts,
                          const std::string& fabric_yaml) {
  std::string inv = "name: " + name + "\ncoordinator: {listen: " + listen +
                    ", token_file: " + token_file + "}\nagent_wait: " + o.agent_wait + "\n";
  if (o.slurm_launcher) inv += "launcher: slurm\n";
  inv += o.extra_inventory_yaml;
  inv += "hosts:\n";
  for (const auto& h : hosts) {
    inv += "  - name: " + h.host + "\n    ranks: " + std::to_string(o.ranks_per_host) +
           "\n    nics:\n";
    for (size_t i = 0; i < h.nics.size(); ++i) {
      const auto& [ifname, address] = h.nics[i];
      std::string wire;
      if (i < h.wiring.size() && !h.wiring[i].first.empty())
        wire = ", switch: " + h.wiring[i].first + ", port: " + h.wiring[i].second;
      inv += "      - {name: " + ifname + ", ifname: " + ifname + ", address: " + address + wire +
             o.extra_nic_yaml + "}\n";
    }
  }
  return inv + fabric_yaml;
}

StatusOr<std::unique_ptr<InventoryFixture>> InventoryFixture::Create(
    InventoryFixtureOptions options) {
  if (options.hosts < 1 || options.ranks_per_host < 1 || options.nics_per_host < 1)
    return InvalidArgumentError("InventoryFixture: hosts, ranks and NICs must be at least 1");
  std::unique_ptr<InventoryFixture> f(new InventoryFixture(std::move(options)));
  if (Status s = f->Build(); !s.ok()) return s;  // the destructor removes what was made
  return f;
}

InventoryFixture::InventoryFixture(InventoryFixtureOptions o) : opts_(std::move(o)) {}

Status InventoryFixture::Build() {
  char tmpl[] = "/tmp/fl_site_XXXXXX";
  if (!mkdtemp(tmpl)) return ErrnoStatus(errno, "mkdtemp");
  dir_ = tmpl;
  name_ = UniqueLabName();
  const std::string topo_text = "name: " + name_ + "\nhosts: " + std::to_string(opts_.hosts) +
                                "\ngpus_per_host: " + std::to_string(opts_.ranks_per_host) +
                                "\nnics_per_host: " + std::to_string(opts_.nics_per_host) +
                                "\nlink: " + opts_.link + "\n" + opts_.extra_topology_yaml +
                                (opts_.switches ? "switch_control: ssh\n" : "");
  FL_RETURN_IF_ERROR(WriteFileAtomic(dir_ + "/topology.yaml", topo_text));
  FL_ASSIGN_OR_RETURN(lab::Topology topo, lab::LoadTopology(dir_ + "/topology.yaml"));
  FL_ASSIGN_OR_RETURN(lab_, lab::LocalLab::Create(topo, name_));
  provisioned_ = true;  // Teardown also removes a half-built lab
  FL_RETURN_IF_ERROR(lab_->Provision());
  for (const auto& n : lab_->plan().nodes)
    if (!n.is_switch && n.name != "mgmt") hosts_.push_back(n.name);
  const std::string& root = lab_->plan().root_mgmt_addr;
  mgmt_addr_ = root.substr(0, root.find('/'));
  port_ = FreeTcpPort(mgmt_addr_);
  if (port_ <= 0) return UnavailableError("no free TCP port on " + mgmt_addr_);
  return WriteFiles();
}

Status InventoryFixture::WriteFiles() {
  token_path_ = dir_ + "/token";
  FL_RETURN_IF_ERROR(harness::CreateTokenFile(token_path_).status());
  // The lab's certificates where an inventory agent looks by default: tls/ beside the token.
  FL_RETURN_IF_ERROR(harness::InitLabCa(tls_dir()));
  harness::IssueOptions coord;
  coord.role = harness::CertRole::kCoordinator;
  coord.extra_names = {mgmt_addr_};
  FL_RETURN_IF_ERROR(harness::IssueCertificate(tls_dir(), "coord", coord).status());
  for (const auto& h : hosts_) {
    FL_RETURN_IF_ERROR(harness::IssueCertificate(tls_dir(), h, {}).status());
    FL_RETURN_IF_ERROR(MakeDirs(journal_dir(h), 0700));
    FL_RETURN_IF_ERROR(MakeDirs(state_dir(h), 0700));
  }
  policy_path_ = dir_ + "/policy.yaml";
  FL_RETURN_IF_ERROR(WriteFileAtomic(
      policy_path_, "allow_kinds: [" + Join(opts_.allow_kinds, ", ") +
                        "]\nmax_fault_duration: " + opts_.max_fault_duration + "\n"));
  std::vector<InventoryHostNics> hosts;
  for (const auto& h : hosts_) {
    hosts.push_back({h, {}});
    for (const auto& nic : nics_of(h)) {
      hosts.back().nics.emplace_back(nic, address_of(h, nic));
      if (!opts_.switches) continue;
      for (const auto& l : lab_->plan().links)
        if (l.kind == lab::LinkKind::kHost && l.a_node == h && l.a_if == nic)
          hosts.back().wiring.emplace_back(l.b_node, SwitchPortOf(l.b_node, l.b_if));
    }
  }
  std::string fabric_yaml;
  if (opts_.switches) {
    FL_ASSIGN_OR_RETURN(fabric_yaml, WriteFabricFiles());
  }
  const std::string inv = InventoryYaml(opts_, name_, listen(), token_path_, hosts, fabric_yaml);
  inventory_path_ = dir_ + "/inventory.yaml";
  return WriteFileAtomic(inventory_path_, inv);
}

std::string InventoryFixture::SwitchPortOf(const std::string& node,
                                           const std::string& ifname) const {
  return lab_->SonicPortName(node, ifname);
}

// The inventory's switches (reached as the lab's own switch namespaces are: their sshd on the
// management network, the lab's key and known_hosts, the shipped SONiC preset) and uplinks,
// the fabric agent's certificate, journal and policy.
StatusOr<std::string> InventoryFixture::WriteFabricFiles() {
  std::string sw = "fabric_agent: {host: root}\nswitches:\n";
  std::vector<std::string> names;
  for (const auto& n : lab_->plan().nodes) {
    if (!n.is_switch || n.name == "mgmt") continue;
    FL_ASSIGN_OR_RETURN(auto conn, lab_->SwitchConnOf(n.name));
    sw += "  - {name: " + n.name + ", address: " + conn->address +
          ", driver: ssh-template, preset: " + std::string(FL_SOURCE_DIR) +
          "/configs/switches/sonic.yaml, user: " + conn->user + ", key_file: " + conn->key_file +
          ", known_hosts: " + conn->known_hosts + "}\n";
    names.push_back(n.name);
  }
  std::string up;
  for (const auto& l : lab_->plan().links)
    if (l.kind == lab::LinkKind::kUplink)
      up += "  - {switch: " + l.a_node + ", port: " + SwitchPortOf(l.a_node, l.a_if) +
            ", peer_switch: " + l.b_node + ", peer_port: " + SwitchPortOf(l.b_node, l.b_if) + "}\n";
  if (!up.empty()) sw += "uplinks:\n" + up;
  harness::IssueOptions fabric;
  fabric.role = harness::CertRole::kFabricAgent;
  FL_RETURN_IF_ERROR(harness::IssueCertificate(tls_dir(), "fabric", fabric).status());
  FL_RETURN_IF_ERROR(MakeDirs(journal_dir("fabric"), 0700));
  FL_RETURN_IF_ERROR(MakeDirs(state_dir("fabric"), 0700));
  fabric_policy_path_ = dir_ + "/fabric_policy.yaml";
  FL_RETURN_IF_ERROR(WriteFileAtomic(fabric_policy_path_,
                                     "allow_kinds: [" + Join(opts_.fabric_allow_kinds, ", ") +
                                         "]\nmax_fault_duration: " + opts_.max_fault_duration +
                                         "\nswitch_ports: [" + Join(names, ", ") + "]\n"));
  return sw;
}

InventoryFixture::~InventoryFixture() {
  StopAgents().IgnoreError();
  if (lab_ && provisioned_) lab_->Teardown().IgnoreError();
  RemoveTree(dir_);
}

std::string InventoryFixture::netns_of(const std::string& host) const {
  return lab_->NetnsOf(host);
}

std::vector<std::string> InventoryFixture::nics_of(const std::string& host) const {
  std::vector<std::pair<int, std::string>> nics;
  for (const auto& l : lab_->plan().links)
    if (l.kind == lab::LinkKind::kHost && l.a_node == host) nics.emplace_back(l.rail, l.a_if);
  std::sort(nics.begin(), nics.end());
  std::vector<std::string> out;
  for (auto& [rail, ifname] : nics) out.push_back(ifname);
  return out;
}

std::string InventoryFixture::address_of(const std::string& host, const std::string& ifname) const {
  return lab_->AddressOf(host, ifname).value_or("");
}

StatusOr<LinkEnd> InventoryFixture::SwitchSideOf(const std::string& host,
                                                 const std::string& ifname) const {
  for (const auto& l : lab_->plan().links)
    if (l.kind == lab::LinkKind::kHost && l.a_node == host && l.a_if == ifname)
      return LinkEnd{l.b_netns, l.b_if};
  return NotFoundError("no host link " + host + "." + ifname + " in lab " + name_);
}

std::string InventoryFixture::journal_dir(const std::string& host) const {
  return dir_ + "/hosts/" + host + "/journal";
}
std::string InventoryFixture::state_dir(const std::string& host) const {
  return opts_.separate_state_dirs ? dir_ + "/hosts/" + host + "/state" : injectors::StateDir();
}

// ---- agents under supervision

std::vector<std::string> InventoryFixture::AgentArgv(const std::string& host) const {
  const std::string binary = opts_.agent_binary.empty()
                                 ? std::string(FL_BUILD_DIR) + "/bin/faultline-agent"
                                 : opts_.agent_binary;
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", opts_.connect_timeout_s);
  std::vector<std::pair<std::string, std::string>> values = {
      {"--coordinator", listen()},
      {"--token-file", token_path_},
      {"--host", host},
      {"--inventory", inventory_path_},
      {"--policy", host == "fabric" ? fabric_policy_path_ : policy_path_},
      {"--connect-timeout", timeout},
      {"--journal-dir", journal_dir(host)},
      {"--tls-dir", tls_dir()}};
  if (opts_.extra_agent_flags)
    for (auto& kv : opts_.extra_agent_flags(host)) values.push_back(std::move(kv));
  if (std::string unit = FindAgentUnit(); !unit.empty())
    if (auto text = ReadFile(unit); text.ok())
      if (auto exec = UnitExecStart(*text); exec.ok())
        return UnitCommandWith(*exec, binary, values);
  return UnitCommandWith({binary}, binary, values);
}

Status InventoryFixture::StartInstance(Agent* a) {
  const std::string log =
      dir_ + "/hosts/" + a->host + "/agent." + std::to_string(a->starts) + ".log";
  ProcessSpec spec;
  spec.argv = AgentArgv(a->host);
  std::vector<std::string> env = {"FAULTLINE_STATE_DIR=" + state_dir(a->host)};
  if (opts_.extra_agent_env)
    for (auto& e : opts_.extra_agent_env(a->host)) env.push_back(std::move(e));
  spec.env = CleanEnvironment(env);
  // The fabric agent runs on a management host: here the root namespace, which reaches the
  // switches' sshd on the lab's management network.
  spec.netns = a->host == "fabric" ? "" : netns_of(a->host);
  spec.in = {Stdio::kNull, ""};
  spec.out = {Stdio::kNull, ""};  // the agent logs to stderr; stdout only has --print-*
  spec.err = {Stdio::kFile, log};
  spec.new_session = true;  // as systemd starts a service
  a->logs.push_back(log);
  ++a->starts;
  FL_ASSIGN_OR_RETURN(Process p, Spawn(spec));
  a->pid = p.pid();
  return OkStatus();
}

Status InventoryFixture::StartAgent(const std::string& host) {
  if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end() &&
      !(host == "fabric" && opts_.switches))
    return NotFoundError("no host " + host + " in lab " + name_);
  std::lock_guard<std::mutex> lock(mu_);
  if (agents_.count(host)) return FailedPreconditionError(host + "'s agent is already supervised");
  Agent& a = agents_[host];
  a.host = host;
  if (Status s = StartInstance(&a); !s.ok()) {
    agents_.erase(host);
    return s;
  }
  if (!supervisor_.joinable()) {
    stop_.store(false);
    supervisor_ = std::thread([this] { Supervise(); });
  }
  return OkStatus();
}

Status InventoryFixture::StartAgents() {
  for (const auto& h : hosts_) FL_RETURN_IF_ERROR(StartAgent(h));
  if (opts_.switches) FL_RETURN_IF_ERROR(StartAgent("fabric"));
  return OkStatus();
}

void InventoryFixture::Supervise() {
  while (!stop_.load()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [host, a] : agents_) {
        if (a.pid > 0) {
          int st = 0;
          // Reaped here only, under mu_: a pid KillAgent signals is still ours.
          if (waitpid(a.pid, &st, WNOHANG) != a.pid) continue;
          a.exits.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
          a.pid = -1;
          a.restart_at = MonoNowNs() + opts_.restart_delay;
        } else if (MonoNowNs() >= a.restart_at) {
          // Restart=always; a failed start is tried again after the delay.
          if (!StartInstance(&a).ok()) a.restart_at = MonoNowNs() + opts_.restart_delay;
        }
      }
    }
    timespec ts{0, 10 * kNsPerMs};
    nanosleep(&ts, nullptr);
  }
}

Status InventoryFixture::KillAgent(const std::string& host, int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  const Agent* a = FindAgent(host);
  if (!a || a->pid <= 0) return FailedPreconditionError(host + ": no agent running");
  if (kill(a->pid, sig) != 0) return ErrnoStatus(errno, "kill " + std::to_string(a->pid));
  return OkStatus();
}

const InventoryFixture::Agent* InventoryFixture::FindAgent(const std::string& host) const {
  auto it = agents_.find(host);
  return it == agents_.end() ? nullptr : &it->second;
}

pid_t InventoryFixture::agent_pid(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Agent* a = FindAgent(host);
  return a ? a->pid : -1;
}
int InventoryFixture::agent_restarts(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Agent* a = FindAgent(host);
  return a ? std::max(0, a->starts - 1) : 0;
}
std::vector<int> InventoryFixture::agent_exits(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Agent* a = FindAgent(host);
  return a ? a->exits : std::vector<int>{};
}
std::vector<std::string> InventoryFixture::agent_logs(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Agent* a = FindAgent(host);
  return a ? a->logs : std::vector<std::string>{};
}
std::string InventoryFixture::AgentLogText(const std::string& host) const {
  std::string out;
  for (const auto& l : agent_logs(host))
    out += "--- " + l + "\n" + ReadFile(l).value_or("(unreadable)\n");
  return out;
}

bool InventoryFixture::WaitAgentRestarts(const std::string& host, int n, Deadline deadline) const {
  return WaitUntil([&] { return agent_restarts(host) >= n && agent_pid(host) > 0; }, deadline,
                   10 * kNsPerMs);
}

Status InventoryFixture::RestartAgent(const std::string& host, Deadline deadline) {
  // An instance that is running now (not one between a Shutdown and its restart), so that
  // the one after it starts after this call.
  for (;;) {
    if (deadline.Expired()) return DeadlineExceededError(host + "'s agent is not running");
    const int before = agent_restarts(host);
    if (agent_pid(host) > 0 && KillAgent(host, SIGTERM).ok()) {
      if (WaitAgentRestarts(host, before + 1, deadline)) return OkStatus();
      return DeadlineExceededError(host + "'s agent was not restarted");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status InventoryFixture::StopAgents() {
  stop_.store(true);
  if (supervisor_.joinable()) supervisor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [host, a] : agents_)
    if (a.pid > 0) kill(a.pid, SIGTERM);
  const Deadline grace = Deadline::After(opts_.stop_grace);
  std::vector<std::string> killed;
  for (auto& [host, a] : agents_) {
    if (a.pid <= 0) continue;
    auto st = WaitExit(a.pid, grace);
    if (!st.ok()) {
      killed.push_back(host);
      kill(a.pid, SIGKILL);
      st = WaitExit(a.pid, Deadline::After(10 * kNsPerSec));
    }
    if (st.ok()) {
      a.exits.push_back(st->Code());
      a.pid = -1;
    }
  }
  agents_.clear();
  if (!killed.empty())
    return DeadlineExceededError("agents of " + Join(killed, ", ") + " did not stop within " +
                                 std::to_string(opts_.stop_grace / kNsPerMs) +
                                 " ms of SIGTERM and were killed");
  return OkStatus();
}

// ---- PFC capture

PfcCapture::PfcCapture() = default;

StatusOr<std::unique_ptr<PfcCapture>> PfcCapture::Start(const std::string& netns,
                                                        const std::string& ifname) {
  std::unique_ptr<PfcCapture> c(new PfcCapture());
  FL_ASSIGN_OR_RETURN(c->capture_, injectors::PfcCapture::Open(netns, ifname));
  auto* raw = c.get();
  c->thread_ = std::thread([raw] {
    while (!raw->stop_.load()) {
      // Collect returns what arrived within the slice; a frame is counted once.
      auto frames = raw->capture_->Collect(SIZE_MAX, 50 * kNsPerMs);
      if (!frames.empty()) {
        raw->last_class_enable_.store(frames.back().class_enable);
        raw->count_.fetch_add(frames.size());
      }
    }
  });
  return c;
}

void PfcCapture::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

PfcCapture::~PfcCapture() { Stop(); }

bool PfcCapture::WaitCount(uint64_t n, Deadline deadline) const {
  return WaitUntil([&] { return count() >= n; }, deadline, 5 * kNsPerMs);
}

}  // namespace fl::testing
