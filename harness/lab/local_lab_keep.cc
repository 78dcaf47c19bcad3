// LocalLab kept up across runs (lab.h, Lab::UseRunningLab): a run on a lab it did not build
// checks that the lab is as it was built, by the fingerprint of its namespaces, and leaves it
// up afterwards. A sweep (harness/suite/sweep_runner.h) builds one lab and runs every point on
// it.
#include <algorithm>
#include <sstream>

#include "common/narrate.h"
#include "harness/lab/local_lab.h"
#include "harness/lab/local_lab_internal.h"
#include "injectors/sys.h"

namespace fl::lab {

using local_internal::kToolTimeout;

namespace {

StatusOr<std::string> ToolOutput(const std::vector<std::string>& argv, const std::string& netns,
                                 const std::string& stdin_data = "") {
  injectors::CommandOptions o;
  o.netns = netns;
  o.timeout = kToolTimeout;
  o.stdin_data = stdin_data;
  return injectors::RunChecked(argv, o);
}

// The first line where a and b differ, both shown ("(none)" past an end).
std::string FirstDifference(const std::string& was, const std::string& now) {
  std::istringstream a(was), b(now);
  std::string la, lb, section;
  for (;;) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) return "";
    if (ga && gb && la == lb) {
      if (la.rfind("## ", 0) == 0) section = la.substr(3);
      continue;
    }
    return (section.empty() ? "" : section + ": ") + "now '" + (gb ? lb : "(none)") +
           "', built with '" + (ga ? la : "(none)") + "'";
  }
}

}  // namespace

StatusOr<std::string> LocalLab::StateFingerprint() const {
  std::vector<const NodeObj*> nodes;
  for (const auto& n : plan_.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeObj* a, const NodeObj* b) { return a->netns < b->netns; });
  std::string out;
  for (const NodeObj* n : nodes) {
    // One `ip` for links and addresses, one `tc`, one `nft` per namespace; the commands run
    // inside the namespace (no -n), so names print as the namespace sees them.
    FL_ASSIGN_OR_RETURN(std::string ip, ToolOutput({"ip", "-o", "-batch", "-"}, n->netns,
                                                   "link show\naddr show\n"));
    FL_ASSIGN_OR_RETURN(std::string tc, ToolOutput({"tc", "qdisc", "show"}, n->netns));
    FL_ASSIGN_OR_RETURN(std::string nft, ToolOutput({"nft", "list", "ruleset"}, n->netns));
    // IPv6 link-local addresses pass through duplicate address detection ("tentative") for a
    // while after the lab is built: not part of what a fault changes, so not compared.
    std::string kept;
    std::istringstream lines(ip);
    for (std::string line; std::getline(lines, line);)
      if (line.find(" inet6 ") == std::string::npos) kept += line + "\n";
    ip = std::move(kept);
    out += "## " + n->name + " links\n" + ip + "## " + n->name + " qdiscs\n" + tc + "## " +
           n->name + " nftables\n" + nft;
  }
  return out;
}

Status LocalLab::CheckClean() const {
  if (clean_fingerprint_.empty())
    return FailedPreconditionError("lab " + plan_.lab +
                                   " has no record of how it was built (made by an older "
                                   "faultline?): `faultline lab down " +
                                   plan_.lab + "` and build it again");
  FL_ASSIGN_OR_RETURN(std::string now, StateFingerprint());
  std::string diff = FirstDifference(clean_fingerprint_, now);
  if (diff.empty()) return OkStatus();
  return FailedPreconditionError("lab " + plan_.lab + " is not as it was built (" + diff +
                                 "): something an earlier run did is still there");
}

Status LocalLab::UseRunningLab(const std::string& name) {
  FL_ASSIGN_OR_RETURN(std::unique_ptr<LocalLab> up, LocalLab::Open(name));
  if (up->topology_.text != topology_.text)
    return FailedPreconditionError("lab " + name + " was built from " + up->topology_.source +
                                   ", not from this run's lab " + topology_.source);
  plan_ = up->plan_;
  mgmt_index_ = up->mgmt_index_;
  clean_fingerprint_ = up->clean_fingerprint_;
  attached_ = true;
  {
    std::lock_guard<std::mutex> lock(sw_mu_);
    sw_cache_.clear();
  }
  return OkStatus();
}

}  // namespace fl::lab
