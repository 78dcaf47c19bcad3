#include "ccl_under_test/ftccl/transport/faulty/faulty_transport.h"

#include <sys/socket.h>

#include <vector>

namespace fl::ccl::ftccl::transport::faulty {

void FaultControl::Set(const std::string& local_ip, FaultRule rule) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_[local_ip] = rule;
}

FaultRule FaultControl::Account(const std::string& local_ip, size_t sent) {
  std::lock_guard<std::mutex> lock(mu_);
  sent_[local_ip] += sent;
  auto it = rules_.find(local_ip);
  if (it == rules_.end()) return FaultRule{};
  FaultRule& r = it->second;
  if (r.fail_after_bytes > 0 && sent > 0) {
    r.fail_after_bytes -= static_cast<int64_t>(sent);
    if (r.fail_after_bytes <= 0) {
      r.fail_after_bytes = 0;
      r.mode = FaultMode::kFail;
    }
  }
  return r;
}

uint64_t FaultControl::BytesSent(const std::string& local_ip) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sent_.find(local_ip);
  return it == sent_.end() ? 0 : it->second;
}

namespace {

// What a faulty connection or listener holds: the one it wraps, the local IP whose rule
// applies and the shared control.
template <typename Base>
class FaultyWrapper : public Base {
 public:
  FaultyWrapper(std::unique_ptr<Base> inner, std::string local_ip,
                std::shared_ptr<FaultControl> control)
      : inner_(std::move(inner)), ip_(std::move(local_ip)), control_(std::move(control)) {}
  int fd() const override { return inner_->fd(); }

 protected:
  std::unique_ptr<Base> inner_;
  std::string ip_;
  std::shared_ptr<FaultControl> control_;
};

class FaultyConnection : public FaultyWrapper<Connection> {
 public:
  using FaultyWrapper::FaultyWrapper;
  bool ReadCounters(Counters* out) const override { return inner_->ReadCounters(out); }
  Status FinishConnect() override {
    FL_RETURN_IF_ERROR(Check());
    return inner_->FinishConnect();
  }
  StatusOr<size_t> Send(const iovec* iov, int iovcnt) override {
    FaultRule r = control_->Account(ip_, 0);
    FL_RETURN_IF_ERROR(Check(r));
    size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    if (r.mode == FaultMode::kBlackhole || r.mode == FaultMode::kDropOutgoing) return total;
    size_t cap = total;
    if (r.max_send_per_call > 0 && cap > r.max_send_per_call) cap = r.max_send_per_call;
    if (r.fail_after_bytes > 0 && cap > static_cast<size_t>(r.fail_after_bytes)) {
      cap = static_cast<size_t>(r.fail_after_bytes);
    }
    std::vector<iovec> v;
    size_t left = cap;
    for (int i = 0; i < iovcnt && left > 0; ++i) {
      size_t n = std::min(left, iov[i].iov_len);
      v.push_back({iov[i].iov_base, n});
      left -= n;
    }
    auto n = inner_->Send(v.data(), static_cast<int>(v.size()));
    if (n.ok()) {
      FaultRule after = control_->Account(ip_, *n);
      if (after.mode == FaultMode::kFail) Kill();
    }
    return n;
  }
  StatusOr<size_t> Recv(void* buf, size_t len) override {
    FaultRule r = control_->Account(ip_, 0);
    FL_RETURN_IF_ERROR(Check(r));
    auto n = inner_->Recv(buf, len);
    if (n.ok() && r.mode == FaultMode::kBlackhole) return size_t{0};  // swallowed
    return n;
  }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  Status Check() { return Check(control_->Account(ip_, 0)); }
  Status Check(const FaultRule& r) {
    if (r.mode != FaultMode::kFail) return OkStatus();
    Kill();
    return UnavailableError("faulty transport: path " + inner_->Describe() + " is down");
  }
  void Kill() {
    if (!killed_) {
      killed_ = true;
      ::shutdown(inner_->fd(), SHUT_RDWR);
    }
  }
  bool killed_ = false;
};

class FaultyListener : public FaultyWrapper<Listener> {
 public:
  using FaultyWrapper::FaultyWrapper;
  std::string address() const override { return inner_->address(); }
  StatusOr<std::unique_ptr<Connection>> Accept() override {
    FL_ASSIGN_OR_RETURN(auto c, inner_->Accept());
    if (!c) return c;
    return std::unique_ptr<Connection>(
        std::make_unique<FaultyConnection>(std::move(c), ip_, control_));
  }
};

class FaultyTransport : public Transport {
 public:
  FaultyTransport(std::shared_ptr<Transport> inner, std::shared_ptr<FaultControl> control)
      : inner_(std::move(inner)), control_(std::move(control)) {}
  Properties properties() const override {
    Properties p = inner_->properties();
    p.name = "faulty(" + p.name + ")";
    return p;
  }
  StatusOr<std::unique_ptr<Listener>> Listen(const std::string& local_ip) override {
    FL_ASSIGN_OR_RETURN(auto l, inner_->Listen(local_ip));
    return std::unique_ptr<Listener>(
        std::make_unique<FaultyListener>(std::move(l), local_ip, control_));
  }
  StatusOr<std::unique_ptr<Connection>> Connect(const std::string& local_ip,
                                                const std::string& remote) override {
    if (control_->Account(local_ip, 0).mode == FaultMode::kFail) {
      return UnavailableError("faulty transport: NIC " + local_ip + " is down");
    }
    FL_ASSIGN_OR_RETURN(auto c, inner_->Connect(local_ip, remote));
    return std::unique_ptr<Connection>(
        std::make_unique<FaultyConnection>(std::move(c), local_ip, control_));
  }

 private:
  std::shared_ptr<Transport> inner_;
  std::shared_ptr<FaultControl> control_;
};

}  // namespace

std::shared_ptr<Transport> CreateFaultyTransport(std::shared_ptr<Transport> inner,
                                                 std::shared_ptr<FaultControl> control) {
  return std::make_shared<FaultyTransport>(std::move(inner), std::move(control));
}

}  // namespace fl::ccl::ftccl::transport::faulty
