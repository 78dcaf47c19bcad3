// The factory over the lab contract (lab.h): the kinds of lab, each saying in its entry what
// file it claims, how it opens, which agent flags name its site and how that opens, and what
// a dead coordinator may have left of it on this machine. OpenLab reads and parses a lab file
// once and asks the kinds in order; OpenSite does the same for an agent's flags. This file
// and open_lab.cc are the only ones outside a kind's own files that name a kind.
//
// Thread-safety: the table is immutable; the functions are as thread-safe as the kinds.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "harness/lab/lab.h"

namespace CLI {
class App;
}

namespace fl {
class YamlDoc;
}  // namespace fl

namespace fl::lab {

struct LabKind {
  std::string_view name;     // as Lab::kind() says it: "local", "inventory", "slurm"
  std::string_view summary;  // one line for --help and docs
  // Whether a parsed lab file (or a scenario's inline section) is this kind's.
  bool (*claims)(const YamlDoc& doc);
  // Opens the lab (nothing is provisioned); lab_name names a local lab's objects.
  StatusOr<std::unique_ptr<Lab>> (*open)(const YamlDoc& doc, const std::string& lab_name);
  // Whether an agent's flags name a site of this kind, and opening it (`mgmt`: the interface
  // that routes to the coordinator, never a target).
  bool (*names_site)(const SiteOptions& options);
  StatusOr<std::unique_ptr<Site>> (*open_site)(const SiteOptions& options, const std::string& host,
                                               const std::string& mgmt);
  // Removes what a dead coordinator left of a lab of this kind named lab_name on this
  // machine; false when there was nothing. Null: the kind leaves nothing on this machine.
  StatusOr<bool> (*remove_leftovers)(const std::string& lab_name);
};

// The kinds, in the order OpenLab asks them (the last claims whatever the others do not).
const std::vector<LabKind>& LabKinds();

// Where a lab comes from: a topology or an inventory file (told apart by their keys), or a
// scenario's inline `lab: {slurm: {...}}` section.
struct LabSource {
  std::string path;        // the file; for an inline section, the scenario's
  std::string text;        // its text; empty: read from path
  std::string slurm_yaml;  // or: the inline slurm section, as YAML text
  std::string where;       // file:line:col of the scenario's lab section, for errors
};

// Opens the lab (nothing is provisioned): the first kind that claims the parsed file opens
// it (LocalLab for a topology, InventoryLab for an inventory, SlurmLab for an inventory with
// `launcher: slurm` or an inline slurm section). The text is parsed once. Errors are
// InvalidArgument "FILE:LINE:COL: ..."; nothing outside the process is touched.
StatusOr<std::unique_ptr<Lab>> OpenLab(const LabSource& source, const std::string& lab_name);

// Every kind's leftovers of a lab named lab_name removed (see LabKind::remove_leftovers);
// true when any kind found some.
StatusOr<bool> RemoveLeftoverLab(const std::string& lab_name);

// The command-line flags that say where an agent runs (--lab, --inventory, --slurm-nics,
// --slurm-ranks), added to the agent's CLI11 app.
void AddSiteFlags(CLI::App& app, SiteOptions* options);

// Opens the site the options name; InvalidArgument when they name none or two.
StatusOr<std::unique_ptr<Site>> OpenSite(const SiteOptions& options);

}  // namespace fl::lab
