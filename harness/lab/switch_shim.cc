#include "harness/lab/switch_shim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/unique_fd.h"
#include "injectors/netlink.h"
#include "injectors/sys.h"
#include "injectors/tc_nft.h"

namespace fl::lab {

StatusOr<std::vector<std::string>> TokenizeCommand(std::string_view line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  auto refuse = [&](size_t i, std::string_view why) {
    return InvalidArgumentError("character " + std::to_string(i + 1) + " ('" +
                                std::string(1, line[i]) + "'): " + std::string(why));
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos) return refuse(i, "unterminated single quote");
      cur.append(line.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
      continue;
    }
    if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            std::string_view("$`\"\\\n").find(line[j + 1]) != std::string_view::npos) {
          if (line[j + 1] != '\n') cur += line[j + 1];
          ++j;
          continue;
        }
        if (line[j] == '$' || line[j] == '`') return refuse(j, "expansion inside double quotes");
        cur += line[j];
      }
      if (j >= line.size()) return refuse(i, "unterminated double quote");
      in_word = true;
      i = j;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= line.size()) return refuse(i, "trailing backslash");
      if (line[i + 1] != '\n') cur += line[i + 1];  // backslash-newline: a continuation
      in_word = true;
      ++i;
      continue;
    }
    if (std::string_view(";|&$`<>()\n\r").find(c) != std::string_view::npos)
      return refuse(i, "shell metacharacters must be quoted");
    if (c == '#' && !in_word) return refuse(i, "a comment: '#' must be quoted");
    cur += c;
    in_word = true;
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

std::string ShimStateJson(const std::string& switch_name, const std::vector<ShimPort>& ports) {
  nlohmann::json j = {{"switch", switch_name}, {"ports", nlohmann::json::array()}};
  for (const auto& p : ports)
    j["ports"].push_back(
        {{"name", p.name}, {"ifname", p.ifname}, {"speed", p.speed}, {"mtu", p.mtu}});
  j["acl_tables"] = nlohmann::json::object();
  j["acl_rules"] = nlohmann::json::object();
  return j.dump(2) + "\n";
}

namespace {

constexpr Nanos kToolTimeout = 5 * kNsPerSec;

struct CliError {
  std::string message;
};

// A table as the right-aligned (SONiC "show interfaces") or left-aligned (tabulate "simple",
// as `show acl`) columns: header, dashes, rows; two blanks between columns.
std::string Columns(const std::vector<std::string>& header,
                    const std::vector<std::vector<std::string>>& rows, bool right) {
  std::vector<size_t> w(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    w[c] = header[c].size();
    for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) s += "  ";
      std::string pad(w[c] - cells[c].size(), ' ');
      s += right ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  std::vector<std::string> dashes;
  for (size_t c = 0; c < header.size(); ++c) dashes.push_back(std::string(w[c], '-'));
  out += line(dashes);
  for (const auto& r : rows) out += line(r);
  return out;
}

class Switch {
 public:
  Switch(std::string name, std::string path) : name_(std::move(name)), path_(std::move(path)) {}

  Status Load() {
    FL_ASSIGN_OR_RETURN(state_, LoadJsonFile(path_, InputKind::kLabState));
    if (!state_.is_object() || !state_.contains("ports") || !state_["ports"].is_array())
      return DataLossError(path_ + ": no port map");
    if (!state_.contains("acl_tables") || !state_["acl_tables"].is_object())
      state_["acl_tables"] = nlohmann::json::object();
    if (!state_.contains("acl_rules") || !state_["acl_rules"].is_object())
      state_["acl_rules"] = nlohmann::json::object();
    return OkStatus();
  }
  Status Save() { return WriteFileAtomic(path_, state_.dump(2) + "\n"); }

  // The ifname of a SONiC port name, or a CliError listing the ports.
  std::string Ifname(const std::string& port) const {
    std::string known;
    for (const auto& p : state_["ports"]) {
      if (p.value("name", "") == port) return p.value("ifname", "");
      known += (known.empty() ? "" : ", ") + p.value("name", "");
    }
    throw CliError{"Interface " + port + " does not exist on " + name_ + " (ports: " + known + ")"};
  }

