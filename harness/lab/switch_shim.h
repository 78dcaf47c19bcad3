// faultline-switch-shim: the SONiC-like command line of a local-lab switch (a Linux bridge in
// a network namespace) reached over SSH. It is the ForceCommand of the switch's sshd
// (LocalLab with `switch_control: ssh`), reads the client's command from
// SSH_ORIGINAL_COMMAND and implements exactly the command set the SONiC preset of the
// ssh-template driver uses (configs/switches/sonic.yaml; docs/lab.md lists it):
//
//   config interface shutdown|startup PORT        admin state, through rtnetlink
//   show interfaces status [PORT]                 SONiC's columns, oper/admin from the kernel
//   config acl add table NAME TYPE [--description D] [--stage ingress|egress] [--ports P,..]
//   config acl remove table NAME
//   sonic-db-cli CONFIG_DB hset 'ACL_RULE|TABLE|RULE' FIELD VALUE [FIELD VALUE]...
//   sonic-db-cli CONFIG_DB del 'ACL_RULE|TABLE|RULE'
//   show acl table [NAME]      show acl rule [TABLE [RULE]]
//   show interfaces counters [-i PORT]            portstat's columns, counts from netlink
//   show pfc counters                             Rx and Tx tables, all 0 (no PFC on a bridge)
//   show pfcwd config                             the header only: no watchdog
//
// An ACL table with a rule whose PACKET_ACTION is DROP becomes an nft table of the bridge
// family in the switch's namespace (forward hook: ingress = iifname PORT drop, egress =
// oifname PORT drop), named kAclNftPrefix + the table's name so that it cannot collide with
// faultline's own (netdev) tables. The switch's port map (SONiC name -> ifname, written by
// the lab) and its ACL state live in one JSON file, changed under an flock.
//
// Errors: "Error: ..." on stderr and exit 1, like SONiC's CLI: an unknown command or port, a
// command the tokenizer refuses (unquoted shell metacharacters), a bad argument.
//
// Thread-safety: functions only; RunShimCommand runs in the shim's own process.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl::lab {

inline constexpr const char* kAclNftPrefix = "flsonic_";

// Splits a command line into words as a POSIX shell would, without any expansion: blanks
// separate words; 'single quotes' are literal; in "double quotes" a backslash escapes only
// $ ` " \ and newline; outside quotes a backslash escapes the next character. Refused
// (InvalidArgument, naming the character and its offset): an unquoted ; | & $ ` < > ( ) or
// newline, # at the start of a word, $ or ` inside double quotes, an unterminated quote, a
// trailing backslash.
StatusOr<std::vector<std::string>> TokenizeCommand(std::string_view line);

// The JSON the lab writes for each switch (the shim adds "acl_tables" / "acl_rules"):
//   {"switch": "tor0", "ports": [{"name": "Ethernet0", "ifname": "h0", "speed": "1G",
//    "mtu": 1500}, ...]}
struct ShimPort {
  std::string name;    // "Ethernet0"
  std::string ifname;  // "h0"
  std::string speed;   // "1G", "N/A"
  int mtu = 1500;
};
std::string ShimStateJson(const std::string& switch_name, const std::vector<ShimPort>& ports);

struct ShimResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Runs one command line on the switch whose state file is state_path, in the caller's network
// namespace (the switch's).
ShimResult RunShimCommand(const std::string& switch_name, const std::string& state_path,
                          std::string_view command_line);

}  // namespace fl::lab
