// A small HTTP/1.1 server on one thread (Boost.Beast, in http_server.cc only): each request is
// read whole (bounded body, read timeout), handed to the handler, and answered with what it
// returns; one request per connection. What faultline serves over HTTP goes through it: the
// Alertmanager webhook receiver (receiver.h), a run's live metrics (metrics_endpoint.h) and
// the results server (`faultline serve`, reports/serve/results_site.h). Headers are bounded
// by Beast's parser (8 KiB), the body by max_body; reading and writing by read_timeout each.
// With a certificate and key (PEM) it speaks HTTPS only (TLS 1.2 or later, OpenSSL): the TLS
// handshake is bounded by read_timeout too, and a client that does not speak TLS is dropped.
//
// Thread-safety: the handler runs on the server's thread, one request at a time. Stop is
// idempotent and joins the thread; the destructor stops.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness::alerts {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/metrics"
  std::string body;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

struct HttpServerOptions {
  std::string listen;         // HOST:PORT (an IPv4 or IPv6 literal, [v6] too); port 0: any
  size_t max_body = 1 << 20;  // larger bodies are answered 413
  Nanos read_timeout = 10 * kNsPerSec;
  // HTTPS when both are set (PEM text: the certificate, then any intermediates; its key).
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// InvalidArgument naming the flag's text when it is not HOST:PORT with an address literal.
[[nodiscard]] Status CheckListen(const std::string& listen);

class HttpServer {
 public:
  using Handler = std::function<HttpReply(const HttpRequest&)>;
  // Listening when it returns: InvalidArgument for a bad address or a certificate or key that
  // does not load (or only one of them given), Unavailable when it cannot bind.
  [[nodiscard]] static StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& o,
                                                                   Handler handler);
  virtual ~HttpServer() = default;
  virtual int port() const = 0;
  virtual bool tls() const = 0;
  virtual void Stop() = 0;
};

}  // namespace fl::harness::alerts
