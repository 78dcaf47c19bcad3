// One agent's Session stream on the coordinator, the stream half of the control server
// (control_server.h): the send queue and the read-ahead of one agent, and the gRPC reactor that
// drives them. What the messages mean (registration, acks, clock replies, telemetry) is the
// server's, reached through SessionOwner.
//
// Writing: messages to an agent go one at a time from a send queue of its own (kSendQueueLimit
// besides the one being written); a heartbeat is not queued behind another one. An agent that
// stops reading so holds up only itself.
//
// Reading: one read is outstanding at a time. An agent's telemetry is read ahead of its handling
// into a backlog of its own (kReadAhead messages at most; a full one pauses that agent's reads
// until it is half drained), handled in order by one task at a time on the server's telemetry
// threads (SessionOwner::Post); an ack read behind telemetry is handled after it, so a command's
// ack still means that everything its agent sent before it has been handled.
//
// Thread-safety: a Session's methods may be called from any thread; mu guards its state.
// Ownership: the reactor belongs to gRPC and lives until its OnDone; other threads hold the
// Session (shared_ptr) longer and reach the stream only through Send() and Cancel(), which do
// nothing once the reactor is done. The SessionOwner outlives every session's reactor and task.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "harness/proto/faultline.pb.h"

namespace fl::harness {

struct AgentInfo;
struct Session;

// Messages waiting to be written to one agent, beyond the one being written. A command to an
// agent whose queue is full fails at once (Unavailable); a heartbeat is not queued behind
// another one. An agent that stops reading so holds at most this many messages here.
inline constexpr size_t kSendQueueLimit = 64;
// Messages of one agent read ahead of their handling: its telemetry batches, and whatever came
// behind them. A full backlog pauses the agent's reads (flow control: memory stays bounded);
// they resume once it is half drained. One task handles at most this many, then yields its
// thread to the other agents' tasks.
inline constexpr size_t kReadAhead = 32;

using SessionReactor =
    grpc::ServerBidiReactor<faultline::v1::AgentMessage, faultline::v1::CoordinatorMessage>;

// What a session asks of the server it belongs to. CheckToken, Hello and Heard run on gRPC's
// threads; Handle and Closed on gRPC's threads or in a task given to Post.
class SessionOwner {
 public:
  // The metadata token, before anything is read. Not OK: the call is finished with it.
  virtual grpc::Status CheckToken(grpc::CallbackServerContext* ctx) = 0;
  // The stream's first message. OK: the session is registered (its host set, its Welcome
  // queued); not OK: the call is finished with it.
  virtual grpc::Status Hello(grpc::CallbackServerContext* ctx,
                             const std::shared_ptr<Session>& session,
                             const faultline::v1::AgentMessage& first) = 0;
  // A message after the Hello was read (before it is handled or read ahead).
  virtual void Heard(Session& session) = 0;
  // A message after the Hello, in the order the agent sent it.
  virtual void Handle(const std::shared_ptr<Session>& session,
                      const faultline::v1::AgentMessage& msg) = 0;
  // Runs task on one of the server's telemetry threads (off gRPC's own threads).
  virtual void Post(std::function<void()> task) = 0;
  // The session has ended and failed its waiting calls: it is no longer its host's.
  virtual void Closed(const std::shared_ptr<Session>& session) = 0;

 protected:
  ~SessionOwner() = default;
};

// One agent's stream. mu is recursive: a reaction that gRPC runs inline in a StartWrite or
// Finish made under mu takes it again on the same thread.
struct Session : std::enable_shared_from_this<Session> {
  explicit Session(SessionOwner* owner) : owner(owner) {}

  SessionOwner* const owner;
  std::string host;           // set at registration (SessionOwner::Hello)
  AgentInfo* info = nullptr;  // the owner's entry for the host; guarded by the owner, not mu
  std::recursive_mutex mu;    // guards everything below
  SessionReactor* reactor = nullptr;
  grpc::CallbackServerContext* context = nullptr;
  bool alive = true;       // false once the stream has ended: no more writes
  bool writing = false;    // a StartWrite is outstanding (on queue.front())
  bool finishing = false;  // Finish called, or wanted once the outstanding write is done
  grpc::Status finish_status;
  std::deque<faultline::v1::CoordinatorMessage> queue;  // front: being written while writing
  int heartbeats_queued = 0;
  // Calls waiting for the agent's answer, by command or probe id; failed (acks) or dropped
  // (probes) when the stream ends.
  std::map<uint64_t, std::promise<StatusOr<faultline::v1::Ack>>> pending;
  std::map<uint64_t, std::promise<Nanos>> probes;
  // Reading. `in` is the buffer of the outstanding read (here, not in the reactor: the task
  // that drains the backlog restarts paused reads). The backlog holds telemetry batches and
  // the messages read behind them, handled in the order they came by one telemetry task at a
  // time, so that an ack is never seen before the samples its agent sent first, yet is read
  // without waiting for the store.
  faultline::v1::AgentMessage in;
  std::deque<faultline::v1::AgentMessage> backlog;
  bool draining = false;     // a task for the backlog is queued or running
  bool read_paused = false;  // the backlog was full: no read is outstanding
  bool read_ended = false;   // the stream ended with a backlog: closed once it is handled

  // Queues m for writing; false when the stream has ended or the queue is full. A heartbeat
  // while another is still queued is dropped (true): the agent is behind, one is enough.
  bool Send(faultline::v1::CoordinatorMessage m);
  // The outstanding write is done: the next one, or the Finish that waited for it.
  void WriteDone(bool ok);
  // Finishes the call now, or after the outstanding write (one at a time, Finish included).
  void Finish(grpc::Status st);
  // Ends the call (its reads fail) from any thread, as a cut connection would.
  void Cancel();

  // The message just read into `in` (after the Hello). Telemetry, and anything read while
  // telemetry is still waiting or being handled, joins the backlog; anything else is handled
  // at once. True: read the next message now; false: the backlog is full, and the task
  // draining it restarts the reads.
  bool Accept();
  // The agent's side of the stream ended (or broke). Closed at once, or once the backlog (an
  // ack among it, perhaps) has been handled.
  void EndOfStream();

 private:
  // In a task: handles up to kReadAhead of the backlog in order, then posts itself again
  // behind the other agents' tasks if more is left. Restarts a paused read once the backlog is
  // half drained.
  void DrainBacklog();
  // No more writes; the waiting calls fail (acks) or are dropped (probes); then
  // SessionOwner::Closed.
  void Close();
};

// The reactor of one agent's Session call, for the service's Session method: the metadata
// token checked at once (SessionOwner::CheckToken), then one read outstanding at a time (the
// Hello, then every message after it), writes through Session::Send. Deletes itself in OnDone.
SessionReactor* NewSessionReactor(SessionOwner* owner, grpc::CallbackServerContext* ctx);

}  // namespace fl::harness
