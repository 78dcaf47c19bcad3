#include "tests/harness/lldpd_testing.h"

#include <memory>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/process.h"
#include "tests/test_util.h"

namespace fl::testing {

StatusOr<std::unique_ptr<Lldpd>> Lldpd::Start(const std::string& netns, const std::string& dir,
                                              const std::string& name,
                                              const std::string& interfaces) {
  std::unique_ptr<Lldpd> d(new Lldpd());
  d->netns_ = netns;
  d->ctl_ = dir + "/" + name + ".lldpd";
  d->log_ = d->ctl_ + ".log";
  ProcessSpec spec;
  spec.argv = {"/usr/sbin/lldpd", "-d", "-u", d->ctl_, "-I", interfaces};
  spec.netns = netns;
  spec.out.kind = Stdio::kNull;
  spec.err = {Stdio::kFile, d->log_};
  FL_ASSIGN_OR_RETURN(Process p, Spawn(spec));
  d->pid_ = p.pid();
  const bool up = WaitUntil(
      [&] {
        return d->Cli({"show", "configuration"}).ok();
      },
      Deadline::After(10 * kNsPerSec), 50 * kNsPerMs);
  if (!up) return UnavailableError("lldpd in " + netns + " did not answer: " + d->LogText());
  FL_RETURN_IF_ERROR(d->Cli({"configure", "system", "hostname", name}).status());
  FL_RETURN_IF_ERROR(d->Cli({"configure", "lldp", "tx-interval", "1"}).status());
  return d;
}

StatusOr<std::string> Lldpd::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/sbin/lldpcli", "-u", ctl_};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.netns = netns_;
  FL_ASSIGN_OR_RETURN(RunResult r, Run(argv, o));
  if (r.exit_code != 0) return UnavailableError("lldpcli: " + r.err);
  return r.out;
}

std::string Lldpd::LogText() const {
  auto t = ReadFile(log_);
  return t.ok() ? *t : std::string();
}

Lldpd::~Lldpd() {
  if (pid_ > 0) Stop(pid_, 2 * kNsPerSec);
}

}  // namespace fl::testing
