#include "harness/alerts/receiver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/json_util.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "harness/alerts/http_server.h"

namespace fl::harness::alerts {
namespace {

class Receiver final : public AlertReceiver {
 public:
  Receiver(ReceiverOptions o, UniqueFd out) : options_(std::move(o)), out_(std::move(out)) {}
  ~Receiver() override { Stop(); }

  Status Listen() {
    HttpServerOptions so;
    so.listen = options_.listen;
    so.max_body = options_.max_body;
    so.read_timeout = options_.read_timeout;
    FL_ASSIGN_OR_RETURN(server_,
                        HttpServer::Start(so, [this](const HttpRequest& r) { return Handle(r); }));
    return OkStatus();
  }

  int port() const override { return server_ ? server_->port() : 0; }
  size_t received() const override { return received_.load(); }
  void Stop() override {
    if (server_) server_->Stop();
  }

 private:
  HttpReply Handle(const HttpRequest& req) {
    if (req.method != "POST") return {405, "text/plain", "POST a notification\n"};
    auto j = ParseJson(req.body, "notification");
    if (!j.ok() || !j->is_object())
      return {400, "text/plain",
              "not a JSON object: " +
                  (j.ok() ? std::string("another JSON value") : j.status().message()) + "\n"};
    const std::string line =
        j->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (write(out_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        fdatasync(out_.get()) != 0) {
      FL_LOG(kError, "alerts") << "cannot write " << options_.out_path << ": " << strerror(errno);
      return {500, "text/plain", "cannot write the alerts file\n"};
    }
    ++received_;
    return {200, "text/plain", "ok\n"};
  }

  ReceiverOptions options_;
  UniqueFd out_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<size_t> received_{0};
};

}  // namespace

StatusOr<std::unique_ptr<AlertReceiver>> AlertReceiver::Start(const ReceiverOptions& options) {
  if (options.out_path.empty()) return InvalidArgumentError("no alerts file to write (--out)");
  FL_RETURN_IF_ERROR(CheckListen(options.listen));  // before the file is created
  UniqueFd fd(open(options.out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot open " + options.out_path);
  auto r = std::make_unique<Receiver>(options, std::move(fd));
  FL_RETURN_IF_ERROR(r->Listen());
  return std::unique_ptr<AlertReceiver>(std::move(r));
}

}  // namespace fl::harness::alerts
