// `faultline gate prolog|epilog|health`: the Slurm gate of a node (harness/lab/node_gate.h,
// docs/operations.md "Slurm gate"), fit for slurm.conf's Prolog, Epilog and
// HealthCheckProgram. It reads and reverts this node's fault journal and drains or resumes the
// node with scontrol.
#include <fcntl.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/clock.h"
#include "common/process.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/lab/node_gate.h"
#include "injectors/injector.h"
#include "injectors/journal.h"

namespace fl::harness {
namespace {

enum class GateStep { kProlog, kEpilog, kHealth };

struct GateArgs {
  std::string journal_dir, node, scontrol = "scontrol";
  bool no_drain = false, include_live = false;
};

constexpr Nanos kScontrolTimeout = 30 * kNsPerSec;

// --node, else Slurm's SLURMD_NODENAME (set for Prolog, Epilog and HealthCheckProgram), else
// the short host name.
std::string NodeName(const GateArgs& a) {
  if (!a.node.empty()) return a.node;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string h(host);
  return h.substr(0, h.find('.'));
}

// scontrol ARGS with the caller's SLURM_CONF (a cluster whose slurm.conf is elsewhere).
StatusOr<RunResult> Scontrol(const GateArgs& a, const std::vector<std::string>& args) {
  FL_ASSIGN_OR_RETURN(std::string prog, ResolveTool(a.scontrol));
  std::vector<std::string> argv = {prog};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> extra;
  if (const char* c = std::getenv("SLURM_CONF"); c && *c)
    extra.push_back(std::string("SLURM_CONF=") + c);
  RunOptions o;
  o.env = CleanEnvironment(extra);
  o.timeout = kScontrolTimeout;
  FL_ASSIGN_OR_RETURN(RunResult r, Run(argv, o));
  if (r.exit_code != 0)
    return UnavailableError("scontrol " + args[0] + " " + (args.size() > 1 ? args[1] : "") +
                            " exited " + std::to_string(r.exit_code) + ": " + r.err);
  return r;
}

// One line per gate call that found something, appended to STATE_DIR/gate.log: what the
// node was told, for the operator beside what stdout said. The gate's decision does not
// depend on it, so a log that cannot be written is skipped.
void Record(const std::string& node, const char* step, const lab::GateResult& r,
            const std::string& action) {
  const std::string line = FormatWallIso(WallNowNs()) + " " + node + " " + step + " " +
                           lab::GateLevelName(r.level) + " " + r.summary +
                           (action.empty() ? "" : "; " + action) + "\n";
  const std::string path = injectors::StateDir() + "/gate.log";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t n = write(fd, line.data(), line.size());
  (void)n;
  close(fd);
}

int Gate(GateStep step, const GateArgs& a) {
  const char* name = step == GateStep::kProlog   ? "prolog"
                     : step == GateStep::kEpilog ? "epilog"
                                                 : "health";
  const std::string node = NodeName(a);
  injectors::FaultJournal journal(a.journal_dir);
  lab::GateResult r;
  if (step == GateStep::kEpilog) {
    r = lab::RevertLeftFaults(journal, injectors::BuiltinInjectors(), a.include_live);
  } else {
    r = lab::CheckNodeHoldsNoFault(journal);
  }
  std::string action;
  bool drain_failed = false;
  if (!r.drain_reason.empty() && !a.no_drain) {
    auto d = Scontrol(a, lab::DrainArgs(node, r.drain_reason));
    if (d.ok()) {
      action = "drained " + node + " with reason \"" + r.drain_reason + "\"";
    } else {
      drain_failed = true;
      action = "could not drain " + node + ": " + d.status().ToUserString();
    }
  } else if (step == GateStep::kHealth && r.level == lab::GateLevel::kOk && !a.no_drain) {
    // A node this gate drained and that holds nothing now goes back to service; one drained
    // by anyone else is left as it is.
    auto show = Scontrol(a, {"show", "node", node});
    if (show.ok() && lab::DrainedByGate(show->out)) {
      auto res = Scontrol(a, lab::ResumeArgs(node));
      action = res.ok() ? "resumed " + node + " (it holds no fault now)"
                        : "could not resume " + node + ": " + res.status().ToUserString();
    }
  }
  std::string text = lab::FormatGateResult(r);
  if (!action.empty()) text += "  " + action + "\n";
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (r.level != lab::GateLevel::kOk || !r.details.empty() || !action.empty())
    Record(node, name, r, action);
  // Slurm drains a node whose prolog or epilog fails, with its own reason ("Prolog error"),
  // and requeues the job of a failed prolog. The prolog fails whenever the node holds a fault;
  // the epilog only when it could not say why itself (its drain failed), so that the reason
  // on the node stays the one naming the fault.
  if (step == GateStep::kProlog) return static_cast<int>(r.level == lab::GateLevel::kOk ? 0 : 2);
  if (step == GateStep::kEpilog)
    return r.level == lab::GateLevel::kCritical && (drain_failed || a.no_drain) ? 2 : 0;
  return static_cast<int>(r.level);
}

}  // namespace

void AddGateCommands(CLI::App& app, int* exit_code) {
  auto* gate = AddCommandGroup(
      app, "gate",
      "the Slurm gate of this node: slurm.conf's Prolog, Epilog and HealthCheckProgram\n"
      "(docs/operations.md, \"Slurm gate\"); Nagios levels OK 0, WARNING 1, CRITICAL 2");
  auto a = std::make_shared<GateArgs>();
  struct Step {
    const char* name;
    GateStep step;
    const char* help;
  };
  const Step steps[] = {
      {"prolog", GateStep::kProlog,
       "refuse this node while it holds a fault: drain it naming the fault and exit 2\n"
       "(Slurm then requeues the job); exit 0 when its fault journal is empty"},
      {"epilog", GateStep::kEpilog,
       "revert and verify every fault a finished job left on this node (entries whose owner\n"
       "is dead); drain the node naming any fault that could not be reverted"},
      {"health", GateStep::kHealth,
       "for HealthCheckProgram: drain this node while it holds a fault, resume a node this\n"
       "gate drained once it holds none; exit OK 0 or CRITICAL 2"},
  };
  for (const Step& s : steps) {
    auto* c = gate->add_subcommand(s.name, s.help);
    c->add_option("--journal-dir", a->journal_dir,
                  "this node's fault journal (default $FAULTLINE_STATE_DIR/journal, the "
                  "agent's)");
    c->add_option("--node", a->node,
                  "the Slurm node name (default $SLURMD_NODENAME, else the short host name)");
    c->add_option("--scontrol", a->scontrol, "scontrol to drain and resume with")
        ->capture_default_str();
    c->add_flag("--no-drain", a->no_drain, "only report: never drain or resume the node");
    if (s.step == GateStep::kEpilog)
      c->add_flag("--include-live", a->include_live,
                  "also revert faults whose owner is still alive (an agent outside the job)");
    const GateStep step = s.step;
    c->callback([a, step, exit_code] { *exit_code = Gate(step, *a); });
  }
}

}  // namespace fl::harness
