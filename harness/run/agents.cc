#include "harness/run/agents.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "common/file_util.h"
#include "common/log.h"
#include "common/narrate.h"
#include "common/units.h"
#include "harness/control/auth.h"
#include "harness/coordinator/fan_out.h"
#include "reports/store/fingerprint_tags.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

namespace {

// The control plane: agents dial in at listen (port 0: the kernel's choice) with token.
Status StartControlServer(RunContext& run, Progress& progress, const std::string& listen,
                          const std::string& token) {
  ControlServerOptions so;
  so.listen_address = listen;
  so.token = token;
  so.run_id = run.ids.run_id;
  so.lease_ns = run.prepared.opts.lease_ns;
  // The fleet's pace (control_server.h): the small-lab pace up to 250 agents, fewer messages
  // per agent beyond.
  const FleetPace pace =
      PaceForFleet(run.prepared.lab->agent_names().size(), run.prepared.opts.lease_ns);
  so.heartbeat_interval_ns = std::max<Nanos>(pace.heartbeat_interval_ns, 50 * kNsPerMs);
  so.agent_heartbeat_interval_ns = so.heartbeat_interval_ns;
  so.agent_telemetry_interval_ns = pace.telemetry_interval_ns;
  so.tls = run.session.tls;
  FL_ASSIGN_OR_RETURN(run.session.server, ControlServer::Start(so));
  run.session.server->SetTelemetryHandler(
      [&run, &progress](const std::string& h, const pb::TelemetryBatch& b) {
        OnTelemetry(run, progress, h, b);
      });
  return OkStatus();
}

// The lab starts its agents (or they start themselves and dial in); wait for all of them, in
// slices so that Ctrl-C during a long wait is answered at once.
Status AwaitAgents(RunContext& run) {
  Session& session = run.session;
  lab::Lab& lab = *run.prepared.lab;
  session.agent_hosts = lab.agent_names();
  const Nanos wait = lab.agent_wait();
  Narrate("[agents] waiting up to %.0f s for %zu agents to dial in at %s",
          static_cast<double>(wait) / 1e9, session.agent_hosts.size(),
          session.server->address().c_str());
  Deadline end = Deadline::After(wait);
  for (;;) {
    Status st = session.server->WaitForAgents(session.agent_hosts, Deadline::After(200 * kNsPerMs));
    if (st.ok() || Interrupted()) return st;
    if (auto lost = lab.PollLostAgent())
      return UnavailableError("agent " + lost->name + " ended before it registered (" + lost->how +
                              ")");
    if (end.Expired()) {
      std::string missing;
      for (const auto& h : session.agent_hosts)
        if (!session.server->Agent(h).ok()) missing += (missing.empty() ? "" : ", ") + h;
      return UnavailableError("no agent dialled in from " + missing + " within " +
                              FormatDuration(wait) + " (lab " + lab.source() + ")");
    }
  }
}

// Clock offsets and fingerprints of the registered agents, into the store.
Status RegisterAgents(RunContext& run) {
  Session& session = run.session;
  std::vector<reports::HostRecord> registered;
  nlohmann::json nccl_env = nlohmann::json::object();  // the same for every host
  for (const auto& [k, v] : run.prepared.JobEnv())
    if (k.rfind("NCCL_", 0) == 0) nccl_env[k] = v;
  std::mutex clocks_mu;
  std::map<std::string, ClockOffset> clocks;
  FL_RETURN_IF_ERROR(FirstError(FanOut(
      session.agent_hosts, kFanOutWidth,
      [&](const std::string& host) -> Status {
        FL_ASSIGN_OR_RETURN(ClockOffset off,
                            session.server->SyncClock(host, 5, Deadline::After(5 * kNsPerSec)));
        std::lock_guard lock(clocks_mu);
        clocks[host] = off;
        return OkStatus();
      },
      Deadline::After(60 * kNsPerSec))));
  for (const auto& host : session.agent_hosts) {
    const ClockOffset off = clocks.at(host);
    session.offsets[host] = off;
    FL_ASSIGN_OR_RETURN(AgentInfo info, session.server->Agent(host));
    reports::HostRecord hr;
    hr.run_id = run.ids.run_id;
    hr.name = host;
    hr.address = info.peer;
    hr.clock_offset_ns = off.offset_ns;
    hr.clock_uncertainty_ns = off.uncertainty_ns;
    nlohmann::json fp = {
        {"kernel", info.fingerprint.kernel()},
        {"ccl_build", info.fingerprint.ccl_build()},
        {"cuda_driver", info.fingerprint.cuda_driver()},
        {"gpus",
         std::vector<std::string>(info.fingerprint.gpus().begin(), info.fingerprint.gpus().end())},
        {"rdma_devices", std::vector<std::string>(info.fingerprint.rdma_devices().begin(),
                                                  info.fingerprint.rdma_devices().end())}};
    nlohmann::json nics = nlohmann::json::array();
    for (const auto& n : info.fingerprint.nics())
      nics.push_back({{"name", n.name()},
                      {"driver", n.driver()},
                      {"firmware", n.firmware()},
                      {"mac", n.mac()},
                      {"speed_mbps", n.speed_mbps()}});
    fp["nics"] = nics;
    // NCCL: its version where the host has one (absent otherwise), and the NCCL_* variables
    // the ranks get.
    if (!info.fingerprint.nccl_version().empty())
      fp["nccl_version"] = info.fingerprint.nccl_version();
    if (!nccl_env.empty()) fp["nccl_env"] = nccl_env;
    hr.fingerprint_json = fp.dump();
    FL_RETURN_IF_ERROR(run.results.store->PutHost(hr));
    registered.push_back(std::move(hr));
  }
  // Firmware A/B without hand tagging: tags from what the hosts report (fw, nic.driver,
  // kernel, ...); a tag given with --tag wins.
  for (const auto& [k, v] : reports::FingerprintTags(registered))
    if (!run.prepared.opts.tags.count(k))
      FL_RETURN_IF_ERROR(run.results.store->SetTag(run.ids.run_id, k, v));
  return OkStatus();
}

}  // namespace

