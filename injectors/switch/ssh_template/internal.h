// What the files of the ssh-template driver share (template_vars.cc, ssh_argv.cc, preset.cc,
// driver.cc, presets.cc). Internal to fl_injectors; the driver's public face is
// ssh_template_driver.h.
//
// Thread-safety: the free functions may be called from any thread; a TempKnownHosts belongs to
// one.
#pragma once

#include <cstddef>
#include <map>
#include <regex>
#include <string>
#include <string_view>

#include "common/status.h"
#include "injectors/switch/switch_driver.h"

namespace fl::injectors::ssh_template {

// ---- characters and regular expressions (template_vars.cc) ----

// std::regex throws on a bad pattern and may throw on pathological input: exceptions stay in
// these two. InvalidArgument for a bad pattern.
StatusOr<std::regex> CompileRegex(const std::string& src, bool multiline);
// Searches text from `from`; fills m with absolute positions into text. Internal on a regex
// engine failure (e.g. its stack limit).
StatusOr<bool> Search(const std::string& text, size_t from, const std::regex& re, std::smatch& m);

// ---- templates (template_vars.cc) ----

// Values a template may use, per operation.
using Vars = std::map<std::string, std::string>;

enum VarBit : unsigned {
  kPort = 1,
  kRule = 2,
  kStage = 4,
  kRate = 8,  // bps, kbps, mbps
};

// The placeholders (VarBit mask) that op's templates may use.
unsigned VarsOf(SwitchOp op);

// Checks the {placeholders} of a template string: "{" + [a-z]+ + "}" is a placeholder (other
// braces, such as a regex's {1,4}, are literal). Returns "" or the complaint.
std::string CheckPlaceholders(std::string_view s, unsigned allowed, std::string_view op);

// Substitutes {name} by vars[name] (regex-escaped when regex is set).
std::string Substitute(std::string_view s, const Vars& vars, bool regex);

// ---- the connection (ssh_argv.cc) ----

// The fields of conn the OpenSSH client is given: InvalidArgument naming the bad one.
Status CheckConn(const SwitchConn& conn);

// A temporary known_hosts file holding the pinned key; removed on destruction.
class TempKnownHosts {
 public:
  TempKnownHosts() = default;
  TempKnownHosts(const TempKnownHosts&) = delete;
  TempKnownHosts& operator=(const TempKnownHosts&) = delete;
  ~TempKnownHosts();

  // Writes conn.host_key for conn's address and port to a new file under $TMPDIR or /tmp.
  Status Write(const SwitchConn& conn);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fl::injectors::ssh_template