  std::string Execute(const std::vector<std::string>& w) {
    auto is = [&](std::initializer_list<const char*> prefix) {
      if (w.size() < prefix.size()) return false;
      size_t i = 0;
      for (const char* p : prefix)
        if (w[i++] != p) return false;
      return true;
    };
    if (is({"config", "interface", "shutdown"}) || is({"config", "interface", "startup"})) {
      if (w.size() != 4) throw CliError{"usage: config interface shutdown|startup PORT"};
      const bool up = w[2] == "startup";
      Status s = injectors::SetLinkUp("", Ifname(w[3]), up);
      if (!s.ok())
        throw CliError{"cannot set " + w[3] + " " + (up ? "up" : "down") + ": " + s.ToString()};
      return "";
    }
    if (is({"show", "interfaces", "status"})) {
      if (w.size() > 4) throw CliError{"usage: show interfaces status [PORT]"};
      return ShowInterfaces(w.size() == 4 ? w[3] : "");
    }
    if (is({"show", "interfaces", "counters"})) {
      if (w.size() == 3) return ShowCounters("");
      if (w.size() == 5 && (w[3] == "-i" || w[3] == "--interface")) return ShowCounters(w[4]);
      throw CliError{"usage: show interfaces counters [-i PORT]"};
    }
    if (is({"show", "pfc", "counters"})) {
      if (w.size() != 3) throw CliError{"usage: show pfc counters"};
      return ShowPfcCounters();
    }
    if (is({"show", "pfcwd", "config"})) {
      if (w.size() != 3) throw CliError{"usage: show pfcwd config"};
      // No watchdog on the lab's ports: the header only ("not configured").
      return RightColumns({"PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME"}, {9, 8, 16, 18},
                          {});
    }
    if (is({"config", "acl", "add", "table"})) return AclAddTable(w);
    if (is({"config", "acl", "remove", "table"})) {
      if (w.size() != 5) throw CliError{"usage: config acl remove table NAME"};
      const std::string& t = w[4];
      state_["acl_tables"].erase(t);
      for (auto it = state_["acl_rules"].begin(); it != state_["acl_rules"].end();) {
        if (it.key().rfind(t + "|", 0) == 0) {
          it = state_["acl_rules"].erase(it);
        } else {
          ++it;
        }
      }
      Apply(t);
      return "";
    }
    if (is({"sonic-db-cli"})) return DbCli(w);
    if (is({"show", "acl", "table"})) {
      if (w.size() > 4) throw CliError{"usage: show acl table [NAME]"};
      return ShowAclTable(w.size() == 4 ? w[3] : "");
    }
    if (is({"show", "acl", "rule"})) {
      if (w.size() > 5) throw CliError{"usage: show acl rule [TABLE [RULE]]"};
      return ShowAclRule(w.size() >= 4 ? w[3] : "", w.size() == 5 ? w[4] : "");
    }
    std::string cmd;
    for (const auto& x : w) cmd += (cmd.empty() ? "" : " ") + x;
    throw CliError{"unknown command '" + cmd +
                   "' (this lab switch implements the SONiC "
                   "preset's commands: see docs/lab.md)"};
  }

 private:
  std::string ShowInterfaces(const std::string& only) {
    if (!only.empty()) Ifname(only);  // unknown port: an error
    std::vector<std::vector<std::string>> rows;
    int i = 0;
    for (const auto& p : state_["ports"]) {
      const std::string name = p.value("name", "");
      ++i;
      if (!only.empty() && name != only) continue;
      auto st = injectors::GetLink("", p.value("ifname", ""));
      if (!st.ok()) throw CliError{"cannot read " + name + ": " + st.status().ToString()};
      const bool oper = st->admin_up && st->carrier;
      rows.push_back({name, std::to_string(4 * (i - 1)), p.value("speed", "N/A"),
                      std::to_string(p.value("mtu", 1500)), "N/A", "etp" + std::to_string(i),
                      "routed", oper ? "up" : "down", st->admin_up ? "up" : "down", "N/A", "N/A"});
    }
    return RightColumns({"Interface", "Lanes", "Speed", "MTU", "FEC", "Alias", "Vlan", "Oper",
                         "Admin", "Type", "Asym PFC"},
                        {11, 7, 7, 5, 5, 7, 6, 6, 7, 6, 10}, rows);
  }

