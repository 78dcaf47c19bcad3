// The Slurm gate's decisions over a node's fault journal (node_gate.h): pure apart from the
// journal and, in the epilog, the injectors' reverts. Running scontrol is the caller's.
#include "harness/lab/node_gate.h"

#include <unistd.h>

#include <sstream>

#include "common/process.h"
#include "injectors/journal_recovery.h"

namespace fl::lab {
namespace {

std::string Describe(const injectors::JournalEntry& e) {
  return e.handle.id + " (" + e.handle.spec.kind + " on " + e.handle.spec.target + ")";
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// kDrainPrefix + text, cut to kMaxDrainReason bytes at a word where it must be cut.
std::string DrainReason(const std::string& text) {
  std::string r = std::string(kDrainPrefix) + text;
  for (char& c : r)
    if (c == '\n' || c == '\r' || c == '"') c = ' ';
  if (r.size() <= kMaxDrainReason) return r;
  r.resize(kMaxDrainReason - 3);
  auto space = r.rfind(' ');
  if (space != std::string::npos && space > kMaxDrainReason / 2) r.resize(space);
  return r + "...";
}

std::string Join(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// The entries' descriptions by id, for naming what the recovery did.
std::string DescribeId(const std::vector<injectors::JournalEntry>& entries, const std::string& id) {
  for (const auto& e : entries)
    if (e.handle.id == id) return Describe(e);
  return id;
}

// "id: error" -> the id (journal ids hold no ':').
std::string IdOf(const std::string& id_colon_error) {
  return id_colon_error.substr(0, id_colon_error.find(':'));
}

}  // namespace

const char* GateLevelName(GateLevel level) {
  switch (level) {
    case GateLevel::kOk:
      return "OK";
    case GateLevel::kWarning:
      return "WARNING";
    case GateLevel::kCritical:
      return "CRITICAL";
  }
  return "UNKNOWN";
}

GateResult CheckNodeHoldsNoFault(const injectors::FaultJournal& journal) {
  GateResult r;
  std::vector<std::string> errors;
  std::vector<injectors::CorruptEntry> corrupt;
  auto entries = journal.List(&errors, &corrupt);
  if (!entries.ok()) {
    r.level = GateLevel::kCritical;
    r.summary =
        "cannot read the fault journal " + journal.dir() + ": " + entries.status().ToUserString();
    r.drain_reason = DrainReason("cannot read the fault journal " + journal.dir());
    return r;
  }
  std::vector<std::string> held;
  for (const auto& e : *entries) {
    const bool alive = e.owner_pid == getpid() || ProcessAlive(e.owner_pid, e.owner_start);
    r.details.push_back("holds " + Describe(e) + ", " + e.phase + ", owner pid " +
                        std::to_string(e.owner_pid) + (alive ? " (alive)" : " (dead)"));
    held.push_back(Describe(e));
  }
  for (const auto& c : corrupt) {
    r.details.push_back("corrupt journal entry " + c.error);
    held.push_back("a corrupt journal entry " + c.path);
  }
  for (const auto& e : errors) {
    r.details.push_back("unreadable journal entry " + e);
    held.push_back("an unreadable journal entry");
  }
  if (held.empty()) {
    r.summary = "no fault held (journal " + journal.dir() + ")";
    return r;
  }
  r.level = GateLevel::kCritical;
  r.summary = "node holds " + Plural(held.size(), "fault", "faults") + ": " + Join(held, ", ") +
              "; run `faultline gate epilog` or `faultline lab recover` on it";
  r.drain_reason = DrainReason("holds " + Join(held, ", "));
  return r;
}

GateResult RevertLeftFaults(injectors::FaultJournal& journal,
                            const injectors::InjectorRegistry& registry, bool include_live) {
  GateResult r;
  // What each id was, read before the recovery removes it.
  std::vector<injectors::JournalEntry> before;
  if (auto l = journal.List(); l.ok()) before = std::move(*l);
  injectors::RecoveryReport rep = injectors::RecoverDeadFaults(journal, registry, include_live);
  for (const auto& id : rep.reverted)
    r.details.push_back("reverted " + DescribeId(before, id) + ", verified");
  for (const auto& g : rep.gone)
    r.details.push_back("removed " + DescribeId(before, IdOf(g)) + ": everything it held is gone");
  for (const auto& id : rep.skipped)
    r.details.push_back("left " + DescribeId(before, id) + " to its owner, which is alive");
  std::vector<std::string> bad;
  for (const auto& f : rep.failed) {
    r.details.push_back("could not revert " + f);
    bad.push_back("could not revert " + DescribeId(before, IdOf(f)) + ":" +
                  f.substr(std::min(f.size(), IdOf(f).size() + 1)));
  }
  for (const auto& c : rep.corrupt) {
    r.details.push_back("corrupt journal entry " + c);
    bad.push_back("corrupt journal entry " + c.substr(0, c.find(':')));
  }
  const size_t done = rep.reverted.size() + rep.gone.size();
  if (!bad.empty()) {
    r.level = GateLevel::kCritical;
    r.summary = Join(bad, "; ") +
                (done ? " (" + Plural(done, "other fault", "other faults") + " reverted)" : "");
    r.drain_reason = DrainReason(Join(bad, "; "));
  } else if (!rep.skipped.empty()) {
    r.level = GateLevel::kWarning;
    r.summary = Plural(rep.skipped.size(), "fault is", "faults are") +
                " held by a live owner and left to it" +
                (done ? "; " + Plural(done, "fault", "faults") + " reverted" : "");
  } else if (done) {
    r.summary = "reverted " + Plural(done, "fault", "faults") + " left on the node";
  } else {
    r.summary = "no fault left on the node";
  }
  return r;
}

std::string FormatGateResult(const GateResult& result) {
  std::ostringstream s;
  s << "FAULTLINE " << GateLevelName(result.level) << " - " << result.summary << "\n";
  for (const auto& d : result.details) s << "  " << d << "\n";
  return s.str();
}

std::vector<std::string> DrainArgs(const std::string& node, const std::string& reason) {
  return {"update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
}

std::vector<std::string> ResumeArgs(const std::string& node) {
  return {"update", "NodeName=" + node, "State=RESUME"};
}

bool DrainedByGate(const std::string& show) {
  bool drained = false;
  std::istringstream words(show);
  std::string w;
  while (words >> w) {
    if (w.rfind("State=", 0) == 0) drained = w.find("DRAIN") != std::string::npos;
  }
  auto at = show.find("Reason=");
  if (at == std::string::npos) return false;
  return drained && show.compare(at + 7, std::string(kDrainPrefix).size(), kDrainPrefix) == 0;
}

}  // namespace fl::lab
