#include "harness/alerts/receiver.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <thread>

#include "common/json_util.h"
#include "common/log.h"
#include "common/unique_fd.h"

namespace fl::harness::alerts {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

StatusOr<tcp::endpoint> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    return InvalidArgumentError("--listen '" + listen + "': expected HOST:PORT");
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
    return InvalidArgumentError("--listen '" + listen + "': the port must be 0 to 65535");
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec)
    return InvalidArgumentError("--listen '" + listen + "': '" + host +
                                "' is not an IPv4 or IPv6 address");
  return tcp::endpoint(addr, static_cast<unsigned short>(port));
}

class Receiver final : public AlertReceiver {
 public:
  Receiver(ReceiverOptions o, UniqueFd out) : options_(std::move(o)), out_(std::move(out)) {}
  ~Receiver() override { Stop(); }

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
  size_t received() const override { return received_.load(); }

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
    http::async_read(s->stream, s->buffer, *s->parser,
                     [this, s](boost::system::error_code ec, size_t) {
                       if (ec == http::error::body_limit) return Answer(s, 413, "too large\n");
                       if (ec) return;  // closed, timed out or not HTTP: drop it
                       Handle(s);
                     });
  }

  void Handle(const std::shared_ptr<Session>& s) {
    const auto& req = s->parser->get();
    if (req.method() != http::verb::post) return Answer(s, 405, "POST a notification\n");
    auto j = ParseJson(req.body(), "notification");
    if (!j.ok() || !j->is_object())
      return Answer(s, 400,
                    "not a JSON object: " +
                        (j.ok() ? std::string("another JSON value") : j.status().message()) + "\n");
    const std::string line =
        j->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (write(out_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        fdatasync(out_.get()) != 0) {
      FL_LOG(kError, "alerts") << "cannot write " << options_.out_path << ": " << strerror(errno);
      return Answer(s, 500, "cannot write the alerts file\n");
    }
    ++received_;
    Answer(s, 200, "ok\n");
  }

  void Answer(const std::shared_ptr<Session>& s, int status, std::string body) {
    s->reply = {};
    s->reply.result(static_cast<http::status>(status));
    s->reply.set(http::field::content_type, "text/plain");
    s->reply.keep_alive(false);
    s->reply.body() = std::move(body);
    s->reply.prepare_payload();
    http::async_write(s->stream, s->reply, [s](boost::system::error_code, size_t) {
      boost::system::error_code ignored;
      s->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  ReceiverOptions options_;
  UniqueFd out_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
  int port_ = 0;
  std::atomic<size_t> received_{0};
};

}  // namespace

StatusOr<std::unique_ptr<AlertReceiver>> AlertReceiver::Start(const ReceiverOptions& options) {
  if (options.out_path.empty()) return InvalidArgumentError("no alerts file to write (--out)");
  FL_RETURN_IF_ERROR(ParseListen(options.listen).status());  // before the file is created
  UniqueFd fd(open(options.out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot open " + options.out_path);
  auto r = std::make_unique<Receiver>(options, std::move(fd));
  FL_RETURN_IF_ERROR(r->Bind());
  return std::unique_ptr<AlertReceiver>(std::move(r));
}

}  // namespace fl::harness::alerts