  // SONiC's right-aligned tables: each column at least min wide (the header indented to it).
  static std::string RightColumns(const std::vector<std::string>& header,
                                  const std::vector<size_t>& min,
                                  const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::string> padded = header;
    for (size_t c = 0; c < header.size(); ++c)
      if (padded[c].size() < min[c])
        padded[c] = std::string(min[c] - header[c].size(), ' ') + header[c];
    return Columns(padded, rows, true);
  }

  // "1,234".
  static std::string Commas(uint64_t v) {
    std::string d = std::to_string(v), out;
    for (size_t i = 0; i < d.size(); ++i) {
      if (i && (d.size() - i) % 3 == 0) out += ',';
      out += d[i];
    }
    return out;
  }

  // show interfaces counters [-i PORT]: portstat's classic columns. The counts come from
  // `ip -s -j link` (netlink, so from this namespace: /sys/class/net would show the mount's).
  std::string ShowCounters(const std::string& only) {
    if (!only.empty()) Ifname(only);
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : state_["ports"]) {
      const std::string name = p.value("name", ""), ifname = p.value("ifname", "");
      if (!only.empty() && name != only) continue;
      auto st = injectors::GetLink("", ifname);
      injectors::CommandOptions o;
      o.timeout = kToolTimeout;
      auto out = injectors::RunChecked({"ip", "-s", "-j", "link", "show", "dev", ifname}, o);
      if (!st.ok() || !out.ok()) throw CliError{"cannot read the counters of " + name};
      auto j = ParseJson(*out, "ip -s -j link");
      if (!j.ok() || !j->is_array() || j->empty())
        throw CliError{"cannot parse the counters of " + name};
      const nlohmann::json stats = (*j)[0].value("stats64", nlohmann::json::object());
      auto get = [&](const char* dir, const char* key) -> uint64_t {
        if (!stats.contains(dir) || !stats[dir].is_object()) return 0;
        const nlohmann::json v = stats[dir].value(key, nlohmann::json());
        return v.is_number_unsigned() ? v.get<uint64_t>() : 0;
      };
      const std::string state = !st->admin_up ? "X" : (st->carrier ? "U" : "D");
      rows.push_back({name, state, Commas(get("rx", "packets")), "0.00 B/s", "0.00%",
                      Commas(get("rx", "errors")), Commas(get("rx", "dropped")),
                      Commas(get("rx", "over_errors")), Commas(get("tx", "packets")), "0.00 B/s",
                      "0.00%", Commas(get("tx", "errors")), Commas(get("tx", "dropped")),
                      Commas(get("tx", "carrier_errors"))});
    }
    return RightColumns({"IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP",
                         "RX_OVR", "TX_OK", "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR"},
                        {11, 7, 7, 9, 9, 8, 8, 8, 7, 9, 9, 8, 8, 8}, rows);
  }

  // show pfc counters: the lab's bridges have no PFC, every counter is 0.
  std::string ShowPfcCounters() {
    std::string out;
    for (const char* dir : {"Port Rx", "Port Tx"}) {
      std::vector<std::vector<std::string>> rows;
      for (const auto& p : state_["ports"]) {
        std::vector<std::string> r = {p.value("name", "")};
        for (int i = 0; i < 8; ++i) r.push_back("0");
        rows.push_back(r);
      }
      std::vector<std::string> header = {dir};
      for (int i = 0; i < 8; ++i) header.push_back("PFC" + std::to_string(i));
      if (!out.empty()) out += "\n";
      out += RightColumns(header, {9, 6, 6, 6, 6, 6, 6, 6, 6}, rows);
    }
    return out;
  }

