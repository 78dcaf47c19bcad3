// tc and nft through their command-line tools (iproute2, nftables), run with an argv array
// inside the target's network namespace. Rule sets are generated from validated names only.
//
// Thread-safety: stateless functions. Blocking: each call runs one tool with a 5 s deadline.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fl::injectors {

// The root qdisc of an interface, as far as faultline cares.
struct RootQdisc {
  std::string kind;       // "tbf", "noqueue", "pfifo_fast", ... ("" when none is listed)
  std::string handle;     // "0:" for the qdisc the kernel attached by default
  uint64_t rate_bps = 0;  // tbf only
  uint64_t burst_bytes = 0;
  uint64_t latency_us = 0;  // tbf only: its queue bound as tc reports it
};

// True for the kernel's default root qdisc (handle 0:, or none listed): deleting the root
// qdisc brings it back.
bool IsDefaultRoot(const RootQdisc& q);
// True when ReadRootQdisc-state q can be put back exactly by RestoreRootQdisc: the default
// or a tbf.
bool IsRestorableRoot(const RootQdisc& q);
// Same shaping within tc's rounding (1% of rate and burst): a == b as far as revert goes.
bool SameRoot(const RootQdisc& a, const RootQdisc& b);

StatusOr<RootQdisc> ReadRootQdisc(const std::string& netns, const std::string& ifname);
// Replaces the root qdisc with tbf. limit_bytes 0: latency_us as the bound (0: 50 ms).
Status SetTbf(const std::string& netns, const std::string& ifname, uint64_t rate_bps,
              uint64_t burst_bytes, uint64_t limit_bytes = 0, uint64_t latency_us = 0);
// Single-root view (a tbf or the default only). The injectors restore whole trees with
// RestoreQdiscTree below; this stays for callers that only ever see a tbf root.
// Restores a qdisc read with ReadRootQdisc: tbf is re-created with its rate, burst and
// latency; the default means the root qdisc is deleted (a missing one is fine). Anything else
// is FailedPrecondition (callers refuse such a link before they change it).
Status RestoreRootQdisc(const std::string& netns, const std::string& ifname, const RootQdisc& q);

// The whole egress qdisc tree of an interface, for faults that replace the root qdisc and must
// put back exactly what was there. Real NICs have an `mq` root with one child per tx queue
// (pfifo_fast, fq_codel, ...), not a single qdisc. Ingress-side qdiscs (ingress, clsact) are
// not part of it: faultline never replaces them.
struct QdiscNode {
  std::string kind;
  std::string handle;  // as tc prints it: "1:", "0:" for a qdisc the kernel attached by default
  std::string parent;  // "root", or the class it hangs from ("1:3"; ":3" under a default mq)
  nlohmann::json options = nlohmann::json::object();  // tc -j's "options", as printed
};

struct QdiscTree {
  // Root first, then the children sorted by parent. Empty: a default tree whose details are
  // unknown (a journal entry written before trees were recorded).
  std::vector<QdiscNode> nodes;
};

// Pure: the tree in `tc -j qdisc show dev ifname` output. InvalidArgument for output that is
// not a JSON array.
StatusOr<QdiscTree> ParseQdiscTree(std::string_view tc_json, const std::string& ifname);
StatusOr<QdiscTree> ReadQdiscTree(const std::string& netns, const std::string& ifname);

// True when the root is the one the kernel attaches by default (handle 0:, or none), with
// nothing configured below it: deleting whatever root replaced it brings it back.
bool IsDefaultTree(const QdiscTree& tree);
// OK when RestoreQdiscTree can recreate tree exactly: the default tree, or a root of a kind
// faultline knows how to recreate (tbf, pfifo, bfifo, pfifo_fast, fq_codel) with only options it
// can pass back, or an mq root (default or configured) whose per-queue children are such
// qdiscs. Anything else (htb with classes, netem, nested children, an option it does not know)
// is FailedPrecondition naming the interface, the qdisc kind and handle: callers refuse such a
// link before they change anything.
Status CheckRestorableTree(const QdiscTree& tree, const std::string& ifname);
// Pure: the tc commands (argv, each starting with "tc") that rebuild prior once its root has
// been deleted (the kernel default is then in place): empty for the default tree.
StatusOr<std::vector<std::vector<std::string>>> RestoreTreeCommands(const std::string& ifname,
                                                                    const QdiscTree& prior);
// Puts prior back: nothing when the tree already equals it; otherwise the current root is
// deleted (the kernel re-attaches its default) and the commands above recreate the rest.
Status RestoreQdiscTree(const std::string& netns, const std::string& ifname,
                        const QdiscTree& prior);
// Same kinds, handles, parents and options (tbf rate, burst and latency within tc's rounding:
// 1%). why (optional) gets the first difference. An empty (unknown default) tree equals any
// default tree.
bool SameTree(const QdiscTree& a, const QdiscTree& b, std::string* why = nullptr);
std::string DescribeTree(const QdiscTree& tree);  // "mq 1: root; pfifo 12: parent 1:2 ..."

nlohmann::json TreeToJson(const QdiscTree& tree);
// Lenient (journal data): a member of the wrong type reads as empty.
QdiscTree TreeFromJson(const nlohmann::json& json);

// Loads a ruleset (nft -f -) in netns.
Status NftApply(const std::string& netns, const std::string& ruleset);
// Deletes a table; a missing table (or namespace) is fine: deletion is idempotent.
Status NftDeleteTable(const std::string& netns, const std::string& family,
                      const std::string& table);
StatusOr<bool> NftTableExists(const std::string& netns, const std::string& family,
                              const std::string& table);

}  // namespace fl::injectors
