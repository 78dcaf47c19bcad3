// `faultline serve`: the results server (reports/serve/results_site.h, docs/serve.md) over
// HTTP (harness/alerts/http_server.h): read-only on the store, loopback by default.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "harness/alerts/http_server.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/control/certs.h"
#include "harness/suite/suite_runner.h"
#include "reports/compare/run_metrics.h"
#include "reports/serve/results_site.h"

namespace fl::harness {
namespace {

struct ServeArgs {
  std::string db, listen = "127.0.0.1:8080", tls_dir;
  size_t overview_runs = 5000;
};

// The store's name without a password ("postgresql://user:secret@h/db" ->
// "postgresql://user@h/db").
std::string DbLabel(const std::string& db) {
  const size_t scheme = db.find("://");
  const size_t at = db.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return db;
  const size_t colon = db.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return db;
  return db.substr(0, colon) + db.substr(at);
}

int Serve(const ServeArgs& a) {
  QuietLogsUnlessAsked();
  if (Status st = alerts::CheckListen(a.listen); !st.ok()) {
    std::fprintf(stderr, "faultline serve: --listen %s\n", st.ToUserString().c_str());
    return 2;
  }
  auto reader = reports::compare::RunReader::Open(a.db);
  if (!reader.ok()) return ErrorExit("serve", reader.status());
  reports::serve::SiteOptions so;
  so.overview_runs = a.overview_runs;
  so.db_label = DbLabel(a.db);
  reports::serve::ResultsSite site(**reader, so);
  alerts::HttpServerOptions ho;
  ho.listen = a.listen;
  ho.max_body = 0;  // GET only: any body is refused
  if (!a.tls_dir.empty()) {
    // The lab's own certificates: the coordinator's serves (serverAuth, its host names in the
    // subjectAltName), and a browser that trusts the lab CA checks it.
    auto tls = LoadTlsMaterial(a.tls_dir, CertRole::kCoordinator, "");
    if (!tls.ok()) return ErrorExit("serve", tls.status());
    ho.tls_cert_pem = tls->cert_pem;
    ho.tls_key_pem = tls->key_pem;
  }
  suite::StopOnSignals stop;  // SIGINT, SIGTERM
  auto server = alerts::HttpServer::Start(ho, [&site](const alerts::HttpRequest& r) {
    auto reply = site.Handle(r.method, r.target);
    return alerts::HttpReply{reply.status, reply.content_type, std::move(reply.body)};
  });
  if (!server.ok()) {
    std::fprintf(stderr, "faultline serve: %s\n", server.status().ToUserString().c_str());
    return 3;
  }
  const std::string host = a.listen.substr(0, a.listen.rfind(':'));
  std::fprintf(stderr, "faultline serve: %s on %s://%s:%d/ (read-only; Ctrl-C stops)\n",
               so.db_label.c_str(), (*server)->tls() ? "https" : "http", host.c_str(),
               (*server)->port());
  if (!(*server)->tls() && host != "127.0.0.1" && host != "[::1]" && host != "::1")
    std::fprintf(stderr,
                 "faultline serve: listening beyond loopback without TLS: whoever reaches %s "
                 "reads every result\n",
                 a.listen.c_str());
  while (!suite::StopOnSignals::Requested())
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (*server)->Stop();
  return 0;
}

}  // namespace

void AddServeCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ServeArgs>();
  auto* c = app.add_subcommand("serve", HelpText(R"(
serve the results store over HTTP, read-only: the latest night per cluster x suite (/),
each run's report (/runs/ID), a scenario's metrics over nights with change points
(/trends?scenario=NAME), a JSON API (/api/v1/overview, /api/v1/runs, /api/v1/runs/ID,
/api/v1/trends), OpenMetrics for Prometheus (/metrics) and /healthz. Every page is
self-contained (no network). Listens on loopback unless --listen says otherwise;
HTTPS with the lab's certificates by --tls-dir (docs/serve.md))"));
  AddDbOption(c, &a->db);
  c->add_option("--listen", a->listen, "ADDRESS:PORT to listen on (port 0: any)")
      ->capture_default_str();
  c->add_option("--tls-dir", a->tls_dir,
                "serve HTTPS with the lab's coordinator certificate from this directory\n"
                "(`faultline certs init` and `certs issue --role coordinator` make it)")
      ->check(CLI::ExistingDirectory);
  c->add_option("--overview-runs", a->overview_runs,
                "how many of the newest runs the overview and /metrics read")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  RunAfterParse(c, a, exit_code, Serve);
}

}  // namespace fl::harness