  std::string AclAddTable(const std::vector<std::string>& w) {
    // config acl add table NAME TYPE [--description D] [--stage S] [--ports P,...]
    if (w.size() < 6)
      throw CliError{
          "usage: config acl add table NAME TYPE [--description D] "
          "[--stage ingress|egress] [--ports P,...]"};
    const std::string& name = w[4];
    if (name.empty() || name.size() > 32 ||
        name.find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") !=
            std::string::npos)
      throw CliError{"ACL table name '" + name + "' must be 1-32 characters [A-Za-z0-9_-]"};
    nlohmann::json t = {{"type", w[5]},
                        {"description", ""},
                        {"stage", "ingress"},
                        {"ports", nlohmann::json::array()}};
    for (size_t i = 6; i < w.size(); i += 2) {
      if (i + 1 >= w.size()) throw CliError{"option " + w[i] + " needs a value"};
      const std::string& v = w[i + 1];
      if (w[i] == "--description" || w[i] == "-d") {
        t["description"] = v;
      } else if (w[i] == "--stage" || w[i] == "-s") {
        if (v != "ingress" && v != "egress")
          throw CliError{"stage must be ingress or egress, not '" + v + "'"};
        t["stage"] = v;
      } else if (w[i] == "--ports" || w[i] == "-p") {
        size_t b = 0;
        while (b <= v.size()) {
          size_t e = v.find(',', b);
          if (e == std::string::npos) e = v.size();
          std::string port = v.substr(b, e - b);
          Ifname(port);
          t["ports"].push_back(port);
          b = e + 1;
        }
      } else {
        throw CliError{"unknown option '" + w[i] + "'"};
      }
    }
    state_["acl_tables"][name] = t;
    Apply(name);
    return "";
  }

  std::string DbCli(const std::vector<std::string>& w) {
    if (w.size() < 4 || w[1] != "CONFIG_DB")
      throw CliError{"usage: sonic-db-cli CONFIG_DB hset|del 'ACL_RULE|TABLE|RULE' ..."};
    const std::string& key = w[3];
    const size_t bar1 = key.find('|');
    const size_t bar2 = bar1 == std::string::npos ? bar1 : key.find('|', bar1 + 1);
    if (key.rfind("ACL_RULE|", 0) != 0 || bar2 == std::string::npos || bar2 == bar1 + 1 ||
        bar2 + 1 >= key.size() || key.find('|', bar2 + 1) != std::string::npos)
      throw CliError{"this lab switch keeps only ACL_RULE|TABLE|RULE keys, not '" + key + "'"};
    const std::string table = key.substr(bar1 + 1, bar2 - bar1 - 1);
    const std::string rule_key = key.substr(bar1 + 1);
    auto& rules = state_["acl_rules"];
    if (w[2] == "del") {
      if (w.size() != 4) throw CliError{"usage: sonic-db-cli CONFIG_DB del KEY"};
      const bool had = rules.erase(rule_key) > 0;
      Apply(table);
      return had ? "1\n" : "0\n";
    }
    if (w[2] != "hset") throw CliError{"sonic-db-cli: this lab switch has hset and del only"};
    if (w.size() < 6 || (w.size() - 4) % 2 != 0)
      throw CliError{"usage: sonic-db-cli CONFIG_DB hset KEY FIELD VALUE [FIELD VALUE]..."};
    if (!state_["acl_tables"].contains(table))
      throw CliError{"ACL table " + table + " does not exist (config acl add table first)"};
    nlohmann::json r = rules.contains(rule_key) ? rules[rule_key] : nlohmann::json::object();
    int added = 0;
    for (size_t i = 4; i + 1 < w.size(); i += 2) {
      const std::string& f = w[i];
      const std::string& v = w[i + 1];
      if (f == "PRIORITY") {
        if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos)
          throw CliError{"PRIORITY must be a number, not '" + v + "'"};
      } else if (f == "PACKET_ACTION") {
        if (v != "DROP" && v != "FORWARD")
          throw CliError{"PACKET_ACTION must be DROP or FORWARD, not '" + v + "'"};
      } else {
        throw CliError{"field " + f +
                       ": this lab switch has match-all rules only "
                       "(PRIORITY, PACKET_ACTION)"};
      }
      if (!r.contains(f)) ++added;
      r[f] = v;
    }
    rules[rule_key] = r;
    Apply(table);
    return std::to_string(added) + "\n";
  }

  // Makes the nft table of ACL table `table` match the state: present (replaced atomically)
  // when the table has a DROP rule and ports, absent otherwise.
  void Apply(const std::string& table) {
    const std::string nft = kAclNftPrefix + table;
    bool drop = false;
    for (const auto& [k, r] : state_["acl_rules"].items())
      if (k.rfind(table + "|", 0) == 0 && r.value("PACKET_ACTION", "") == "DROP") drop = true;
    const auto& tables = state_["acl_tables"];
    std::vector<std::string> ifnames;
    std::string stage;
    if (drop && tables.contains(table)) {
      stage = tables[table].value("stage", "ingress");
      for (const auto& p : tables[table]["ports"]) ifnames.push_back(Ifname(p.get<std::string>()));
    }
    auto& installed = state_["nft_installed"];  // ACL tables that have an nft table now
    if (!installed.is_object()) installed = nlohmann::json::object();
    if (ifnames.empty()) {
      if (!installed.contains(table)) return;
      Status s = injectors::NftDeleteTable("", "bridge", nft);
      if (!s.ok()) throw CliError{"cannot remove ACL table " + table + ": " + s.ToString()};
      installed.erase(table);
      return;
    }
    // Add (a no-op when there), delete, recreate: one transaction.
    std::string rs = "table bridge " + nft + " {}\ndelete table bridge " + nft + "\n";
    rs += "table bridge " + nft +
          " {\n  chain forward {\n    type filter hook forward priority 0; "
          "policy accept;\n";
    for (const auto& ifn : ifnames)
      rs += std::string("    ") + (stage == "egress" ? "oifname" : "iifname") + " \"" + ifn +
            "\" counter drop\n";
    rs += "  }\n}\n";
    Status r = injectors::NftApply("", rs);
    if (!r.ok()) throw CliError{"cannot apply ACL table " + table + ": " + r.ToString()};
    installed[table] = true;
  }

  std::string ShowAclTable(const std::string& only) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, t] : state_["acl_tables"].items()) {
      if (!only.empty() && name != only) continue;
      std::vector<std::string> ports;
      for (const auto& p : t["ports"]) ports.push_back(p.get<std::string>());
      rows.push_back({name, t.value("type", ""), ports.empty() ? "" : ports[0],
                      t.value("description", ""), t.value("stage", ""), "Active"});
      for (size_t i = 1; i < ports.size(); ++i) rows.push_back({"", "", ports[i], "", "", ""});
    }
    return Columns({"Name", "Type", "Binding", "Description", "Stage", "Status"}, rows, false);
  }

  std::string ShowAclRule(const std::string& table, const std::string& rule) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, r] : state_["acl_rules"].items()) {
      const size_t bar = k.find('|');
      const std::string t = k.substr(0, bar), n = k.substr(bar + 1);
      if ((!table.empty() && t != table) || (!rule.empty() && n != rule)) continue;
      rows.push_back({t, n, r.value("PRIORITY", "N/A"), r.value("PACKET_ACTION", "N/A"), "N/A"});
    }
    return Columns({"Table", "Rule", "Priority", "Action", "Match"}, rows, false);
  }

  std::string name_, path_;
  nlohmann::json state_;
};

}  // namespace

