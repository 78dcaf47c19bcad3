// Thin wrappers over the system facilities the injectors and the local lab need: running a
// tool with an argv array (never a shell string), optionally inside a named network namespace,
// with a deadline; running a function on a thread that has joined a network namespace.
// Processes are started by the project's one process layer (common/process.h): the tool is
// resolved to an absolute path from a fixed list of directories (never PATH or the working
// directory) and runs with a clean environment.
//
// Thread-safety: all functions may be called from any thread.
// Blocking: RunCommand blocks until the command exits or its deadline passes (the command's
// process group is then killed with SIGKILL and the result is DeadlineExceeded).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"

namespace fl::injectors {

// Where named network namespaces live (ip-netns(8) convention).
inline constexpr const char* kNetnsDir = "/run/netns";

// The common process layer's options and result (common/process.h): netns, stdin_data,
// timeout (10 s by default), and exit_code/term_signal/out/err.
using CommandOptions = fl::RunOptions;
using CommandResult = fl::RunResult;

// Runs argv with fl::Run (argv[0] resolved by fl::ResolveTool). A non-zero exit is not an
// error here: callers decide; use RunChecked when any failure is an error.
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options = {});
// RunCommand, and a non-zero exit becomes Internal "<argv...>: exit N: <stderr>".
StatusOr<std::string> RunChecked(const std::vector<std::string>& argv,
                                 const CommandOptions& options = {});

// Runs fn on a fresh thread that has joined /run/netns/<netns>, and waits for it. File
// descriptors (sockets) created there stay bound to that namespace afterwards.
Status RunInNetns(const std::string& netns, const std::function<Status()>& fn);

// True when /run/netns/<name> exists.
bool NetnsExists(const std::string& name);
// Names under /run/netns, sorted.
std::vector<std::string> ListNetns();

// Liveness by pid and start time, and safe names: the process layer's (common/process.h).
using fl::IsSafeName;
using fl::ProcessAlive;
using fl::ProcessStartTime;

// The mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo.
StatusOr<std::string> Cgroup2Root();

}  // namespace fl::injectors
