#include "harness/coordinator/session.h"

#include <utility>

namespace fl::harness {

namespace pb = faultline::v1;

bool Session::Send(pb::CoordinatorMessage m) {
  std::lock_guard lock(mu);
  if (!alive || finishing || reactor == nullptr) return false;
  const bool heartbeat = m.has_heartbeat();
  if (heartbeat && heartbeats_queued > 0) return true;
  if (queue.size() > kSendQueueLimit) return false;
  heartbeats_queued += heartbeat;
  queue.push_back(std::move(m));
  if (!writing) {
    writing = true;
    reactor->StartWrite(&queue.front());
  }
  return true;
}

void Session::WriteDone(bool ok) {
  std::lock_guard lock(mu);
  writing = false;
  heartbeats_queued -= queue.front().has_heartbeat();
  queue.pop_front();
  if (!ok) {
    alive = false;  // the call is broken; its reads fail too, and then it is closed
    queue.clear();
    heartbeats_queued = 0;
  }
  if (finishing) {
    if (reactor) reactor->Finish(finish_status);
    return;
  }
  if (alive && !queue.empty()) {
    writing = true;
    reactor->StartWrite(&queue.front());
  }
}

void Session::Finish(grpc::Status st) {
  std::lock_guard lock(mu);
  if (finishing) return;
  finishing = true;
  alive = false;
  if (writing) {
    // Only the message being written stays; WriteDone pops it and finishes.
    while (queue.size() > 1) queue.pop_back();
    heartbeats_queued = queue.front().has_heartbeat();
    finish_status = std::move(st);
    return;
  }
  queue.clear();
  heartbeats_queued = 0;
  if (reactor) reactor->Finish(std::move(st));
}

void Session::Cancel() {
  std::lock_guard lock(mu);
  if (context) context->TryCancel();
}

bool Session::Accept() {
  owner->Heard(*this);
  {
    std::lock_guard lock(mu);
    // draining: a message is queued or still being handled; what comes after waits its turn.
    if (in.has_telemetry() || draining) {
      backlog.push_back(std::move(in));
      in.Clear();
      if (!draining) {
        draining = true;
        owner->Post([self = shared_from_this()] { self->DrainBacklog(); });
      }
      read_paused = backlog.size() >= kReadAhead;
      return !read_paused;
    }
  }
  owner->Handle(shared_from_this(), in);
  in.Clear();
  return true;
}

void Session::DrainBacklog() {
  std::shared_ptr<Session> self = shared_from_this();
  for (size_t n = 0;; ++n) {
    pb::AgentMessage m;
    SessionReactor* resume = nullptr;
    {
      std::unique_lock lock(mu);
      if (backlog.empty()) {
        draining = false;
        if (read_ended) {
          lock.unlock();
          Close();
        }
        return;
      }
      if (n == kReadAhead) {
        owner->Post([self] { self->DrainBacklog(); });
        return;
      }
      m = std::move(backlog.front());
      backlog.pop_front();
      if (read_paused && backlog.size() <= kReadAhead / 2) {
        read_paused = false;
        resume = reactor;
      }
    }
    owner->Handle(self, m);
    // A paused session has no read outstanding, so its call cannot have finished: the
    // reactor is still there.
    if (resume) resume->StartRead(&in);
  }
}

void Session::EndOfStream() {
  {
    std::lock_guard lock(mu);
    if (draining) {
      read_ended = true;
      return;
    }
  }
  Close();
}

void Session::Close() {
  {
    std::lock_guard lock(mu);
    alive = false;
    for (auto& [id, p] : pending)
      p.set_value(UnavailableError("agent " + host + " disconnected before acknowledging"));
    pending.clear();
    probes.clear();
  }
  owner->Closed(shared_from_this());
}

namespace {

class Reactor final : public SessionReactor {
 public:
  Reactor(SessionOwner* owner, grpc::CallbackServerContext* ctx)
      : owner_(owner), ctx_(ctx), session_(std::make_shared<Session>(owner)) {
    session_->reactor = this;
    session_->context = ctx;
    if (grpc::Status st = owner_->CheckToken(ctx); !st.ok()) {
      session_->Finish(std::move(st));
      return;
    }
    StartRead(&session_->in);
  }

  void OnReadDone(bool ok) override {
    // Held here: an OnDone run inline by Finish may delete this, not the Session.
    std::shared_ptr<Session> s = session_;
    if (!ok) {  // the agent closed its side, or the call was cancelled or broke
      if (registered_) s->EndOfStream();
      s->Finish(grpc::Status::OK);
      return;
    }
    if (!registered_) {
      if (grpc::Status st = owner_->Hello(ctx_, s, s->in); !st.ok()) {
        s->Finish(std::move(st));
        return;
      }
      registered_ = true;
      s->in.Clear();
      StartRead(&s->in);
      return;
    }
    // Paused (backlog full): the task draining it starts the next read. No read is
    // outstanding meanwhile, so the call cannot finish and this reactor outlives the pause.
    if (s->Accept()) StartRead(&s->in);
  }

  void OnWriteDone(bool ok) override {
    std::shared_ptr<Session> s = session_;
    s->WriteDone(ok);
  }

  void OnDone() override {
    std::shared_ptr<Session> s = session_;
    {
      std::lock_guard lock(s->mu);
      s->reactor = nullptr;
      s->context = nullptr;
      s->alive = false;
    }
    delete this;
  }

 private:
  SessionOwner* owner_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<Session> session_;
  bool registered_ = false;
};

}  // namespace

SessionReactor* NewSessionReactor(SessionOwner* owner, grpc::CallbackServerContext* ctx) {
  return new Reactor(owner, ctx);
}

}  // namespace fl::harness
