// PgServer: a real PostgreSQL server a test starts for itself and stops again: initdb and
// pg_ctl (Debian's postgresql-15, installed by scripts/setup.sh) in a fresh directory under
// /tmp, as the unprivileged user nobody when the test runs as root (PostgreSQL refuses root).
// It listens on a unix socket in that directory only (listen_addresses empty: no TCP port at
// all) and trusts its one user, "faultline". The destructor stops it (pg_ctl stop -m
// immediate, then the postmaster's pid from its pid file if that failed) and removes the
// directory.
#pragma once

#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "tests/child_process.h"
#include "tests/test_util.h"

namespace fl::testing {

class PgServer {
 public:
  // nullptr, with why in *error, when the server could not be started.
  static std::unique_ptr<PgServer> Start(std::string* error) {
    auto s = std::unique_ptr<PgServer>(new PgServer());
    if (!s->StartImpl(error)) return nullptr;
    return s;
  }
  ~PgServer() { Stop(); }
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // A libpq URI of database `db` (created by CreateDatabase, or "postgres").
  std::string Uri(const std::string& db = "postgres") const {
    std::string host;
    for (char c : dir_.path()) host += c == '/' ? std::string("%2F") : std::string(1, c);
    return "postgresql://faultline@" + host + ":5432/" + db;
  }
  // Stops the server as a crash would (pg_ctl stop -m immediate: no shutdown checkpoint,
  // every connection cut) and starts it again; true when it did. The data directory stays.
  bool StopImmediate() {
    return RunAs({bin_ + "/pg_ctl", "-D", dir_.path() + "/data", "-m", "immediate", "-w", "-t",
                  "30", "stop"},
                 dir_.path() + "/pg_ctl_stop.log", true) == 0;
  }
  bool StartAgain() {
    return RunAs({bin_ + "/pg_ctl", "-D", dir_.path() + "/data", "-l", dir_.path() + "/log", "-w",
                  "-t", "60", "-o", ServerOptions(), "start"},
                 dir_.path() + "/pg_ctl.log", true) == 0;
  }

  // The server's log, for a failing test's message.
  std::string Log() const { return ReadFile(dir_.path() + "/log").value_or(""); }
  const std::string& dir() const { return dir_.path(); }
  // Runs psql -c sql against database db; its exit code (0 when it worked).
  int Psql(const std::string& sql, const std::string& db = "postgres") const {
    return RunAs({bin_ + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", dir_.path(), "-p",
                  "5432", "-U", "faultline", "-d", db, "-c", sql},
                 dir_.path() + "/psql.log", false);
  }

 private:
  PgServer() : dir_("fl_pg") {}

  static std::string BinDir() {
    glob_t g{};
    std::string best;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) best = std::max(best, std::string(g.gl_pathv[i]));
    }
    globfree(&g);
    return best.empty() ? "" : best.substr(0, best.size() - std::string("/initdb").size());
  }

  // Runs argv to its end (as nobody when we are root and as_server), output to log.
  static int RunAs(std::vector<std::string> argv, const std::string& log, bool as_server) {
    if (as_server && geteuid() == 0) {
      argv.insert(argv.begin(),
                  {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
    }
    ChildProcess::Options o;
    o.out = log;
    ChildProcess p(argv, o);
    auto rc = p.Wait(Deadline::After(120 * kNsPerSec));
    return rc ? *rc : -1;
  }

  bool StartImpl(std::string* error) {
    bin_ = BinDir();
    if (bin_.empty()) {
      *error = "no /usr/lib/postgresql/*/bin/initdb: install postgresql-15 (scripts/setup.sh does)";
      return false;
    }
    if (dir_.path().empty()) {
      *error = "cannot make a directory under /tmp";
      return false;
    }
    if (geteuid() == 0 && chown(dir_.path().c_str(), 65534, 65534) != 0) {
      *error = "cannot give " + dir_.path() + " to nobody";
      return false;
    }
    const std::string data = dir_.path() + "/data";
    // --locale=C: whatever LANG says (a locale the machine may not have), the same server.
    if (RunAs({bin_ + "/initdb", "-D", data, "-U", "faultline", "--auth=trust", "-E", "UTF8",
               "--locale=C", "--no-sync", "--no-instructions"},
              dir_.path() + "/initdb.log", true) != 0) {
      *error = "initdb failed: " + ReadFile(dir_.path() + "/initdb.log").value_or("");
      return false;
    }
    started_ = true;
    if (RunAs({bin_ + "/pg_ctl", "-D", data, "-l", dir_.path() + "/log", "-w", "-t", "60", "-o",
               ServerOptions(), "start"},
              dir_.path() + "/pg_ctl.log", true) != 0) {
      *error = "pg_ctl start failed: " + ReadFile(dir_.path() + "/pg_ctl.log").value_or("") + Log();
      return false;
    }
    return true;
  }

  std::string ServerOptions() const {
    return "-c listen_addresses='' -k " + dir_.path() +
           " -p 5432 -c fsync=off -c full_page_writes=off "
           "-c max_connections=40";
  }

  void Stop() {
    if (!started_) return;
    started_ = false;
    const std::string data = dir_.path() + "/data";
    // The postmaster's pid, read before pg_ctl removes the file.
    pid_t pid = 0;
    {
      std::ifstream in(data + "/postmaster.pid");
      in >> pid;
    }
    int rc = RunAs({bin_ + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "-t", "30", "stop"},
                   dir_.path() + "/pg_ctl_stop.log", true);
    if (rc != 0 && pid > 0 && kill(pid, 0) == 0) {
      kill(pid, SIGKILL);
      WaitUntil([&] { return kill(pid, 0) != 0; }, Deadline::After(10 * kNsPerSec), 10 * kNsPerMs);
    }
  }

  TempDir dir_;
  std::string bin_;
  bool started_ = false;
};

}  // namespace fl::testing
