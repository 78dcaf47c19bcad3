// faultline-agent: runs on every lab host, dials in to the coordinator, starts ranks, applies
// and reverts faults under leases, and relays telemetry.
#include <CLI/CLI.hpp>

#include <csignal>

#include "common/log.h"
#include "harness/agent/agent_session.h"
#include "harness/agent/fingerprint.h"
#include "harness/control/auth.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  using namespace fl;
  log::ConfigureFromEnv();
  CLI::App app{
      "faultline-agent: the per-host side of faultline. Dials in to the coordinator over gRPC,\n"
      "starts ranks in containers, applies and reverts faults under leases (and reverts on its\n"
      "own when the coordinator goes away), and relays worker telemetry.\n\n"
      "Exit codes: 0 stopped by the coordinator or a signal, 1 lease lapsed (faults reverted),\n"
      "2 bad arguments, 3 could not register (unreachable or refused)."};
  harness::AgentSessionOptions opts;
  std::string token_file;
  double connect_timeout_s = 10;
  app.add_option("--coordinator", opts.coordinator, "coordinator address host:port")->required();
  app.add_option("--token-file", token_file, "file holding the shared authentication token")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--host", opts.host, "the topology host name this agent serves")->required();
  app.add_option("--connect-timeout", connect_timeout_s, "seconds to wait for the coordinator")
      ->capture_default_str();
  bool print_fingerprint = false;
  app.add_flag("--print-fingerprint", print_fingerprint,
               "print this host's environment fingerprint and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  log::SetContext({"", opts.host, -1});
  opts.fingerprint = harness::CollectFingerprint();
  if (print_fingerprint) {
    std::printf("%s", opts.fingerprint.DebugString().c_str());
    return 0;
  }
  auto token = harness::ReadTokenFile(token_file);
  if (!token.ok()) {
    FL_LOG(kError, "agent") << token.status().ToUserString();
    return 2;
  }
  opts.token = *token;
  opts.connect_timeout_ns = static_cast<Nanos>(connect_timeout_s * 1e9);

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::atomic<bool> shutdown{false};
  harness::AgentHandlers handlers;
  handlers.on_command = [&](const faultline::v1::CoordinatorMessage& m) {
    faultline::v1::Ack ack;
    if (m.has_shutdown()) {
      FL_LOG(kInfo, "agent") << "coordinator asked to shut down: " << m.shutdown().reason();
      shutdown = true;
      ack.set_ok(true);
      return ack;
    }
    ack.set_ok(false);
    ack.set_error_code(static_cast<int>(Code::kFailedPrecondition));
    ack.set_error("this agent does not run ranks or faults yet");
    return ack;
  };
  handlers.on_lease_lapsed = [] {};
  auto session = harness::AgentSession::Connect(opts, handlers);
  if (!session.ok()) {
    FL_LOG(kError, "agent") << "cannot register: " << session.status().ToUserString();
    return 3;
  }
  while (!g_stop && !shutdown) {
    if ((*session)->WaitEnded(Deadline::After(100 * kNsPerMs))) break;
  }
  bool lapsed = (*session)->lease_lapsed();
  (*session)->Stop();
  return lapsed ? 1 : 0;
}
