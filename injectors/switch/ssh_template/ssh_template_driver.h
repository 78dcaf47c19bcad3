// The `ssh-template` SwitchDriver (switch_driver.h): every operation is a list of command
// templates from a preset (configs/switches/*.yaml, format in docs/injectors.md "Switch
// drivers"), run on the switch with the OpenSSH client, then a read-back command whose output
// must match (or must not match) a pattern.
//
// Safety (ARCHITECTURE.md §7): arguments (port, rule, stage, rate) are validated before they are
// substituted; the client is run by absolute path with an argv array, never through a local
// shell, with a clean environment, BatchMode (no prompts), host keys checked strictly against
// the inventory's known_hosts file or pinned key, and a timeout from the caller's deadline. The
// remote words are quoted for a POSIX shell (quoting: posix) or passed as they are to a CLI that
// is not a shell (quoting: none); substituted values are restricted to characters that need no
// quoting either way.
//
// Registered under "ssh-template" by the registry (injectors/switch_drivers.cc), so every binary
// that can call OpenSwitchDriver has it.
//
// Thread-safety: as SwitchDriver. The free functions may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/process.h"
#include "common/status.h"
#include "injectors/switch/switch_driver.h"

namespace fl::injectors {

// The factory registered as "ssh-template": parses and checks conn.preset_text (errors
// "PRESET:LINE:COL: ..." with PRESET = conn.preset) and the connection fields (address, user,
// jump, key and known_hosts paths). Never touches the network.
StatusOr<std::unique_ptr<SwitchDriver>> OpenSshTemplateDriver(const SwitchConn& conn);

// Where a preset named in an inventory lives, as an absolute path. A bare name ("sonic", "eos",
// "nvue": [A-Za-z0-9_-]) is configs/switches/NAME.yaml, looked up in $FAULTLINE_CONFIG_DIR,
// then beside the running binary (its directory's parents up to four levels, each's configs/,
// and ../share/faultline/configs), then ./configs. Anything else is a path: absolute as it is,
// relative to base_dir (the inventory's directory; the working directory when empty).
// InvalidArgument naming the places looked in when there is no such readable file.
StatusOr<std::string> ResolveSwitchPreset(std::string_view name_or_path,
                                          const std::string& base_dir);

// Building blocks, exposed for tests and docs (words are quoted with fl::PosixShellQuote,
// common/process.h).
// The OpenSSH client's argv that runs remote_words on conn's switch (remote_words already
// quoted as the preset says). known_hosts_file is the file for UserKnownHostsFile (conn's, or
// the temporary one holding conn.host_key). InvalidArgument for a bad address, user or jump.
StatusOr<std::vector<std::string>> BuildSshArgv(const SwitchConn& conn,
                                                const std::string& known_hosts_file,
                                                const std::vector<std::string>& remote_words);

}  // namespace fl::injectors
