// The census of a fleet's agents without a run: `faultline inventory discover` (its facts)
// and `faultline doctor` (each agent reachable, its version, its clock). A control server
// listens where the agents dial (the inventory's coordinator.listen, with its token and TLS);
// each agent that registers says what it is in its Hello (version, host facts: NICs, GPUs,
// LLDP neighbours, harness/agent/fingerprint.h); its clock is probed as a run's would be
// (5 probes, clock_sync.h); then it is sent Shutdown, so that an agent run by its service
// (--service) exits 0 and is started again for the next run. Nothing on the hosts is touched.
//
// Thread-safety: one call at a time. Blocking: up to options.wait for the agents, then up to
// 10 s per host for the clock probes and the Shutdown (hosts in parallel).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/control/certs.h"
#include "harness/control/clock_sync.h"
#include "harness/lab/inventory_discovery.h"

namespace fl::harness::suite {

struct CensusOptions {
  std::string listen;  // "IP:PORT" where the agents dial
  std::string token;
  std::optional<TlsMaterial> tls;  // unset: plaintext, token only
  std::vector<std::string> hosts;  // the agents waited for (others that dial in are counted too)
  Nanos wait = 60 * kNsPerSec;
  // Progress lines ("[census] ..."): where they go; unset: stderr.
  std::function<void(const std::string&)> progress;
};

struct CensusHost {
  std::string host;
  bool seen = false;
  lab::HostFacts facts;  // from its Hello (empty when not seen)
  std::optional<ClockOffset> clock;
  std::string clock_error;  // why the clock could not be measured
};

struct Census {
  std::vector<CensusHost> hosts;     // options.hosts in order, then any other that registered
  std::vector<std::string> missing;  // of options.hosts: no agent dialled in within the wait

  std::vector<lab::HostFacts> SeenFacts() const;
};

// Unavailable when the control server cannot listen there. Hosts that do not dial in are
// `missing`, not an error.
StatusOr<Census> TakeCensus(const CensusOptions& options);

}  // namespace fl::harness::suite
