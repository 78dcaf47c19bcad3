// faultline-agent: runs on every lab host, dials in to the coordinator, starts ranks, applies
// and reverts faults under leases, and relays telemetry.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>

#include "common/build_info.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/main_guard.h"
#include "common/yaml_util.h"
#include "harness/agent/agent_runtime.h"
#include "harness/agent/agent_session.h"
#include "harness/agent/fingerprint.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/control/clear_dial.h"
#include "harness/lab/open_lab.h"
#include "injectors/journal.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int AgentMain(int argc, char** argv) {
  using namespace fl;
  log::ConfigureFromEnv();
  CLI::App app{
      "faultline-agent: the per-host side of faultline. Dials in to the coordinator over gRPC,\n"
      "starts ranks in containers, applies and reverts faults under leases (and reverts on its\n"
      "own when the coordinator goes away), and relays worker telemetry.\n\n"
      "Exit codes: 0 stopped by the coordinator or a signal, 1 lease lapsed (faults reverted),\n"
      "2 bad arguments, 3 could not register (unreachable or refused; --service keeps trying).\n"
      "A broken control stream is redialled for up to the lease and the run resumes."};
  app.set_version_flag("--version", VersionLine("faultline-agent"),
                       "print the version and git revision, and exit");
  harness::AgentSessionOptions opts;
  harness::AgentRuntimeOptions rt;
  std::string token_file, policy_file, tls_dir;
  bool no_tls = false;
  double connect_timeout_s = 10;
  bool print_fingerprint = false;
  app.add_option("--coordinator", opts.coordinator, "coordinator address host:port");
  app.add_option("--token-file", token_file, "file holding the shared authentication token")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-dir", tls_dir,
                 "mutual TLS with the lab's certificates in DIR (faultline certs): ca.crt and\n"
                 "HOST.crt/HOST.key; the coordinator must show a certificate of that CA.\n"
                 "Default on real hosts (not --lab): tls/ beside the token file")
      ->check(CLI::ExistingDirectory);
  app.add_option("--tls-server-name", opts.tls_server_name,
                 "the name the coordinator's certificate must carry (default: the host part of\n"
                 "--coordinator)");
  app.add_flag("--insecure,--no-tls", no_tls,
               "plaintext with the token only, even on real hosts (said in the log at every\n"
               "start). Without it and without --tls-dir, an agent of no site (neither --lab\n"
               "nor --inventory nor --slurm-nics) dials only loopback or a lab namespace's\n"
               "address (198.18.0.0/15)");
  app.add_option("--host", opts.host,
                 "the lab's host name this agent serves (\"fabric\" for switches)");
  lab::AddSiteFlags(app, &rt.site);
  app.add_option("--journal-dir", rt.journal_dir,
                 "fault journal directory (default $FAULTLINE_STATE_DIR/journal)");
  app.add_option("--run-dir", rt.run_dir, "directory for the workers' telemetry socket");
  app.add_option("--worker", rt.worker_binary,
                 "faultline-worker binary (default: beside this one)");
  app.add_option("--policy", policy_file, "local policy file: what this agent may do")
      ->check(CLI::ExistingFile);
  app.add_option("--connect-timeout", connect_timeout_s, "seconds to wait for the coordinator")
      ->capture_default_str();
  bool service = false;  // systemd: configs/systemd/faultline-agent@.service
  app.add_flag("--service", service,
               "keep dialling until a coordinator welcomes this agent (each try bounded by\n"
               "--connect-timeout, then 0.5 s doubling to 10 s), refusals included; exit 0\n"
               "after the run's Shutdown, for the service manager to start it again");
  harness::FingerprintOptions fp_opts;
  app.add_option("--lldp-socket", fp_opts.lldp_socket,
                 "lldpd's control socket, for each NIC's LLDP neighbour in the host facts the\n"
                 "agent reports (default lldpd's own, /run/lldpd.socket)");
  app.add_flag("--print-fingerprint", print_fingerprint,
               "print this host's environment fingerprint and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // The policy's text goes with the host facts (`faultline doctor` checks the suite with it).
  std::string policy_text;
  if (!policy_file.empty())
    if (auto t = ReadFile(policy_file); t.ok()) policy_text = *t;
  auto collect = [fp_opts, policy_file, policy_text] {
    faultline::v1::Fingerprint fp = harness::CollectFingerprint(fp_opts);
    fp.set_policy_source(policy_file);
    fp.set_policy_yaml(policy_text);
    return fp;
  };
  if (print_fingerprint) {
    std::printf("%s", collect().DebugString().c_str());
    return 0;
  }
  // Collected at each dial (the Hello carries them), not here as well.
  opts.collect_fingerprint = collect;
  opts.agent_version = VersionAndRevision();
  if (opts.host.empty()) opts.host = rt.site.DefaultHost();  // e.g. the node srun started us on
  if (opts.coordinator.empty() || token_file.empty() || opts.host.empty()) {
    std::fprintf(stderr, "faultline-agent: --coordinator, --token-file and --host are required\n");
    return 2;
  }
  rt.site.host = opts.host;
  rt.site.coordinator = opts.coordinator;
  rt.token_file = token_file;
  log::SetContext({"", opts.host, -1});
  auto token = harness::ReadTokenFile(token_file);
  if (!token.ok()) {
    FL_LOG(kError, "agent") << token.status().ToUserString();
    return 2;
  }
  opts.token = *token;
  if (!no_tls && tls_dir.empty() && rt.site.tls_by_default())
    tls_dir = harness::DefaultTlsDir(token_file);
  if (!no_tls && !tls_dir.empty()) {
    auto role = opts.host == "fabric" ? harness::CertRole::kFabricAgent : harness::CertRole::kAgent;
    auto tls = harness::LoadTlsMaterial(tls_dir, role, opts.host);
    if (!tls.ok()) {
      FL_LOG(kError, "agent") << tls.status().ToUserString();
      return 2;
    }
    opts.tls = std::move(*tls);
  }
  // No secret in clear to whatever answers: without TLS, only loopback or a lab's own
  // namespaces, unless the operator said --insecure (docs/control_plane.md, "Plaintext").
  if (!opts.tls) {
    const bool local = harness::IsLocalOrLabAddress(opts.coordinator);
    if (!rt.site.named() && !no_tls && !local) {
      Status st = harness::CheckClearDial(opts.coordinator, false, "faultline-agent");
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 2;
    }
    if (!local)
      FL_LOG(kWarn, "agent") << "--insecure: no TLS; the token goes in clear to "
                             << opts.coordinator;
  }
  // Day one: the inventory is not written yet (`faultline inventory discover` writes it from
  // what agents like this one say). Until it exists the agent serves no site: it registers,
  // says its facts, and refuses ranks and faults (it has no targets).
  if (std::error_code ec;
      !rt.site.inventory.empty() && !std::filesystem::exists(rt.site.inventory, ec)) {
    FL_LOG(kWarn, "agent") << "inventory " << rt.site.inventory
                           << " does not exist yet: answering a census only (faultline inventory"
                              " discover); restart this agent once the file is there";
    rt.site.inventory.clear();
  }
  if (std::string p = BoundsProblem("--connect-timeout (seconds)", connect_timeout_s, 0.1, 3600.0);
      !p.empty()) {
    std::fprintf(stderr, "faultline-agent: %s\n", p.c_str());
    return 2;
  }
  opts.connect_timeout_ns = static_cast<Nanos>(connect_timeout_s * 1e9);
  if (!policy_file.empty()) {
    auto p = harness::LoadAgentPolicy(policy_file);
    if (!p.ok()) {
      FL_LOG(kError, "agent") << p.status().ToUserString();
      return 2;
    }
    rt.policy = *p;
  }
  opts.max_lease_ns = rt.policy.max_lease_ns;  // the coordinator's lease is capped by it
  rt.host = opts.host;
  // A host of a lab that is not run from here: the workers' telemetry socket and the ranks'
  // logs (ranks/rank-N.log; a bad exit's tail has gone to the coordinator) live in this
  // host's state dir, removed with them when the agent exits (declared before the runtime,
  // so it goes after it).
  struct RunDirGuard {
    std::string path;
    ~RunDirGuard() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } run_dir_guard;
  if (rt.run_dir.empty() && rt.site.named()) {
    rt.run_dir = injectors::StateDir() + "/agent-" + opts.host;
    if (Status s = MakeDirs(rt.run_dir, 0700); !s.ok()) {
      FL_LOG(kError, "agent") << s.ToUserString();
      return 3;
    }
    run_dir_guard.path = rt.run_dir;
  }
  if (rt.worker_binary.empty()) rt.worker_binary = SelfExeDir() + "/faultline-worker";

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  auto runtime = harness::AgentRuntime::Create(rt);
  if (!runtime.ok()) {
    FL_LOG(kError, "agent") << "cannot start: " << runtime.status().ToString();
    return 3;
  }
  harness::AgentHandlers handlers;
  handlers.on_command = [&](const faultline::v1::CoordinatorMessage& m) {
    // The main loop ends on the session's shutdown_requested(), set once the ack is written:
    // stopping here, before the ack went out, would leave the coordinator without it.
    if (m.has_shutdown())
      FL_LOG(kInfo, "agent") << "coordinator asked to shut down: " << m.shutdown().reason();
    return (*runtime)->HandleCommand(m);
  };
  handlers.on_lease_lapsed = [&] { (*runtime)->RevertAllAndStop("lease lapsed"); };
  handlers.heartbeat = [&] { return (*runtime)->Heartbeat(); };
  auto session = service ? harness::AgentSession::ConnectUntilWelcomed(
                               opts, handlers, [] { return !g_stop.load(); })
                         : harness::AgentSession::Connect(opts, handlers);
  if (!session.ok() && service && g_stop) return 0;  // stopped while waiting for a run
  if (!session.ok()) {
    FL_LOG(kError, "agent") << "cannot register: " << session.status().ToUserString();
    return 3;
  }
  (*runtime)->AttachSession(session->get());
  while (!g_stop && !(*session)->shutdown_requested()) {
    if ((*session)->WaitEnded(Deadline::After(100 * kNsPerMs))) break;
  }
  bool lapsed = (*session)->lease_lapsed();
  (*runtime)->AttachSession(nullptr);
  (*runtime)->RevertAllAndStop(lapsed ? "lease lapsed" : "agent stopping");
  (*session)->Stop();
  if (uint64_t lost = (*session)->acks_lost(); lost > 0)
    FL_LOG(kWarn, "agent") << lost << " ack(s) could not be sent to the coordinator in all";
  return lapsed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fl::GuardedMain("faultline-agent", [&] { return AgentMain(argc, argv); });
}
