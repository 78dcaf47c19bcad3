// Run tags from the hosts' fingerprints, so firmware A/B needs no hand tagging: `faultline
// compare tag:fw=22.39 tag:fw=22.41` selects runs by what the hosts really ran.
//
// Tags (docs/store.md): nic.driver, nic.firmware (and its short name fw), kernel, ccl_build,
// nccl (NCCL's version, where a host has one). A value the hosts agree on is that value;
// differing values are listed sorted and comma-separated ("22.39,22.41"); empty values are
// left out, and a tag none of the hosts has is absent.
//
// Thread-safety: pure function.
#pragma once

#include <map>
#include <span>
#include <string>

#include "reports/store/records.h"

namespace fl::reports {

std::map<std::string, std::string> FingerprintTags(std::span<const HostRecord> hosts);

}  // namespace fl::reports
