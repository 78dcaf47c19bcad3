#include "harness/alerts/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <optional>
#include <thread>

namespace fl::harness::alerts {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

StatusOr<tcp::endpoint> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    return InvalidArgumentError("address '" + listen + "': expected HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return InvalidArgumentError("address '" + listen + "': the port must be 0 to 65535");
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec)
    return InvalidArgumentError("address '" + listen + "': '" + host +
                                "' is not an IPv4 or IPv6 address");
  return tcp::endpoint(addr, static_cast<unsigned short>(port));
}

// The TLS context of a server with a certificate: TLS 1.2 or later, no client certificate
// asked for (the results are read-only; who may reach the port is the network's business).
StatusOr<std::unique_ptr<asio::ssl::context>> MakeTlsContext(const HttpServerOptions& o) {
  if (o.tls_cert_pem.empty() != o.tls_key_pem.empty())
    return InvalidArgumentError("TLS needs both a certificate and its key");
  if (o.tls_cert_pem.empty()) return std::unique_ptr<asio::ssl::context>();
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain(asio::buffer(o.tls_cert_pem), ec);
  if (ec) return InvalidArgumentError("the TLS certificate does not load: " + ec.message());
  ctx->use_private_key(asio::buffer(o.tls_key_pem), asio::ssl::context::pem, ec);
  if (ec) return InvalidArgumentError("the TLS key does not load: " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return InvalidArgumentError("the TLS key does not match its certificate");
  return ctx;
}

class Server final : public HttpServer {
 public:
  Server(HttpServerOptions o, Handler h) : options_(std::move(o)), handler_(std::move(h)) {}
  ~Server() override { Stop(); }

  Status Bind() {
    FL_ASSIGN_OR_RETURN(tcp::endpoint ep, ParseListen(options_.listen));
    FL_ASSIGN_OR_RETURN(tls_, MakeTlsContext(options_));
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return UnavailableError("cannot listen on " + options_.listen + ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return OkStatus();
  }

  int port() const override { return port_; }
  bool tls() const override { return tls_ != nullptr; }

  void Stop() override {
    if (!thread_.joinable()) return;
    asio::post(io_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
    });
    io_.stop();
    thread_.join();
  }

 private:
  // One connection, over a plain TCP stream or a TLS one.
  template <class Stream>
  struct Session {
    template <class... Args>
    explicit Session(Args&&... args) : stream(std::forward<Args>(args)...) {}
    Stream stream;
    beast::flat_buffer buffer;
    std::optional<http::request_parser<http::string_body>> parser;
    http::response<http::string_body> reply;
  };
  using PlainSession = Session<beast::tcp_stream>;
  using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;

  template <class S>
  void Deadline(const std::shared_ptr<S>& s) {
    beast::get_lowest_layer(s->stream).expires_after(
        std::chrono::nanoseconds(options_.read_timeout));
  }

  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed by Stop
      if (tls_) {
        auto s = std::make_shared<TlsSession>(std::move(socket), *tls_);
        Deadline(s);
        s->stream.async_handshake(asio::ssl::stream_base::server,
                                  [this, s](boost::system::error_code hec) {
                                    if (!hec) Read(s);  // else not TLS, or too slow: drop it
                                  });
      } else {
        Read(std::make_shared<PlainSession>(std::move(socket)));
      }
      Accept();
    });
  }

  template <class S>
  void Read(const std::shared_ptr<S>& s) {
    s->parser.emplace();
    s->parser->body_limit(options_.max_body);
    Deadline(s);
    http::async_read(
        s->stream, s->buffer, *s->parser, [this, s](boost::system::error_code ec, size_t) {
          if (ec == http::error::body_limit) return Answer(s, {413, "text/plain", "too large\n"});
          if (ec) return;  // closed, timed out or not HTTP: drop it
          const auto& req = s->parser->get();
          HttpRequest r{std::string(req.method_string()), std::string(req.target()), req.body()};
          Answer(s, handler_(r));
        });
  }

  template <class S>
  void Answer(const std::shared_ptr<S>& s, HttpReply reply) {
    s->reply = {};
    s->reply.result(static_cast<http::status>(reply.status));
    s->reply.set(http::field::content_type, reply.content_type);
    s->reply.keep_alive(false);
    s->reply.body() = std::move(reply.body);
    s->reply.prepare_payload();
    // A client that stops reading is dropped after the same time as one that stops sending.
    Deadline(s);
    http::async_write(s->stream, s->reply, [s](boost::system::error_code, size_t) { Close(s); });
  }

  static void Close(const std::shared_ptr<PlainSession>& s) {
    boost::system::error_code ignored;  // the peer may be gone already: nothing to tell
    s->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
  static void Close(const std::shared_ptr<TlsSession>& s) {
    // close_notify, bounded by the write's deadline; a peer that never answers it is dropped.
    s->stream.async_shutdown([s](boost::system::error_code) {
      boost::system::error_code ignored;  // as above
      beast::get_lowest_layer(s->stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  HttpServerOptions options_;
  Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::unique_ptr<asio::ssl::context> tls_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace

Status CheckListen(const std::string& listen) { return ParseListen(listen).status(); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& o,
                                                        Handler handler) {
  auto s = std::make_unique<Server>(o, std::move(handler));
  FL_RETURN_IF_ERROR(s->Bind());
  return std::unique_ptr<HttpServer>(std::move(s));
}

}  // namespace fl::harness::alerts
