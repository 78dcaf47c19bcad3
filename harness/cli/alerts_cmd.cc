// `faultline alerts receive`: an Alertmanager webhook receiver that writes every notification
// to an alerts file for `faultline score` (harness/alerts/receiver.h, docs/detectors.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <thread>

#include "common/units.h"
#include "harness/alerts/receiver.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/suite/suite_runner.h"

namespace fl::harness {
namespace {

struct ReceiveArgs {
  std::string listen = "127.0.0.1:9095", out, run_for;
};

Status Receive(const ReceiveArgs& a) {
  alerts::ReceiverOptions o;
  o.listen = a.listen;
  o.out_path = a.out;
  std::optional<Nanos> limit;
  if (!a.run_for.empty()) {
    FL_ASSIGN_OR_RETURN(Nanos d, ParseDurationFlag("--for", a.run_for));
    limit = d;
  }
  suite::StopOnSignals stop;  // SIGINT, SIGTERM (harness/suite/suite_runner.h)
  FL_ASSIGN_OR_RETURN(auto receiver, alerts::AlertReceiver::Start(o));
  std::fprintf(stderr,
               "faultline alerts: listening on %s (port %d), notifications to %s; Ctrl-C "
               "stops\n",
               a.listen.c_str(), receiver->port(), a.out.c_str());
  const Deadline until = Deadline::After(limit.value_or(365LL * 24 * 3600 * kNsPerSec));
  size_t said = 0;
  while (!until.Expired() && !suite::StopOnSignals::Requested()) {
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<Nanos>(until.Remaining(), 200 * kNsPerMs)));
    if (size_t n = receiver->received(); n != said) {
      std::fprintf(stderr, "faultline alerts: %zu notification(s) written\n", n);
      said = n;
    }
  }
  receiver->Stop();
  std::fprintf(stderr, "faultline alerts: stopped; %zu notification(s) in %s\n",
               receiver->received(), a.out.c_str());
  return OkStatus();
}

}  // namespace

void AddAlertsCommands(CLI::App& app, int* exit_code) {
  auto* alerts =
      AddCommandGroup(app, "alerts", "alerts of detectors under test (docs/detectors.md)");
  auto a = std::make_shared<ReceiveArgs>();
  auto* c = alerts->add_subcommand("receive", HelpText(R"(
receive Alertmanager webhook notifications (a webhook_config's url:
http://ADDR:PORT/) and append each, one JSON line, to --out, the file
`faultline score --alerts` reads; runs until Ctrl-C or --for. Exit 0 stopped, 2 bad
input, 3 cannot listen or write)"));
  c->add_option("--out", a->out, "the alerts file (appended to; created 0600)")->required();
  c->add_option("--listen", a->listen, "address to listen on, HOST:PORT (loopback by default)")
      ->capture_default_str();
  c->add_option("--for", a->run_for, "stop after this long (e.g. 10min)");
  RunStatusAfterParse(c, a, exit_code, "alerts", Receive);
}

}  // namespace fl::harness
