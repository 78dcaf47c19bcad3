// The process layer: tool resolution never uses PATH or the working directory, children get a
// clean environment, deadlines kill, network namespaces and cgroups place the child.
#include "common/process.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/file_util.h"

namespace fl {
namespace {

// A temporary directory holding an executable `rm` (and `faultline_test_tool`) that would
// create a marker file if it were ever run; it becomes the working directory and the first
// PATH entry for the test's lifetime.
class HostileCwd {
 public:
  HostileCwd() {
    char tmpl[] = "/tmp/fl_process_test_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    marker_ = dir_ + "/marker";
    for (const char* name : {"rm", "env", "faultline_test_tool"}) {
      std::string p = dir_ + "/" + name;
      std::ofstream(p) << "#!/bin/sh\ntouch " << marker_ << "\n";
      REQUIRE(chmod(p.c_str(), 0755) == 0);
    }
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    old_cwd_ = cwd;
    const char* path = getenv("PATH");
    old_path_ = path ? path : "";
    REQUIRE(chdir(dir_.c_str()) == 0);
    setenv("PATH", (".:" + dir_ + ":" + old_path_).c_str(), 1);
  }
  ~HostileCwd() {
    setenv("PATH", old_path_.c_str(), 1);
    if (chdir(old_cwd_.c_str()) != 0) {
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  bool MarkerExists() const { return access(marker_.c_str(), F_OK) == 0; }

 private:
  std::string dir_, marker_, old_cwd_, old_path_;
};

TEST_CASE("ResolveTool: a fake rm in the working directory and first in PATH is never chosen",
          "[unit]") {
  HostileCwd hostile;
  auto rm = ResolveTool("rm");
  REQUIRE(rm.ok());
  CHECK((*rm == "/usr/bin/rm" || *rm == "/bin/rm"));
  CHECK(rm->find(hostile.dir()) == std::string::npos);
  // Running it (on a file of ours) runs the real one.
  std::string victim = hostile.dir() + "/victim";
  std::ofstream(victim) << "x";
  auto r = Run({"rm", "-f", "--", victim});
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(access(victim.c_str(), F_OK) != 0);
  CHECK_FALSE(hostile.MarkerExists());
}

TEST_CASE("ResolveTool: unknown tools are NotFound, relative paths are refused", "[unit]") {
  HostileCwd hostile;
  auto missing = ResolveTool("faultline_test_tool");  // exists only in the cwd and PATH
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(missing.status().message().find("/usr/bin") != std::string::npos);
  CHECK(ResolveTool("no-such-tool-xyz").status().code() == Code::kNotFound);
  CHECK(ResolveTool("./rm").status().code() == Code::kInvalidArgument);
  CHECK(ResolveTool("").status().code() == Code::kInvalidArgument);
  CHECK(Run({"faultline_test_tool"}).status().code() == Code::kNotFound);
  CHECK_FALSE(hostile.MarkerExists());
  // An absolute path is taken as given.
  auto abs = ResolveTool(hostile.dir() + "/rm");
  REQUIRE(abs.ok());
  CHECK(*abs == hostile.dir() + "/rm");
}

TEST_CASE("ResolveTool: every directory searched is absolute", "[unit]") {
  for (const auto& d : ToolDirs()) {
    INFO(d);
    CHECK(d.rfind('/', 0) == 0);
  }
  CHECK(ToolDirs().front() == "/usr/sbin");
}

TEST_CASE("Spawn: the child's environment is the allow-list, with a fixed PATH", "[unit]") {
  HostileCwd hostile;
  setenv("AWS_SECRET_ACCESS_KEY", "hunter2", 1);
  setenv("LD_PRELOAD", "/nonexistent.so", 1);
  setenv("FAULTLINE_STATE_DIR", "/tmp/x", 1);
  auto r = Run({"env"});
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("LD_PRELOAD");
  unsetenv("FAULTLINE_STATE_DIR");
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->out.find("AWS_SECRET_ACCESS_KEY") == std::string::npos);
  CHECK(r->out.find("LD_PRELOAD") == std::string::npos);
  CHECK(r->out.find("PATH=" + std::string(kChildPath) + "\n") != std::string::npos);
  CHECK(r->out.find(hostile.dir()) == std::string::npos);
  CHECK(r->out.find("FAULTLINE_STATE_DIR=/tmp/x\n") != std::string::npos);
  CHECK_FALSE(hostile.MarkerExists());  // /usr/bin/env, not ./env
}

TEST_CASE("CleanEnvironment: extra entries replace, relative library paths are dropped", "[unit]") {
  setenv("LD_LIBRARY_PATH", ".:/opt/lib::lib", 1);
  setenv("FAULTLINE_LOG", "debug", 1);
  auto env = CleanEnvironment({"FAULTLINE_LOG=warn", "X_EXTRA=1"});
  unsetenv("LD_LIBRARY_PATH");
  unsetenv("FAULTLINE_LOG");
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  CHECK(has("LD_LIBRARY_PATH=/opt/lib"));
  CHECK(has("FAULTLINE_LOG=warn"));
  CHECK_FALSE(has("FAULTLINE_LOG=debug"));
  CHECK(has("X_EXTRA=1"));
}

TEST_CASE("Run: stdin is fed, stdout and stderr captured, exit codes reported", "[unit]") {
  RunOptions o;
  o.stdin_data = "hello\n";
  auto r = Run({"cat"}, o);
  REQUIRE(r.ok());
  CHECK(r->out == "hello\n");
  auto e = Run({"sh", "-c", "echo oops >&2; exit 3"});
  REQUIRE(e.ok());
  CHECK(e->exit_code == 3);
  CHECK(e->err == "oops\n");
  auto k = Run({"sh", "-c", "kill -TERM $$"});
  REQUIRE(k.ok());
  CHECK(k->term_signal == SIGTERM);
  CHECK(Run({}).status().code() == Code::kInvalidArgument);
}

TEST_CASE("Run: the deadline kills the command and what it started", "[unit]") {
  char tmpl[] = "/tmp/fl_process_pid_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string pidfile = std::string(tmpl) + "/pid";
  RunOptions o;
  o.timeout = 300 * kNsPerMs;
  Nanos t0 = MonoNowNs();
  // The grandchild keeps stdout open and would outlive a kill of the shell alone.
  auto r = Run({"sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, o);
  Nanos took = MonoNowNs() - t0;
  CHECK(r.status().code() == Code::kDeadlineExceeded);
  CHECK(took < 5 * kNsPerSec);
  auto text = ReadFile(pidfile);
  REQUIRE(text.ok());
  int grandchild = std::atoi(text->c_str());
  REQUIRE(grandchild > 0);
  // Killed with its group (it may linger as a zombie of init for a moment).
  CHECK(WaitUntil([&] { return !ProcessAlive(grandchild); }, Deadline::After(5 * kNsPerSec)));
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("Spawn: redirects to files, cwd, and a failure to start is an error", "[unit]") {
  char tmpl[] = "/tmp/fl_process_io_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "pwd; echo e >&2"};
  spec.cwd = dir;
  spec.in.kind = Stdio::kNull;
  spec.out = {Stdio::kFile, dir + "/out"};
  spec.err = {Stdio::kFile, dir + "/err"};
  auto p = Spawn(spec);
  REQUIRE(p.ok());
  CHECK(p->start_time() != 0);
  auto e = WaitExit(p->pid(), Deadline::After(5 * kNsPerSec));
  REQUIRE(e.ok());
  CHECK(e->exit_code == 0);
  CHECK(ReadFile(dir + "/out").value_or("") == dir + "\n");
  CHECK(ReadFile(dir + "/err").value_or("") == "e\n");
  spec.cwd = dir + "/missing";
  CHECK(Spawn(spec).status().code() == Code::kFailedPrecondition);
  spec.cwd.clear();
  spec.netns = "../etc";
  CHECK(Spawn(spec).status().code() == Code::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ProcessAlive: pid and start time", "[unit]") {
  CHECK(ProcessAlive(getpid()));
  CHECK(ProcessAlive(getpid(), ProcessStartTime(getpid())));
  CHECK_FALSE(ProcessAlive(getpid(), ProcessStartTime(getpid()) + 1));  // a recycled pid
  ProcessSpec spec;
  spec.argv = {"true"};
  auto p = Spawn(spec);
  REQUIRE(p.ok());
  int pid = p->pid();
  REQUIRE(WaitExit(pid, Deadline::After(5 * kNsPerSec)).ok());
  CHECK_FALSE(ProcessAlive(pid, p->start_time()));
  CHECK_FALSE(ProcessAlive(0));
}

TEST_CASE("Stop: SIGTERM ends a child and it is reaped", "[unit]") {
  ProcessSpec spec;
  spec.argv = {"sleep", "30"};
  spec.new_process_group = true;
  auto p = Spawn(spec);
  REQUIRE(p.ok());
  ExitStatus e = Stop(p->pid(), 5 * kNsPerSec, true);
  CHECK(e.term_signal == SIGTERM);
  CHECK_FALSE(ProcessAlive(p->pid(), p->start_time()));
}

// Root: a named network namespace and a cgroup v2 leaf.
TEST_CASE("Spawn: the child runs in the named network namespace", "[.root][integration]") {
  std::string ns = "flproc" + std::to_string(getpid() % 100000);
  REQUIRE(Run({"ip", "netns", "add", ns}).ok());
  struct Cleanup {
    std::string ns;
    ~Cleanup() { Run({"ip", "netns", "del", ns}).status().IgnoreError(); }
  } cleanup{ns};
  RunOptions o;
  o.netns = ns;
  auto inside = Run({"readlink", "/proc/self/ns/net"}, o);
  auto outside = Run({"readlink", "/proc/self/ns/net"});
  REQUIRE(inside.ok());
  REQUIRE(outside.ok());
  CHECK(inside->exit_code == 0);
  CHECK(inside->out != outside->out);
  auto links = Run({"ip", "-o", "link", "show"}, o);
  REQUIRE(links.ok());
  CHECK(links->out.find("lo:") != std::string::npos);
  CHECK(links->out.find("eth0") == std::string::npos);
  o.netns = ns + "-missing";
  CHECK_FALSE(Run({"true"}, o).ok());
}

TEST_CASE("Spawn: a container starts as pid 1 inside its cgroup", "[.root][integration]") {
  std::string root;
  for (const auto& m : ListMounts())
    if (m.fstype == "cgroup2" && root.empty()) root = m.mountpoint;
  REQUIRE_FALSE(root.empty());
  std::string cg = root + "/fl_process_test_" + std::to_string(getpid());
  REQUIRE(MakeDirs(cg).ok());
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo $$; cat /proc/self/cgroup"};
  spec.cgroup = cg;
  spec.container = true;
  char tmpl[] = "/tmp/fl_process_ct_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string out = std::string(tmpl) + "/out";
  spec.out = {Stdio::kFile, out};
  auto p = Spawn(spec);
  REQUIRE(p.ok());
  auto e = WaitExit(p->pid(), Deadline::After(5 * kNsPerSec));
  REQUIRE(e.ok());
  CHECK(e->exit_code == 0);
  std::string text = ReadFile(out).value_or("");
  CHECK(text.rfind("1\n", 0) == 0);
  CHECK(text.find("fl_process_test_" + std::to_string(getpid())) != std::string::npos);
  CHECK(rmdir(cg.c_str()) == 0);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace fl