ShimResult RunShimCommand(const std::string& switch_name, const std::string& state_path,
                          std::string_view command_line) {
  ShimResult res;
  auto fail = [&](const std::string& msg) {
    res.exit_code = 1;
    res.err = "Error: " + msg + "\n";
    return res;
  };
  auto words = TokenizeCommand(command_line);
  if (!words.ok()) return fail("refused command: " + words.status().message());
  std::vector<std::string> w = *words;
  if (!w.empty() && w[0] == "sudo") w.erase(w.begin());
  if (w.empty())
    return fail("switch " + switch_name +
                " takes commands only, e.g. ssh SWITCH show interfaces status");
  // One command at a time per switch: the state file is read, changed and written under an
  // exclusive lock on its sidecar.
  UniqueFd lock(open((state_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.get() < 0 || flock(lock.get(), LOCK_EX) != 0)
    return fail("cannot lock " + state_path + ".lock");
  Switch sw(switch_name, state_path);
  if (Status s = sw.Load(); !s.ok()) return fail(s.ToString());
  try {
    res.out = sw.Execute(w);
  } catch (const CliError& e) {
    return fail(e.message);
  } catch (const std::exception& e) {
    return fail(std::string("bad switch state: ") + e.what());
  }
  if (Status s = sw.Save(); !s.ok()) return fail(s.ToString());
  return res;
}

}  // namespace fl::lab
