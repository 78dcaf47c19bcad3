// What LocalLab's files share (local_lab.cc: namespaces, links, teardown; local_lab_mgmt.cc:
// the switches' management plane; local_lab_frr.cc: routing with FRR). Internal to fl_lab.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::lab::local_internal {

inline constexpr Nanos kToolTimeout = 5 * kNsPerSec;

// `ip -n NETNS ARGS...` (no -n for an empty netns), checked.
Status Ip(const std::string& netns, std::vector<std::string> args);
// Where the local labs' state files live ($FAULTLINE_STATE_DIR/labs).
std::string LabsDir();
// A switch's daemon (sshd, zebra, bgpd) in its namespace and the lab's cgroup (none: ""),
// in a session of its own, stdin and stdout /dev/null, stderr to log.
StatusOr<pid_t> SpawnSwitchDaemon(std::vector<std::string> argv, const std::string& netns,
                                  const std::string& cgroup, const std::string& log);
// The last 600 bytes of a log file, for error messages ("" when unreadable).
std::string Tail(const std::string& path);

}  // namespace fl::lab::local_internal
