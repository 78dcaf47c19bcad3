#include "harness/alerts/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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

class Server final : public HttpServer {
 public:
  Server(HttpServerOptions o, Handler h) : options_(std::move(o)), handler_(std::move(h)) {}
  ~Server() override { Stop(); }

  Status Bind() {
    FL_ASSIGN_OR_RETURN(tcp::endpoint ep, ParseListen(options_.listen));
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
  struct Session {
    explicit Session(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    std::optional<http::request_parser<http::string_body>> parser;
    http::response<http::string_body> reply;
  };

  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed by Stop
      auto s = std::make_shared<Session>(std::move(socket));
      Read(s);
      Accept();
    });
  }

  void Read(const std::shared_ptr<Session>& s) {
    s->parser.emplace();
    s->parser->body_limit(options_.max_body);
    s->stream.expires_after(std::chrono::nanoseconds(options_.read_timeout));
    http::async_read(
        s->stream, s->buffer, *s->parser, [this, s](boost::system::error_code ec, size_t) {
          if (ec == http::error::body_limit) return Answer(s, {413, "text/plain", "too large\n"});
          if (ec) return;  // closed, timed out or not HTTP: drop it
          const auto& req = s->parser->get();
          HttpRequest r{std::string(req.method_string()), std::string(req.target()), req.body()};
          Answer(s, handler_(r));
        });
  }

  void Answer(const std::shared_ptr<Session>& s, HttpReply reply) {
    s->reply = {};
    s->reply.result(static_cast<http::status>(reply.status));
    s->reply.set(http::field::content_type, reply.content_type);
    s->reply.keep_alive(false);
    s->reply.body() = std::move(reply.body);
    s->reply.prepare_payload();
    // A client that stops reading is dropped after the same time as one that stops sending.
    s->stream.expires_after(std::chrono::nanoseconds(options_.read_timeout));
    http::async_write(s->stream, s->reply, [s](boost::system::error_code, size_t) {
      boost::system::error_code ignored;
      s->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  HttpServerOptions options_;
  Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
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