Status StartAgents(RunContext& run, Progress& progress) {
  const RunOptions& opts = run.prepared.opts;
  lab::Lab& lab = *run.prepared.lab;
  Session& session = run.session;
  const lab::LabRun lab_run = run.ids.LabRun(opts);
  FL_RETURN_IF_ERROR(MakeDirs(run.ids.run_dir, 0700));
  FL_ASSIGN_OR_RETURN(lab::ControlPlane control, lab.Control(lab_run));
  if (!control.tls_dir.empty()) {
    FL_ASSIGN_OR_RETURN(session.tls, LoadTlsMaterial(control.tls_dir, CertRole::kCoordinator, ""));
  }
  FL_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(control.token_file));
  FL_RETURN_IF_ERROR(StartControlServer(run, progress, control.listen, token));
  const lab::Rendezvous rdv = lab.RendezvousFor(lab_run);
  if (rdv.kind == lab::Rendezvous::Kind::kDirectory) {
    FL_RETURN_IF_ERROR(MakeDirs(rdv.dir, 0700));
    session.store_spec = rdv.dir;
  } else {
    FL_ASSIGN_OR_RETURN(session.rendezvous, ccl::TcpStoreServer::Start(rdv.listen, token));
    session.store_spec = "tcp://" + session.rendezvous->address();
    Narrate("[rendezvous] ranks meet through the TCP store at %s",
            session.rendezvous->address().c_str());
  }
  lab::AgentLaunch launch;
  launch.coordinator = session.server->address();
  launch.token_file = control.token_file;
  launch.run_id = run.ids.run_id;
  launch.run_dir = run.ids.run_dir;
  // Absolute: the process layer runs programs only from absolute paths.
  launch.bin_dir =
      opts.bin_dir.empty() ? SelfExeDir() : std::filesystem::absolute(opts.bin_dir).string();
  launch.policy_path = opts.policy_path;
  launch.lease_ns = opts.lease_ns;
  FL_RETURN_IF_ERROR(lab.StartAgents(launch));
  FL_RETURN_IF_ERROR(AwaitAgents(run));
  return RegisterAgents(run);
}

// An agent that ended on its own (crash, kill -9). A lab that could revert its faults from
// its journal (the local lab: the same machine) did; the faults it held are recorded as
// reverted (verified when the journal's revert was).
std::optional<std::string> LostAgent(RunContext& run, FaultBook& book) {
  lab::Lab* lab = run.prepared.lab.get();
  if (auto lost = lab ? lab->PollLostAgent() : std::nullopt) {
    const std::string& host = lost->name;
    run.session.lost_hosts.insert(host);
    book.RevertedFromJournal(host, lost->reverted);
    run.Event("agent_lost", {{"host", host},
                             {"how", lost->how},
                             {"reverted_from_journal", lost->reverted},
                             {"revert_failed", lost->failed}});
    FL_LOG(kWarn, "coord") << "agent " << host << " ended (" << lost->how << "); reverted "
                           << lost->reverted.size() << " fault(s) from the journal";
    for (const auto& e : lost->failed)
      std::fprintf(stderr, "faultline run: could not revert from the journal: %s\n", e.c_str());
    return host + " (" + lost->how + ")";
  }
  // An agent that dialled in (no process of the lab's) is lost when the control plane has had
  // no session from it for a lease, or a restarted instance claimed its host
  // (control_server.h). Its own lease makes it revert what it holds; calls to it fail fast.
  while (run.session.server) {
    auto lost = run.session.server->TakeLostAgent();
    if (!lost) break;
    if (!run.session.lost_hosts.insert(lost->host).second)
      continue;  // its process was reported already
    run.Event("agent_lost", {{"host", lost->host}, {"how", lost->reason}});
    return lost->host + " (" + lost->reason + ")";
  }
  return std::nullopt;
}

}  // namespace fl::harness::run
