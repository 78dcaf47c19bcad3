// The environment every rank of a job gets: the CCL's default environment (declared by its
// plug-in, ccl_under_test/api/ccl_plugin.h; nccl: NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT,
// NCCL_SOCKET_IFNAME from the lab's NICs, ...) under the scenario's job.env (job.env wins).
// The run driver passes it to the ranks and stores it as tags env.NAME=VALUE; the timeout lint
// and the fingerprint read it.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>

#include "ccl_under_test/api/ccl_plugin.h"
#include "harness/scenario/scenario.h"

namespace fl::harness {

std::map<std::string, std::string> EffectiveJobEnv(const Scenario& scenario,
                                                   const ccl::CclEnvContext& lab = {});

// Where an effective variable came from: "job.env", "the <ccl> default env", or "" when it is
// not set (the library's built-in default applies).
std::string JobEnvSource(const Scenario& scenario, const std::string& name,
                         const ccl::CclEnvContext& lab = {});

}  // namespace fl::harness
