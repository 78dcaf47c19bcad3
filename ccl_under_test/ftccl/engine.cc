#include "ccl_under_test/ftccl/engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "ccl_under_test/ftccl/frame.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "ccl_under_test/ftccl/link_monitor.h"
#include "ccl_under_test/ftccl/reliable_window.h"
#include "ccl_under_test/ftccl/transport/unix/unix_transport.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {
namespace {

using frame::FrameHeader;
using frame::kMagic;
using frame::MakeHeader;
using enum frame::FrameType;
using enum frame::FrameFlags;

// Keys of forwarded chunks in the relay's per-peer chunk map: above every own sequence number,
// so the queue sends own chunks first and a forwarded chunk is never relayed again.
constexpr uint64_t kForwardKeyBase = 1ull << 63;

// The label of host-local channels (the local "address" given to the host transport).
constexpr char kHostLocal[] = "host-local";

// "Same host" for the host-local channel means "can reach each other's abstract unix sockets":
// the same kernel (boot id) and the same network namespace (inode of /proc/self/ns/net).
std::string HostKey() {
  std::string boot;
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) boot = buf;
    std::fclose(f);
  }
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  struct stat st {};
  if (boot.empty() || stat("/proc/self/ns/net", &st) != 0) return "";
  return boot + ":" + std::to_string(st.st_ino);
}

std::string TagString(uint64_t tag) {
  return "coll " + std::to_string(tag >> 32) + " step " + std::to_string((tag >> 20) & 0xfff) +
         " slice " + std::to_string(tag & 0xfffff);
}

// epoll user data: kind in the top byte, indices below.
enum FdKind : uint64_t {
  kFdWake = 1,
  kFdLink = 2,
  kFdListener = 3,
  kFdChannel = 4,
  kFdPending = 5
};
uint64_t Key(FdKind kind, uint64_t a, uint64_t b = 0) { return kind << 56 | a << 24 | b; }

// Payload buffers of chunks that arrive before their receive is posted (or that we forward)
// come and go at the network's pace, up to chunk_bytes each. Fresh ones of that size are
// mmapped by malloc and page-faulted in again each time (6% of the CPU of a 64 MiB AllReduce
// on the lab, perf); recycled ones are warm. Process-wide, since ranks may be threads.
class BufferPool {
 public:
  static BufferPool& Get() {
    static BufferPool* pool = new BufferPool;  // never destroyed: buffers may outlive main
    return *pool;
  }
  // A buffer of at least n bytes; *cap is its real size.
  char* Take(size_t n, size_t* cap) {
    *cap = n < kMinPooled ? n : RoundUp(n);
    if (*cap >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& list = free_[*cap];
      if (!list.empty()) {
        char* p = list.back();
        list.pop_back();
        pooled_ -= *cap;
        return p;
      }
    }
    return new char[*cap];
  }
  void Give(char* p, size_t cap) {
    if (cap >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      if (pooled_ + cap <= kMaxPooledBytes) {
        free_[cap].push_back(p);
        pooled_ += cap;
        return;
      }
    }
    delete[] p;
  }

 private:
  static constexpr size_t kMinPooled = 64 * 1024;
  static constexpr size_t kMaxPooledBytes = 64 << 20;
  static size_t RoundUp(size_t n) { return (n + kMinPooled - 1) / kMinPooled * kMinPooled; }
  std::mutex mu_;
  std::map<size_t, std::vector<char*>> free_;
  size_t pooled_ = 0;
};

// A payload buffer that is not zero-filled (it is always written before it is read).
class Blob {
 public:
  Blob() = default;
  Blob(Blob&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) {
    o.data_ = nullptr;
    o.size_ = o.cap_ = 0;
  }
  Blob& operator=(Blob&& o) noexcept {
    if (this != &o) {
      Reset(0);
      data_ = o.data_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.data_ = nullptr;
      o.size_ = o.cap_ = 0;
    }
    return *this;
  }
  ~Blob() { Reset(0); }
  void Reset(size_t n) {
    if (data_) BufferPool::Get().Give(data_, cap_);
    data_ = n ? BufferPool::Get().Take(n, &cap_) : nullptr;
    size_ = n;
    if (!n) cap_ = 0;
  }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};

// A chunk in a peer's SendWindow (seq: our sequence number, or a forward key; where it is).
struct SendChunk : WindowSlot {
  uint64_t tag = 0;
  const char* data = nullptr;
  uint64_t cookie = 0;
  int failover = -1;      // id of the failover that moved it, or -1
  Blob owned;             // payload copy: after CancelAll (frame half written) or DetachSends
  bool detached = false;  // completed by DetachSends before its ack
  // A chunk we forward for another rank of our host (or to one): whose it is and its
  // sequence number there; the payload is ours.
  bool forward = false;
  int origin = -1;
  int origin_channel = -1;  // the channel of `origin` it came in on: the ack goes back there
  uint64_t oseq = 0;
  Blob payload;
  const char* Bytes() const {
    return forward ? payload.data() : owned.data() ? owned.data() : data;
  }
};

struct RecvReq {
  char* data;  // nullptr: into an engine buffer, for the arrival action only
  size_t len;
  uint64_t cookie;
  bool has_arrival = false;
  Arrival arrival;
};

struct Failover {
  int channel;
  std::string path;
  std::string cause;
  Nanos detected_mono;
  size_t remaining;
  size_t moved;
};

enum class ChState { kDown, kConnecting, kHandshake, kUp };

struct Channel {
  int index = 0;
  int local_nic = 0;  // -1: the host-local channel (loopback, same-host peers only)
  int remote_nic = 0;
  bool active = false;  // we connect (lower rank)
  ChState state = ChState::kDown;
  std::unique_ptr<transport::Connection> conn;
  std::string path;
  bool want_out = false;
  // Sending.
  std::string ctrl;  // control frames waiting
  size_t ctrl_off = 0;
  SendChunk* cur = nullptr;  // data frame being written
  FrameHeader cur_hdr{};
  size_t cur_off = 0;  // bytes of header + payload written
  InflightCount inflight;
  // Receiving.
  FrameHeader rhdr{};
  size_t rhdr_got = 0;
  bool in_payload = false;
  char* rdst = nullptr;  // where the payload goes (posted buffer, private buffer or null=discard)
  Blob rpriv;
  bool rposted = false;
  size_t rgot = 0;
  int rsrc = -1;      // whose chunk is arriving (the peer, or the origin of a relayed one)
  bool rfwd = false;  // arriving chunk is to be forwarded to rank rhdr.aux
  // Timing.
  Nanos last_rx = 0;
  Nanos last_tx = 0;
  Nanos attempt_started = 0;
  Nanos next_attempt = 0;
  Nanos backoff = 0;
  bool ever_up = false;
  uint32_t gen = 0;  // connection generation (set by the connecting side, sent in HELLO)
  bool bye = false;  // the peer closed the communicator: not a fault, do not reconnect
  bool failed_before = false;
  uint64_t bytes_sent = 0;
  uint64_t chunks_sent = 0;
};

struct Peer {
  int rank = 0;
  std::vector<Channel> ch;
  std::vector<std::string> addrs;  // the peer's listening addresses, per NIC
  SendWindow<SendChunk> send;      // our chunks to this peer (and ones we forward to it)
  RecvWindow recv;                 // its chunks to us: which were applied
  std::unordered_map<uint64_t, RecvReq> posted;  // by tag
  std::unordered_map<uint64_t, Blob> unexpected;
  Nanos all_down_since = 0;
  bool gone = false;      // Flush: unreachable at exit, owed nothing more
  std::string host;       // host id ("" = unknown: no host-local channel, no relay through it)
  std::string lo_addr;    // host-local listening address
  int via = -1;           // relay rank while we have no working channel of our own, or -1
  Nanos relay_heard = 0;  // last ack or chunk of this peer that came through a relay
};

struct PendingAccept {
  std::unique_ptr<transport::Connection> conn;
  FrameHeader hdr{};
  size_t got = 0;
  Nanos since = 0;
  int nic = 0;
};

struct Op {
  enum Kind { kSend, kRecv, kCancel, kDump, kDetach } kind = kSend;
  int peer = -1;
  uint64_t tag = 0;
  char* data = nullptr;
  size_t len = 0;
  uint64_t cookie = 0;
  bool has_arrival = false;
  Arrival arrival;
};

Op MakeOp(Op::Kind kind, int peer = -1, uint64_t tag = 0, char* data = nullptr, size_t len = 0,
          uint64_t cookie = 0) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.tag = tag;
  op.data = data;
  op.len = len;
  op.cookie = cookie;
  return op;
}

}  // namespace

class Engine::Impl {
 public:
  Impl(const CommConfig& config, std::shared_ptr<transport::Transport> t,
       std::shared_ptr<transport::Transport> host_t, EngineOptions o)
      : cfg_(config), transport_(std::move(t)), host_transport_(std::move(host_t)), opt_(o) {
    if (!host_transport_) host_transport_ = transport::unix_socket::CreateUnixTransport();
  }
  ~Impl() {
    Flush();
    Stop();
  }

  Status Init();
  // Before the engine goes: waits (bounded by peer_dead_timeout, after which a peer we still
  // owe data counts as dead anyway) until every chunk we still carry is acknowledged. The
  // last collective returned once its own receives were in (DetachSends): its remaining
  // sends, and chunks we forward for other ranks, would otherwise die with this process
  // while a peer still waits for them. Peers that said BYE have finished and need nothing.
  void Flush();
  void Stop();

  // User-thread side.
  void Post(Op op) {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      was_empty = inbox_.empty();
      inbox_.push_back(op);
    }
    // The engine thread takes the whole inbox after each wake-up: one wake per batch (a
    // collective posts a send and a receive per reduced slice).
    if (was_empty) Wake();
  }
  StatusOr<Completion> Wait(Deadline deadline);
  Status WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                    Deadline deadline);
  void CancelAll();
  std::string Dump();
  // Set in Init, read-only afterwards.
  std::vector<std::string> HostIds() const {
    std::vector<std::string> out(peers_.size());
    for (size_t r = 0; r < out.size(); ++r) {
      out[r] = static_cast<int>(r) == cfg_.rank ? host_id_ : peers_[r].host;
    }
    return out;
  }
  std::vector<std::vector<std::string>> NicAddrs() const {
    std::vector<std::vector<std::string>> out(peers_.size());
    for (size_t r = 0; r < out.size(); ++r) {
      out[r] = static_cast<int>(r) == cfg_.rank ? my_addrs_ : peers_[r].addrs;
    }
    return out;
  }
  Status error() const {
    std::lock_guard<std::mutex> lock(done_mu_);
    return error_;
  }
  void Fail(Status s);
  void Emit(Event e) {
    if (!cfg_.events) return;
    e.rank = cfg_.rank;
    if (e.wall_ns == 0) e.wall_ns = WallNowNs();
    if (e.mono_ns == 0) e.mono_ns = MonoNowNs();
    cfg_.events->OnEvent(e);
  }

  const CommConfig cfg_;
  std::shared_ptr<transport::Transport> transport_;
  std::shared_ptr<transport::Transport> host_transport_;  // host-local channels
  const EngineOptions opt_;

 private:
  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof(one));
    (void)n;
  }
  void Loop();
  void DrainInbox();
  void HandleOp(const Op& op);
  void Complete(uint64_t cookie, bool is_send) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_.push_back({cookie, is_send});
      ++(is_send ? queued_sends_ : queued_recvs_);
      // A WaitCounts caller sleeps until its counts are there: one wake-up per collective
      // instead of one per slice.
      wake = !counting_ || (queued_recvs_ >= want_recvs_ && queued_sends_ >= want_sends_);
    }
    if (wake) done_cv_.notify_one();
  }

  Channel& Ch(int peer, int c) { return peers_[peer].ch[c]; }
  // The channel a chunk to `peer` is in flight on (a relay's channel when c.via >= 0).
  // REQUIRES: c.channel >= 0.
  Channel& ChannelOf(int peer, const SendChunk& c) {
    return peers_[c.via >= 0 ? c.via : peer].ch[c.channel];
  }
  std::string LocalAddr(const Channel& ch) const {
    return ch.local_nic < 0 ? kHostLocal : cfg_.nics[ch.local_nic];
  }
  std::string RemoteAddr(int peer, const Channel& ch) const {
    return ch.local_nic < 0 ? peers_[peer].lo_addr : peers_[peer].addrs[ch.remote_nic];
  }
  // The host-local channel, when the peer has one, is the last.
  static bool HostLocalUp(const Peer& p) {
    return !p.ch.empty() && p.ch.back().local_nic < 0 && p.ch.back().state == ChState::kUp;
  }
  static bool AnyUp(const Peer& p) {
    for (auto& ch : p.ch)
      if (ch.state == ChState::kUp) return true;
    return false;
  }
  int ChooseRelay(int peer) const;
  void UpdateRoutes();
  void OnRelayedAck(int dest, int origin, uint64_t oseq);
  void ForwardChunk(int from, Channel& ch);
  void SetWantOut(int peer, Channel& ch, bool want);
  void StartConnect(int peer, Channel& ch, Nanos now);
  void OnConnectable(int peer, Channel& ch);
  void ChannelUp(int peer, Channel& ch, std::unique_ptr<transport::Connection> conn,
                 uint32_t gen = 0);
  void FailChannel(int peer, Channel& ch, const std::string& cause, const std::string& detail);
  void QueueCtrl(Channel& ch, const FrameHeader& h) {
    ch.ctrl.append(reinterpret_cast<const char*>(&h), sizeof(h));
  }
  void PumpPeer(int peer);
  void PumpSend(int peer, Channel& ch);
  void OnReadable(int peer, Channel& ch);
  void OnHeader(int peer, Channel& ch);
  void OnPayloadDone(int peer, Channel& ch);
  void OnAck(int peer, uint64_t seq);
  void EnqueueSend(int peer, uint64_t tag, const char* data, size_t len, uint64_t cookie);
  void OnArrival(const Arrival& a, const char* got, size_t len);
  void NoteRequeued(SendChunk& c, int fid);
  size_t RequeueCarried(int peer, Channel& ch, int fid, std::vector<int>* relayed_for);
  void OnAccept(int nic);
  void OnPendingReadable(size_t idx);
  void Timers(Nanos now);
  bool HasPendingBytes(Channel& ch);
  void OnLinkChanges();
  std::string DumpLocked();

  int epfd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex inbox_mu_;
  std::vector<Op> inbox_;

  mutable std::mutex done_mu_;
  std::condition_variable done_cv_;
  // Flush: the engine thread counts the chunks still owed to peers that have not left.
  std::atomic<bool> flushing_{false};
  std::atomic<size_t> owed_{0};
  std::atomic<uint64_t> loop_gen_{0};
  std::deque<Completion> done_;
  size_t queued_recvs_ = 0, queued_sends_ = 0;  // in done_
  bool counting_ = false;                       // a WaitCounts caller is asleep
  size_t want_recvs_ = 0, want_sends_ = 0;      // ... until done_ holds this many
  Status error_;
  uint64_t cancel_gen_ = 0;
  uint64_t cancel_done_ = 0;
  std::string dump_;
  uint64_t dump_gen_ = 0;
  uint64_t dump_done_ = 0;

  std::vector<std::unique_ptr<transport::Listener>> listeners_;
  std::vector<std::string> my_addrs_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<PendingAccept>> pending_;
  std::vector<int> nic_ifindex_;
  std::vector<bool> nic_down_;
  LinkMonitor links_;
  std::vector<Failover> failovers_;
  // Relay (intra-host routing): our host id ("" = off), host-local listening address.
  std::string host_id_;
  std::string my_lo_;
  bool relay_ = false;
  uint64_t next_fwd_key_ = kForwardKeyBase;
  // Chunks we forward, by (destination, origin, origin's sequence number) -> key.
  std::map<std::tuple<int, int, uint64_t>, uint64_t> fwd_index_;

 public:
  std::atomic<uint64_t> st_sent_{0}, st_requeued_{0}, st_dups_{0}, st_faults_{0}, st_restored_{0};
  std::atomic<uint64_t> st_relayed_{0}, st_forwarded_{0}, st_detached_{0}, st_host_local_{0};

 private:
  bool fail_stopped_ = false;
};

// ---------------------------------------------------------------------------------------------

Status Engine::Impl::Init() {
  const int n = cfg_.world_size;
  const int me = cfg_.rank;
  if (n < 1 || me < 0 || me >= n) return InvalidArgumentError("ftccl: bad rank/world size");
  if (cfg_.nics.empty()) return InvalidArgumentError("ftccl: no NIC addresses");
  if (n > 1 && !cfg_.store) return InvalidArgumentError("ftccl: no rendezvous store");
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || wake_fd_ < 0) return ErrnoStatus(errno, "ftccl: epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = Key(kFdWake, 0);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);

  Deadline deadline = Deadline::After(cfg_.init_timeout);
  for (size_t k = 0; k < cfg_.nics.size(); ++k) {
    FL_ASSIGN_OR_RETURN(auto l, transport_->Listen(cfg_.nics[k]));
    my_addrs_.push_back(l->address());
    ev.events = EPOLLIN;
    ev.data.u64 = Key(kFdListener, k);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, l->fd(), &ev);
    listeners_.push_back(std::move(l));
    auto idx = IfIndexOfAddress(cfg_.nics[k]);
    nic_ifindex_.push_back(idx.ok() ? *idx : -1);
    nic_down_.push_back(false);
  }
  if (opt_.watch_links) {
    if (!links_.Open().ok()) {
      FL_LOG(kWarn, "ftccl") << "rtnetlink unavailable: link-down detection by timeouts only";
    } else {
      ev.events = EPOLLIN;
      ev.data.u64 = Key(kFdLink, 0);
      epoll_ctl(epfd_, EPOLL_CTL_ADD, links_.fd(), &ev);
    }
  }
  // Host-local channel and relay: only with a host id, and a host-local listener.
  host_id_ = opt_.host_id == "auto" ? HostKey() : opt_.host_id;
  if (!host_id_.empty() && host_id_.find_first_of(",|") == std::string::npos) {
    auto l = host_transport_->Listen(kHostLocal);
    if (l.ok()) {
      my_lo_ = (*l)->address();
      ev.events = EPOLLIN;
      ev.data.u64 = Key(kFdListener, listeners_.size());
      epoll_ctl(epfd_, EPOLL_CTL_ADD, (*l)->fd(), &ev);
      listeners_.push_back(std::move(*l));
    } else {
      FL_LOG(kWarn, "ftccl") << "no host-local listener (" << l.status().ToString()
                             << "): no host-local channels, no relay";
    }
  }
  if (my_lo_.empty()) host_id_.clear();
  relay_ = !host_id_.empty() && cfg_.failover;
  // "ip:port,ip:port" (NICs in rail order), then "|host|@name" with a host id.
  std::string joined;
  for (const auto& a : my_addrs_) joined += (joined.empty() ? "" : ",") + a;
  if (!host_id_.empty()) joined += "|" + host_id_ + "|" + my_lo_;
  const std::string prefix = "ftccl/" + cfg_.job_id + "/";
  if (n > 1) FL_RETURN_IF_ERROR(cfg_.store->Set(prefix + "addr/" + std::to_string(me), joined));

  peers_.resize(n);
  for (int p = 0; p < n; ++p) {
    Peer& peer = peers_[p];
    peer.rank = p;
    if (p == me) continue;
    FL_ASSIGN_OR_RETURN(std::string s,
                        cfg_.store->Get(prefix + "addr/" + std::to_string(p), deadline));
    size_t bar = s.find('|');
    if (bar != std::string::npos) {
      size_t bar2 = s.find('|', bar + 1);
      if (bar2 != std::string::npos) {
        peer.host = s.substr(bar + 1, bar2 - bar - 1);
        peer.lo_addr = s.substr(bar2 + 1);
      }
      s.resize(bar);
    }
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) peer.addrs.push_back(item);
    if (peer.addrs.empty())
      return InternalError("ftccl: rank " + std::to_string(p) + " has no NICs");
    int nch = static_cast<int>(std::max(cfg_.nics.size(), peer.addrs.size())) *
              std::max(1, opt_.channels_per_nic);
    // Ranks of one host also get a host-local channel (both sides decide alike: both host
    // ids are published).
    const bool local = !host_id_.empty() && peer.host == host_id_ && !peer.lo_addr.empty();
    peer.ch.resize(nch + (local ? 1 : 0));
    for (int c = 0; c < static_cast<int>(peer.ch.size()); ++c) {
      Channel& ch = peer.ch[c];
      ch.index = c;
      ch.local_nic = c < nch ? c % static_cast<int>(cfg_.nics.size()) : -1;
      ch.remote_nic = c < nch ? c % static_cast<int>(peer.addrs.size()) : -1;
      ch.active = me < p;
      ch.backoff = opt_.reconnect_min;
      ch.path = LocalAddr(ch) + "->" + RemoteAddr(p, ch);
    }
  }
  Nanos now = MonoNowNs();
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (auto& ch : peers_[p].ch) {
      if (ch.active) StartConnect(p, ch, now);
    }
  }
  thread_ = std::thread([this] { Loop(); });

  // Wait until every channel is up (or, at the deadline, at least one per peer).
  auto all_up = [&](bool any_per_peer) {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      int up = 0;
      for (auto& ch : peers_[p].ch) up += ch.ever_up;
      if (any_per_peer ? up == 0 : up != static_cast<int>(peers_[p].ch.size())) return false;
    }
    return true;
  };
  // ever_up is written by the engine thread under inbox_mu_ (see ChannelUp).
  Deadline full = Deadline::After(std::min<Nanos>(deadline.Remaining(), cfg_.init_timeout));
  if (!WaitUntil([&] { return all_up(false) || !error().ok(); }, full)) {
    if (!all_up(true)) {
      return DeadlineExceededError("ftccl: rank " + std::to_string(me) +
                                   " could not connect to every peer in time:\n" + Dump());
    }
    FL_LOG(kWarn, "ftccl") << "not every channel came up at init; continuing degraded";
  }
  FL_RETURN_IF_ERROR(error());
  // A store barrier so that no rank starts a collective before all are connected.
  if (n > 1) FL_RETURN_IF_ERROR(StoreBarrier(*cfg_.store, prefix + "ready", me, n, deadline));
  return OkStatus();
}

void Engine::Impl::Flush() {
  if (!thread_.joinable() || !error().ok()) return;
  flushing_ = true;
  const uint64_t gen0 = loop_gen_;
  const Deadline d = Deadline::After(opt_.peer_dead_timeout + 2 * kNsPerSec);
  // Two loop iterations after the request: the count reflects every op posted before it.
  while (!d.Expired() && error().ok() && (loop_gen_ < gen0 + 2 || owed_ > 0)) {
    Wake();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (owed_ > 0 && error().ok()) {
    FL_LOG(kWarn, "ftccl") << owed_ << " chunk(s) still unacknowledged at exit";
  }
}

void Engine::Impl::Stop() {
  if (thread_.joinable()) {
    stop_ = true;
    Wake();
    thread_.join();
  }
  for (auto& p : peers_)
    for (auto& ch : p.ch) ch.conn.reset();
  listeners_.clear();
  pending_.clear();
  if (epfd_ >= 0) close(epfd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  epfd_ = wake_fd_ = -1;
}

void Engine::Impl::Fail(Status s) {
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    if (!error_.ok()) return;
    error_ = s;
  }
  done_cv_.notify_all();
  Event e{EventType::kCommError};
  e.cause = std::string(CodeName(s.code()));
  e.detail = s.message();
  Emit(e);
}

StatusOr<Completion> Engine::Impl::Wait(Deadline deadline) {
  std::unique_lock<std::mutex> lock(done_mu_);
  while (true) {
    if (!error_.ok()) return error_;
    if (!done_.empty()) {
      Completion c = done_.front();
      done_.pop_front();
      --(c.is_send ? queued_sends_ : queued_recvs_);
      return c;
    }
    if (deadline.Expired()) return DeadlineExceededError("ftccl: collective timed out");
    done_cv_.wait_for(
        lock, std::chrono::nanoseconds(std::min<Nanos>(deadline.Remaining(), 100 * kNsPerMs)));
  }
}

Status Engine::Impl::WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                                Deadline deadline) {
  std::unique_lock<std::mutex> lock(done_mu_);
  while (true) {
    for (const Completion& c : done_) ++*(c.is_send ? sends_done : recvs_done);
    done_.clear();
    queued_recvs_ = queued_sends_ = 0;
    counting_ = false;
    if (!error_.ok()) return error_;
    if (*recvs_done >= recvs && *sends_done >= sends) return OkStatus();
    if (deadline.Expired()) return DeadlineExceededError("ftccl: collective timed out");
    counting_ = true;
    want_recvs_ = recvs > *recvs_done ? recvs - *recvs_done : 0;
    want_sends_ = sends > *sends_done ? sends - *sends_done : 0;
    done_cv_.wait_for(
        lock, std::chrono::nanoseconds(std::min<Nanos>(deadline.Remaining(), 100 * kNsPerMs)));
  }
}

void Engine::Impl::CancelAll() {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    gen = ++cancel_gen_;
  }
  Post(MakeOp(Op::kCancel, -1, 0, nullptr, 0, gen));
  std::unique_lock<std::mutex> lock(done_mu_);
  // The engine thread never blocks, so this wait is short; the bound guards against a bug.
  Deadline d = Deadline::After(5 * kNsPerSec);
  while (cancel_done_ < gen && !d.Expired() && thread_.joinable()) {
    done_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  done_.clear();
  queued_recvs_ = queued_sends_ = 0;
}

std::string Engine::Impl::Dump() {
  if (!thread_.joinable()) return DumpLocked();
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(done_mu_);
    gen = ++dump_gen_;
  }
  Post(MakeOp(Op::kDump, -1, 0, nullptr, 0, gen));
  std::unique_lock<std::mutex> lock(done_mu_);
  Deadline d = Deadline::After(2 * kNsPerSec);
  while (dump_done_ < gen && !d.Expired()) done_cv_.wait_for(lock, std::chrono::milliseconds(10));
  return dump_done_ >= gen ? dump_ : "(engine did not answer the dump request)";
}

std::string Engine::Impl::DumpLocked() {
  std::ostringstream os;
  Nanos now = MonoNowNs();
  static const char* kStates[] = {"down", "connecting", "handshake", "up"};
  os << "rank " << cfg_.rank << " of " << cfg_.world_size << "\n";
  for (auto& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    os << " peer " << p.rank << ": unacked " << p.send.unacked() << " queued " << p.send.queued()
       << " posted_recv " << p.posted.size() << " unexpected " << p.unexpected.size()
       << " next_recv_seq " << p.recv.low();
    if (p.via >= 0) os << " relayed via rank " << p.via;
    os << "\n";
    for (auto& [tag, r] : p.posted) {
      os << "  waits for recv " << TagString(tag) << " (" << r.len << " B)\n";
      break;
    }
    if (p.send.HasQueued()) {
      const uint64_t front = p.send.FrontQueued();
      os << "  oldest queued send seq " << front << " " << TagString(p.send.Find(front)->tag)
         << "\n";
    }
    for (auto& ch : p.ch) {
      os << "  ch " << ch.index << " " << ch.path << " " << kStates[static_cast<int>(ch.state)]
         << " inflight " << ch.inflight.chunks << " chunks/" << ch.inflight.bytes << " B"
         << " heard " << (ch.last_rx ? (now - ch.last_rx) / kNsPerMs : -1) << " ms ago"
         << " sent " << ch.chunks_sent << " chunks\n";
    }
  }
  return os.str();
}

// ---------------------------------------------------------------------------------------------

void Engine::Impl::SetWantOut(int peer, Channel& ch, bool want) {
  if (!ch.conn || ch.want_out == want) return;
  ch.want_out = want;
  epoll_event ev{};
  ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.u64 = Key(kFdChannel, peer, ch.index);
  epoll_ctl(epfd_, EPOLL_CTL_MOD, ch.conn->fd(), &ev);
}

void Engine::Impl::StartConnect(int peer, Channel& ch, Nanos now) {
  ch.attempt_started = now;
  ++ch.gen;
  auto c = (ch.local_nic < 0 ? host_transport_ : transport_)
               ->Connect(LocalAddr(ch), RemoteAddr(peer, ch));
  if (!c.ok()) {
    ch.state = ChState::kDown;
    ch.next_attempt = now + ch.backoff;
    ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
    return;
  }
  ch.conn = std::move(*c);
  ch.state = ChState::kConnecting;
  ch.want_out = true;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = Key(kFdChannel, peer, ch.index);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, ch.conn->fd(), &ev);
}

void Engine::Impl::OnConnectable(int peer, Channel& ch) {
  Status s = ch.conn->FinishConnect();
  if (!s.ok()) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
    ch.conn.reset();
    ch.state = ChState::kDown;
    Nanos now = MonoNowNs();
    ch.next_attempt = now + ch.backoff;
    ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
    return;
  }
  ch.state = ChState::kHandshake;
  ch.ctrl.clear();
  ch.ctrl_off = 0;
  ch.rhdr_got = 0;
  ch.in_payload = false;
  ch.last_rx = ch.last_tx = MonoNowNs();
  QueueCtrl(ch, MakeHeader(kHello, ch.gen, cfg_.rank, ch.index, cfg_.world_size));
  PumpSend(peer, ch);
}

void Engine::Impl::ChannelUp(int peer, Channel& ch, std::unique_ptr<transport::Connection> conn,
                             uint32_t gen) {
  if (conn) {
    // Passive side: an accepted connection replaces whatever the channel had.
    if (ch.conn) FailChannel(peer, ch, "replaced", "peer reconnected this channel");
    ch.conn = std::move(conn);
    ch.gen = gen;
    ch.ctrl.clear();
    ch.ctrl_off = 0;
    ch.rhdr_got = 0;
    ch.in_payload = false;
    ch.want_out = false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = Key(kFdChannel, peer, ch.index);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, ch.conn->fd(), &ev);
    QueueCtrl(ch, MakeHeader(kHello, ch.gen, cfg_.rank, ch.index, cfg_.world_size));
  }
  ch.state = ChState::kUp;
  ch.path = ch.conn->Describe();
  ch.backoff = opt_.reconnect_min;
  ch.last_rx = ch.last_tx = MonoNowNs();
  peers_[peer].all_down_since = 0;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    ch.ever_up = true;
  }
  if (ch.failed_before) {
    ++st_restored_;
    Event e{EventType::kPathRestored};
    e.peer = peer;
    e.channel = ch.index;
    e.path = ch.path;
    Emit(e);
    FL_LOG(kInfo, "ftccl") << "path restored to rank " << peer << " ch " << ch.index << " "
                           << ch.path;
  }
  UpdateRoutes();
  PumpSend(peer, ch);
}

void Engine::Impl::FailChannel(int peer, Channel& ch, const std::string& cause,
                               const std::string& detail) {
  Peer& p = peers_[peer];
  bool was_up = ch.state == ChState::kUp;
  if (ch.conn) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
    ch.conn.reset();
  }
  ch.state = ChState::kDown;
  ch.want_out = false;
  ch.ctrl.clear();
  ch.ctrl_off = 0;
  ch.cur = nullptr;
  ch.cur_off = 0;
  ch.rhdr_got = 0;
  ch.in_payload = false;
  ch.rdst = nullptr;
  ch.rpriv.Reset(0);
  Nanos now = MonoNowNs();
  ch.next_attempt = now + (cause == "link_down" ? opt_.reconnect_max : ch.backoff);
  ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
  if (!was_up) return;  // a failed attempt, not a fault of a working path
  ch.failed_before = true;

  // Unacknowledged chunks go back to the queue, to be resent on surviving paths: the peer's
  // own, and other peers' chunks that this channel was relaying.
  int fid = static_cast<int>(failovers_.size());
  std::vector<int> relayed_for;
  const size_t moved = RequeueCarried(peer, ch, fid, &relayed_for);
  failovers_.push_back({ch.index, ch.path, cause, now, moved, moved});
  st_requeued_ += moved;
  ++st_faults_;

  Event e{EventType::kFaultDetected};
  e.peer = peer;
  e.channel = ch.index;
  e.path = ch.path;
  e.cause = cause;
  e.detail = detail;
  Emit(e);
  FL_LOG(kWarn, "ftccl") << "path to rank " << peer << " ch " << ch.index << " " << ch.path
                         << " failed (" << cause << "): " << detail << "; " << moved
                         << " chunk(s) requeued";
  if (!cfg_.failover) {
    fail_stopped_ = true;
    Fail(UnavailableError("ftccl (fail-stop): path to rank " + std::to_string(peer) + " " +
                          ch.path + " failed: " + cause + ": " + detail));
    return;
  }
  if (cause != "peer_notice" && cause != "replaced") {
    // Tell the peer over a surviving channel: it may not see the fault itself for a while.
    for (auto& other : p.ch) {
      if (other.state == ChState::kUp) {
        QueueCtrl(other, MakeHeader(kPathDown, 0, static_cast<uint32_t>(ch.index), ch.gen, 0));
        PumpSend(peer, other);
        break;
      }
    }
  }
  UpdateRoutes();
  if (!AnyUp(p) && p.all_down_since == 0) p.all_down_since = now;
  if (moved == 0) {
    Event d{EventType::kFailoverDone};
    d.peer = peer;
    d.channel = ch.index;
    d.path = failovers_[fid].path;
    d.cause = cause;
    d.detail = "0 chunks moved";
    Emit(d);
    failovers_[fid].remaining = 0;
  }
  PumpPeer(peer);
  for (int q : relayed_for) PumpPeer(q);
}

// Every unacknowledged chunk channel `ch` to `peer` carried goes back to its queue: the
// peer's own, and other peers' chunks it was relaying (their ranks into *relayed_for).
size_t Engine::Impl::RequeueCarried(int peer, Channel& ch, int fid, std::vector<int>* relayed_for) {
  size_t moved = 0;
  for (auto& q : peers_) {
    const bool own = q.rank == peer;
    if (!own && !relay_) continue;
    const size_t n = q.send.RequeueCarried(ch.index, own ? -1 : peer,
                                           [&](SendChunk& c) { NoteRequeued(c, fid); });
    moved += n;
    if (!own && n > 0 && relayed_for) relayed_for->push_back(q.rank);
  }
  ch.inflight.Clear();
  return moved;
}

// A chunk moved by failover `fid` (-1: not a fault) no longer counts for the one that moved
// it before.
void Engine::Impl::NoteRequeued(SendChunk& c, int fid) {
  if (c.failover >= 0 && failovers_[c.failover].remaining > 0) --failovers_[c.failover].remaining;
  c.failover = fid;
}

// While we have no working channel of our own to `peer`, its chunks go through a rank that we
// do reach: one on the peer's host first (it reaches the peer over the host-local channel),
// else one on ours (its NICs may work where ours do not). Forwarded chunks are never relayed
// again, so a route is one extra hop at most.
int Engine::Impl::ChooseRelay(int peer) const {
  if (!relay_ || AnyUp(peers_[peer])) return -1;
  bool ever_up = false;
  for (auto& ch : peers_[peer].ch) {
    if (ch.bye) return -1;  // the peer closed its communicator
    ever_up |= ch.ever_up;
  }
  if (!ever_up) return -1;  // still connecting (start-up), not a failure
  for (const std::string* want : {&peers_[peer].host, &host_id_}) {
    if (want->empty()) continue;
    for (const Peer& r : peers_) {
      if (r.rank == cfg_.rank || r.rank == peer || r.host != *want) continue;
      if (AnyUp(r)) return r.rank;
    }
  }
  return -1;
}

void Engine::Impl::UpdateRoutes() {
  if (!relay_) return;
  for (Peer& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    int via = ChooseRelay(p.rank);
    if (via == p.via) continue;
    p.via = via;
    Event e{EventType::kRelayRoute};
    e.peer = p.rank;
    e.cause = via >= 0 ? "no_direct_path" : (AnyUp(p) ? "direct_path" : "no_route");
    e.path = via >= 0 ? "via rank " + std::to_string(via) : "";
    e.detail = via >= 0 ? "chunks to rank " + std::to_string(p.rank) + " go through rank " +
                              std::to_string(via)
                        : "relay to rank " + std::to_string(p.rank) + " ended";
    Emit(e);
    FL_LOG(kInfo, "ftccl") << e.detail;
  }
}

void Engine::Impl::PumpPeer(int peer) {
  for (auto& ch : peers_[peer].ch) {
    if (ch.state == ChState::kUp) PumpSend(peer, ch);
  }
  const int via = peers_[peer].via;
  if (via >= 0) {
    for (auto& ch : peers_[via].ch) {
      if (ch.state == ChState::kUp) PumpSend(via, ch);
    }
  }
}

void Engine::Impl::PumpSend(int peer, Channel& ch) {
  Peer& p = peers_[peer];
  if (!ch.conn) return;
  for (int rounds = 0; rounds < 64; ++rounds) {
    // Control frames go between data frames.
    if (!ch.cur && ch.ctrl_off < ch.ctrl.size()) {
      iovec v{ch.ctrl.data() + ch.ctrl_off, ch.ctrl.size() - ch.ctrl_off};
      auto n = ch.conn->Send(&v, 1);
      if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
      if (*n == 0) return SetWantOut(peer, ch, true);
      ch.ctrl_off += *n;
      ch.last_tx = MonoNowNs();
      if (ch.ctrl_off == ch.ctrl.size()) {
        ch.ctrl.clear();
        ch.ctrl_off = 0;
      }
      continue;
    }
    if (ch.state != ChState::kUp) break;
    if (!ch.cur) {
      // The peer's own queue first, then chunks of ranks we reach through this peer (only
      // chunks of our own: forwarded ones, keyed from kForwardKeyBase, are not relayed again).
      Peer* from = p.send.HasQueued() ? &p : nullptr;
      for (size_t d = 0; !from && relay_ && d < peers_.size(); ++d) {
        Peer& q = peers_[d];
        if (q.via == peer && q.send.HasQueued() && q.send.FrontQueued() < kForwardKeyBase)
          from = &q;
      }
      if (!from || !ch.inflight.HasRoom(opt_.window_bytes)) break;
      // A peer of our host is reached over the host-local channel while it works: its NIC
      // channels would only loop back through the kernel's IP stack at twice the CPU per
      // byte. They stay connected (keep-alives) for failover.
      const bool local_up = HostLocalUp(p);
      if (local_up && ch.local_nic >= 0) break;
      // Take the next chunk only if no other working channel has less in flight: chunks
      // spread over the paths, and a path whose acks come back faster takes more.
      bool least = true;
      for (auto& other : p.ch) {
        if (&other != &ch && other.state == ChState::kUp && !(local_up && other.local_nic >= 0) &&
            other.inflight.bytes < ch.inflight.bytes) {
          least = false;
        }
      }
      if (!least) break;
      SendChunk* c = &from->send.Take(ch.index, from == &p ? -1 : peer);
      ch.cur = c;
      if (c->forward) {
        ch.cur_hdr = MakeHeader(kData, c->len, static_cast<uint32_t>(c->origin), c->oseq, c->tag,
                                kFlagRelayed);
      } else if (c->via >= 0) {
        ch.cur_hdr = MakeHeader(kData, c->len, static_cast<uint32_t>(from->rank), c->seq, c->tag,
                                kFlagForward);
        ++st_relayed_;
      } else {
        ch.cur_hdr = MakeHeader(kData, c->len, 0, c->seq, c->tag);
      }
      ch.cur_off = 0;
      ch.inflight.Add(c->len);
      ++ch.chunks_sent;
      ++st_sent_;
      if (ch.local_nic < 0) ++st_host_local_;
    }
    SendChunk* c = ch.cur;
    const char* payload = c->Bytes();
    iovec v[2];
    int nv = 0;
    if (ch.cur_off < sizeof(FrameHeader)) {
      v[nv++] = {reinterpret_cast<char*>(&ch.cur_hdr) + ch.cur_off,
                 sizeof(FrameHeader) - ch.cur_off};
      if (c->len) v[nv++] = {const_cast<char*>(payload), c->len};
    } else {
      size_t off = ch.cur_off - sizeof(FrameHeader);
      v[nv++] = {const_cast<char*>(payload) + off, c->len - off};
    }
    auto n = ch.conn->Send(v, nv);
    if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
    if (*n == 0) return SetWantOut(peer, ch, true);
    ch.cur_off += *n;
    ch.bytes_sent += *n;
    ch.last_tx = MonoNowNs();
    if (ch.cur_off == sizeof(FrameHeader) + c->len) ch.cur = nullptr;
  }
  // Wait for writability only with bytes in hand; new chunks are pulled when acks arrive.
  bool more = ch.cur || ch.ctrl_off < ch.ctrl.size();
  SetWantOut(peer, ch, more);
}

void Engine::Impl::OnReadable(int peer, Channel& ch) {
  Peer& p = peers_[peer];
  size_t budget = 8 << 20;
  while (ch.conn && budget > 0) {
    if (!ch.in_payload) {
      auto n = ch.conn->Recv(reinterpret_cast<char*>(&ch.rhdr) + ch.rhdr_got,
                             sizeof(FrameHeader) - ch.rhdr_got);
      if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
      if (*n == 0) return;
      ch.last_rx = MonoNowNs();
      ch.rhdr_got += *n;
      if (ch.rhdr_got < sizeof(FrameHeader)) continue;
      ch.rhdr_got = 0;
      if (Status bad = frame::CheckHeader(ch.rhdr); !bad.ok()) {
        return FailChannel(peer, ch, "protocol_error", bad.message());
      }
      OnHeader(peer, ch);
      if (!ch.conn) return;  // the header failed the channel
    } else {
      size_t want = ch.rhdr.len - ch.rgot;
      char scratch[65536];
      char* dst = ch.rdst ? ch.rdst + ch.rgot : scratch;
      if (!ch.rdst) want = std::min(want, sizeof(scratch));
      auto n = ch.conn->Recv(dst, want);
      if (!n.ok()) return FailChannel(peer, ch, "transport_error", n.status().message());
      if (*n == 0) return;
      ch.last_rx = MonoNowNs();
      ch.rgot += *n;
      budget -= std::min(budget, *n);
      if (ch.rgot == ch.rhdr.len) {
        ch.in_payload = false;
        OnPayloadDone(peer, ch);
      }
    }
  }
  (void)p;
}

void Engine::Impl::OnHeader(int peer, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  const int n = cfg_.world_size;
  switch (h.type) {
    case kHello:
      if (ch.state == ChState::kHandshake) ChannelUp(peer, ch, nullptr);
      return;
    case kPing:
      return;
    case kBye: {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
      ch.conn.reset();
      ch.state = ChState::kDown;
      ch.bye = true;
      ch.cur = nullptr;
      // Not a fault, but what this channel carried unacknowledged (chunks relayed through a
      // departing rank included) must go another way.
      RequeueCarried(peer, ch, -1, nullptr);
      UpdateRoutes();
      for (auto& q : peers_)
        if (q.send.HasQueued()) PumpPeer(q.rank);
      return;
    }
    case kAck:
      if (h.flags & (kFlagRelayed | kFlagRelayAck)) {
        const int other = static_cast<int>(h.aux);
        if (other < 0 || other >= n || other == cfg_.rank) {
          return FailChannel(peer, ch, "protocol_error", "relayed ack names a bad rank");
        }
        if (h.flags & kFlagRelayed) return OnRelayedAck(peer, other, h.seq);
        peers_[other].relay_heard = MonoNowNs();
        return OnAck(other, h.seq);
      }
      return OnAck(peer, h.seq);
    case kPathDown: {
      Peer& p = peers_[peer];
      if (h.aux < p.ch.size() && &p.ch[h.aux] != &ch && p.ch[h.aux].state == ChState::kUp &&
          p.ch[h.aux].gen == static_cast<uint32_t>(h.seq)) {
        FailChannel(peer, p.ch[h.aux], "peer_notice",
                    "rank " + std::to_string(peer) + " reported the path down");
      }
      return;
    }
    case kData:
      break;
    default:
      return FailChannel(peer, ch, "protocol_error", "unknown frame type");
  }
  ch.rgot = 0;
  ch.rposted = false;
  ch.rdst = nullptr;
  ch.in_payload = h.len > 0;
  ch.rfwd = (h.flags & kFlagForward) != 0;
  ch.rsrc = (h.flags & kFlagRelayed) ? static_cast<int>(h.aux) : peer;
  if (h.flags & (kFlagForward | kFlagRelayed)) {
    const int other = static_cast<int>(h.aux);
    if (other < 0 || other >= n || other == cfg_.rank || other == peer) {
      return FailChannel(peer, ch, "protocol_error", "relayed chunk names a bad rank");
    }
  }
  if (ch.rfwd) {
    // To be forwarded (we are the relay): kept until the destination acknowledges it.
    ch.rpriv.Reset(h.len);
    ch.rdst = ch.rpriv.data();
    if (!ch.in_payload) OnPayloadDone(peer, ch);
    return;
  }
  const int src = ch.rsrc;
  Peer& p = peers_[src];
  if (p.recv.Applied(h.seq)) {
    // A duplicate (its ack was lost, or it was resent after a false alarm): read into
    // nothing, then ack again (OnPayloadDone).
    if (!ch.in_payload) OnPayloadDone(peer, ch);
    return;
  }
  // The same chunk may be arriving on another channel (a resend, possibly relayed).
  bool elsewhere = false;
  for (auto& q : peers_) {
    for (auto& other : q.ch) {
      if (&other != &ch && other.in_payload && !other.rfwd && other.rsrc == src &&
          other.rhdr.seq == h.seq && other.rdst)
        elsewhere = true;
    }
  }
  auto it = p.posted.find(h.tag);
  if (!elsewhere && it != p.posted.end()) {
    if (it->second.len != h.len) {
      Fail(InternalError("ftccl: message " + TagString(h.tag) + " from rank " +
                         std::to_string(src) + " has " + std::to_string(h.len) +
                         " bytes, receiver expected " + std::to_string(it->second.len)));
      ch.rdst = nullptr;
      return;
    }
    if (it->second.data) {
      ch.rdst = it->second.data;
      ch.rposted = true;
    } else {  // lands in an engine buffer, for the arrival action
      ch.rpriv.Reset(h.len);
      ch.rdst = ch.rpriv.data();
    }
  } else {
    ch.rpriv.Reset(h.len);
    ch.rdst = ch.rpriv.data();
  }
  if (!ch.in_payload) OnPayloadDone(peer, ch);
}

void Engine::Impl::OnPayloadDone(int peer, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  if (ch.rfwd) return ForwardChunk(peer, ch);
  const int src = ch.rsrc;
  Peer& p = peers_[src];
  // A relayed chunk is acknowledged to its origin through the relay it came from.
  if (src != peer) {
    p.relay_heard = MonoNowNs();
    QueueCtrl(ch, MakeHeader(kAck, 0, static_cast<uint32_t>(src), h.seq, 0, kFlagRelayed));
  } else {
    QueueCtrl(ch, MakeHeader(kAck, 0, 0, h.seq, 0));
  }
  // The ack goes out when OnReadable is done with what has arrived: acks of chunks that
  // arrived together leave in one send.
  if (ch.rdst == nullptr || p.recv.Applied(h.seq)) {
    if (p.recv.Applied(h.seq)) ++st_dups_;
    ch.rdst = nullptr;
    return;
  }
  p.recv.Apply(h.seq);
  // Another channel receiving the same chunk (a resend) must not write into the buffer now.
  for (auto& q : peers_) {
    for (auto& other : q.ch) {
      if (&other != &ch && other.in_payload && !other.rfwd && other.rsrc == src &&
          other.rhdr.seq == h.seq)
        other.rdst = nullptr;
    }
  }
  if (ch.rposted) {
    auto it = p.posted.find(h.tag);
    RecvReq req = it->second;
    p.posted.erase(it);
    if (req.has_arrival) OnArrival(req.arrival, req.data, req.len);
    Complete(req.cookie, false);
  } else {
    auto it = p.posted.find(h.tag);
    if (it != p.posted.end()) {
      RecvReq req = it->second;
      p.posted.erase(it);
      if (req.data && h.len) std::memcpy(req.data, ch.rpriv.data(), h.len);
      if (req.has_arrival) OnArrival(req.arrival, req.data ? req.data : ch.rpriv.data(), h.len);
      Complete(req.cookie, false);
    } else {
      p.unexpected[h.tag] = std::move(ch.rpriv);
    }
    ch.rpriv = Blob{};
  }
  ch.rdst = nullptr;
  ch.rposted = false;
}

// We are the relay: rank `from` sent us a chunk for rank rhdr.aux. It goes to the destination
// (over our own channels to it) as a chunk of `from`, with `from`'s sequence number, and stays
// ours until the destination acknowledges it; a copy we already hold is dropped.
void Engine::Impl::ForwardChunk(int from, Channel& ch) {
  const FrameHeader& h = ch.rhdr;
  const int dest = static_cast<int>(h.aux);
  ch.rfwd = false;
  ch.rdst = nullptr;
  auto key = std::make_tuple(dest, from, h.seq);
  if (!fwd_index_.count(key)) {
    auto c = std::make_unique<SendChunk>();
    c->seq = next_fwd_key_++;
    c->tag = h.tag;
    c->data = nullptr;
    c->len = h.len;
    c->cookie = 0;
    c->forward = true;
    c->origin = from;
    c->origin_channel = ch.index;
    c->oseq = h.seq;
    c->payload = std::move(ch.rpriv);
    fwd_index_[key] = c->seq;
    peers_[dest].send.Add(std::move(c));
    ++st_forwarded_;
    PumpPeer(dest);
  }
  ch.rpriv = Blob{};
  PumpSend(from, ch);
}

// The destination `dest` acknowledged a chunk of `origin` that we forwarded.
void Engine::Impl::OnRelayedAck(int dest, int origin, uint64_t oseq) {
  auto it = fwd_index_.find(std::make_tuple(dest, origin, oseq));
  if (it == fwd_index_.end()) return;  // a second ack (the chunk was forwarded twice)
  OnAck(dest, it->second);
}

void Engine::Impl::EnqueueSend(int peer, uint64_t tag, const char* data, size_t len,
                               uint64_t cookie) {
  auto c = std::make_unique<SendChunk>();
  c->tag = tag;
  c->data = data;
  c->len = static_cast<uint32_t>(len);
  c->cookie = cookie;
  peers_[peer].send.AddNext(std::move(c));
}

// The collective's next step, on the engine thread: reduce what arrived, send the result on.
void Engine::Impl::OnArrival(const Arrival& a, const char* got, size_t len) {
  ArrivalJoin* join = a.join;
  if (a.reduce && len) {
    const size_t count = len / SizeOf(a.type);
    if (a.own && (!join || join->arrived == 0)) {
      HostReduce3(a.out, a.own, got, count, a.type, a.op);
    } else {
      HostReduce(a.out, got, count, a.type, a.op);
    }
  }
  if (join) {
    if (++join->arrived < join->expected) return;
    for (const ArrivalJoin::Send& s : join->sends) {
      EnqueueSend(s.to, s.tag, a.out, len, s.cookie);
      PumpPeer(s.to);
    }
    return;
  }
  if (a.to >= 0) {
    EnqueueSend(a.to, a.tag, a.out, len, a.send_cookie);
    PumpPeer(a.to);
  }
}

void Engine::Impl::OnAck(int peer, uint64_t seq) {
  Peer& p = peers_[peer];
  SendChunk* c = p.send.Find(seq);
  if (!c) return;  // a second ack for a resent chunk
  if (c->channel >= 0) {
    Channel& ch = ChannelOf(peer, *c);
    if (ch.cur == c) return;  // still being written: cannot be acked yet (stale ack)
    ch.inflight.Remove(c->len);
  }
  std::unique_ptr<SendChunk> released = p.send.Release(seq);
  if (c->failover >= 0) {
    Failover& f = failovers_[c->failover];
    if (f.remaining > 0 && --f.remaining == 0) {
      Event e{EventType::kFailoverDone};
      e.peer = peer;
      e.channel = f.channel;
      e.path = f.path;
      e.cause = f.cause;
      e.detail = std::to_string(f.moved) + " chunks resent in " +
                 FormatDuration(MonoNowNs() - f.detected_mono);
      Emit(e);
    }
  }
  const int via = c->via;
  if (c->forward) {
    // Pass the destination's ack back to the chunk's origin on the channel the chunk came in
    // on, as acks of direct chunks do: if that channel fails before the ack gets through, the
    // origin resends the chunk (the relay forwards it again, the destination drops the
    // duplicate and acks again). An ack sent on another channel could die with that one
    // while the origin's chunk waits on a working channel for ever. Any working channel only
    // when that one is down (the origin is requeueing then).
    const int origin = c->origin;
    fwd_index_.erase(std::make_tuple(peer, origin, c->oseq));
    std::vector<Channel>& back = peers_[origin].ch;
    Channel* via_ch = nullptr;
    if (c->origin_channel >= 0 && c->origin_channel < static_cast<int>(back.size()) &&
        back[c->origin_channel].state == ChState::kUp) {
      via_ch = &back[c->origin_channel];
    }
    for (size_t k = 0; !via_ch && k < back.size(); ++k) {
      if (back[k].state == ChState::kUp) via_ch = &back[k];
    }
    if (via_ch) {
      QueueCtrl(*via_ch,
                MakeHeader(kAck, 0, static_cast<uint32_t>(peer), c->oseq, 0, kFlagRelayAck));
      PumpSend(origin, *via_ch);
    }
    released.reset();
  } else {
    uint64_t cookie = c->cookie;
    bool cancelled = c->detached || c->owned.data() || c->data == nullptr;
    released.reset();
    if (!cancelled) Complete(cookie, true);
  }
  PumpPeer(peer);
  if (via >= 0) PumpPeer(via);
}

void Engine::Impl::OnAccept(int nic) {
  while (true) {
    auto c = listeners_[nic]->Accept();
    if (!c.ok() || !*c) return;
    auto pa = std::make_unique<PendingAccept>();
    pa->conn = std::move(*c);
    pa->since = MonoNowNs();
    pa->nic = nic;
    epoll_event ev{};
    ev.events = EPOLLIN;
    // Pending connections are few and short-lived: find them by fd instead of by key.
    ev.data.u64 = Key(kFdPending, static_cast<uint64_t>(pa->conn->fd()));
    epoll_ctl(epfd_, EPOLL_CTL_ADD, pa->conn->fd(), &ev);
    pending_.push_back(std::move(pa));
  }
}

void Engine::Impl::OnPendingReadable(size_t idx) {
  PendingAccept& pa = *pending_[idx];
  auto n = pa.conn->Recv(reinterpret_cast<char*>(&pa.hdr) + pa.got, sizeof(FrameHeader) - pa.got);
  auto drop = [&] {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, pa.conn->fd(), nullptr);
    pending_.erase(pending_.begin() + static_cast<long>(idx));
  };
  if (!n.ok()) return drop();
  pa.got += *n;
  if (pa.got < sizeof(FrameHeader)) return;
  const FrameHeader h = pa.hdr;  // a copy: pa goes with the erase below, h is read after it
  int peer = static_cast<int>(h.aux);
  if (h.magic != kMagic || h.type != kHello || peer < 0 || peer >= cfg_.world_size ||
      peer == cfg_.rank || h.seq >= peers_[peer].ch.size() ||
      h.tag != static_cast<uint64_t>(cfg_.world_size)) {
    FL_LOG(kWarn, "ftccl") << "dropping a connection with a bad hello";
    return drop();
  }
  std::unique_ptr<transport::Connection> conn = std::move(pa.conn);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, conn->fd(), nullptr);
  pending_.erase(pending_.begin() + static_cast<long>(idx));
  ChannelUp(peer, peers_[peer].ch[h.seq], std::move(conn), h.len);
}

void Engine::Impl::HandleOp(const Op& op) {
  switch (op.kind) {
    case Op::kSend:
      EnqueueSend(op.peer, op.tag, op.data, op.len, op.cookie);
      break;
    case Op::kRecv: {
      Peer& p = peers_[op.peer];
      auto u = p.unexpected.find(op.tag);
      if (u != p.unexpected.end()) {
        if (u->second.size() != op.len) {
          Fail(InternalError("ftccl: message " + TagString(op.tag) + " size mismatch"));
          return;
        }
        if (op.data && op.len) std::memcpy(op.data, u->second.data(), op.len);
        if (op.has_arrival) OnArrival(op.arrival, op.data ? op.data : u->second.data(), op.len);
        p.unexpected.erase(u);
        Complete(op.cookie, false);
        return;
      }
      p.posted[op.tag] = {op.data, op.len, op.cookie, op.has_arrival, op.arrival};
      // A channel may be receiving this message into a private buffer: fine, it is copied
      // when complete.
      break;
    }
    case Op::kCancel: {
      for (auto& p : peers_) {
        p.posted.clear();
        p.unexpected.clear();
        for (auto& ch : p.ch) {
          if (ch.in_payload && ch.rposted) ch.rdst = nullptr;
          SendChunk* cur = ch.cur;
          if (cur && !cur->forward && !cur->owned.data() && cur->data) {
            // Half-written frame: keep the stream framed, but stop reading the user buffer.
            cur->owned.Reset(cur->len);
            if (cur->len) std::memcpy(cur->owned.data(), cur->data, cur->len);
            if (!cur->len) cur->data = nullptr;
          }
        }
        // Unsent chunks are dropped; sent-but-unacked ones are kept as "cancelled" so that
        // a late ack is understood, but they are never resent from user memory. Chunks we
        // forward for other ranks are theirs, not our collective's: kept.
        p.send.RemoveIf([&](SendChunk& c) {
          bool writing = c.forward || (c.channel >= 0 && ChannelOf(p.rank, c).cur == &c);
          if (writing) return false;
          if (c.channel >= 0) ChannelOf(p.rank, c).inflight.Remove(c.len);
          return true;
        });
      }
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        cancel_done_ = op.cookie;
        done_.clear();
        queued_recvs_ = queued_sends_ = 0;
      }
      done_cv_.notify_all();
      return;
    }
    case Op::kDetach: {
      // The caller's buffers are released: what is still unacknowledged is delivered (and
      // resent after a fault) from a copy.
      for (auto& p : peers_) {
        p.send.ForEach([&](SendChunk& c) {
          if (c.forward || c.detached || c.owned.data() || c.data == nullptr) return;
          if (c.len) {
            c.owned.Reset(c.len);
            std::memcpy(c.owned.data(), c.data, c.len);
          }
          c.detached = true;
          ++st_detached_;
          Complete(c.cookie, true);
        });
      }
      return;
    }
    case Op::kDump: {
      std::string s = DumpLocked();
      {
        std::lock_guard<std::mutex> lock(done_mu_);
        dump_ = std::move(s);
        dump_done_ = op.cookie;
      }
      done_cv_.notify_all();
      return;
    }
  }
}

void Engine::Impl::DrainInbox() {
  std::vector<Op> ops;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    ops.swap(inbox_);
  }
  std::set<int> touched;
  for (const Op& op : ops) {
    HandleOp(op);
    if (op.kind == Op::kSend) touched.insert(op.peer);
  }
  for (int p : touched) PumpPeer(p);
}

void Engine::Impl::OnLinkChanges() {
  Nanos now = MonoNowNs();
  for (const LinkChange& lc : links_.Read()) {
    for (size_t k = 0; k < nic_ifindex_.size(); ++k) {
      if (nic_ifindex_[k] != lc.ifindex) continue;
      bool was_down = nic_down_[k];
      nic_down_[k] = !lc.up;
      if (!lc.up && !was_down) {
        FL_LOG(kWarn, "ftccl") << "link down on NIC " << cfg_.nics[k];
        for (auto& p : peers_) {
          for (auto& ch : p.ch) {
            if (ch.local_nic != static_cast<int>(k)) continue;
            if (ch.state == ChState::kUp) {
              FailChannel(p.rank, ch, "link_down", "rtnetlink: NIC " + cfg_.nics[k] + " down");
            } else if (ch.conn) {
              epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
              ch.conn.reset();
              ch.state = ChState::kDown;
            }
          }
        }
      } else if (lc.up && was_down) {
        FL_LOG(kInfo, "ftccl") << "link up on NIC " << cfg_.nics[k];
        for (auto& p : peers_) {
          for (auto& ch : p.ch) {
            if (ch.local_nic == static_cast<int>(k) && ch.state == ChState::kDown) {
              ch.backoff = opt_.reconnect_min;
              ch.next_attempt = now;
            }
          }
        }
      }
    }
  }
}

bool Engine::Impl::HasPendingBytes(Channel& ch) {
  // Bytes already in the socket mean the path works and we were slow to read them.
  int avail = 0;
  return ch.conn && ioctl(ch.conn->fd(), FIONREAD, &avail) == 0 && avail > 0;
}

void Engine::Impl::Timers(Nanos now) {
  for (auto& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    bool any_up = false;
    for (auto& ch : p.ch) {
      switch (ch.state) {
        case ChState::kUp:
          if (now - ch.last_rx > opt_.dead_timeout && !HasPendingBytes(ch)) {
            FailChannel(p.rank, ch, "keepalive_timeout",
                        "nothing heard for " + FormatDuration(now - ch.last_rx));
            break;
          }
          if (now - ch.last_tx > opt_.keepalive_interval && !ch.cur &&
              ch.ctrl_off >= ch.ctrl.size()) {
            QueueCtrl(ch, MakeHeader(kPing, 0, 0, 0, 0));
            PumpSend(p.rank, ch);
          }
          break;
        case ChState::kConnecting:
        case ChState::kHandshake:
          if (now - ch.attempt_started > opt_.connect_timeout) {
            epoll_ctl(epfd_, EPOLL_CTL_DEL, ch.conn->fd(), nullptr);
            ch.conn.reset();
            ch.state = ChState::kDown;
            ch.next_attempt = now + ch.backoff;
            ch.backoff = std::min(ch.backoff * 2, opt_.reconnect_max);
          }
          break;
        case ChState::kDown:
          if (ch.bye) {
            any_up = true;  // a closed peer is not a fault
            break;
          }
          if (ch.active && now >= ch.next_attempt && !fail_stopped_) {
            if (ch.local_nic >= 0 && nic_down_[ch.local_nic] && nic_ifindex_[ch.local_nic] > 0) {
              // Missed link-up events are caught by polling the state once in a while.
              if (LinkIsUp(nic_ifindex_[ch.local_nic])) {
                nic_down_[ch.local_nic] = false;
              } else {
                ch.next_attempt = now + opt_.reconnect_max;
                break;
              }
            }
            StartConnect(p.rank, ch, now);
          }
          break;
      }
      any_up |= ch.state == ChState::kUp;
    }
    if (any_up) {
      p.all_down_since = 0;
    } else {
      if (p.all_down_since == 0) p.all_down_since = now;
      // Through a relay the peer is alive while its acks or chunks keep coming: two ranks of
      // a host that lost every NIC would otherwise each wait on the other as a relay.
      const Nanos quiet_since = std::max(p.all_down_since, p.relay_heard);
      bool work = !p.send.empty() || !p.posted.empty();
      // At exit (Flush) a peer out of reach that long just ends the wait for it: every
      // collective has returned, so there is no error to report.
      if (work && flushing_ && now - quiet_since > opt_.peer_dead_timeout) {
        p.gone = true;
      } else if (work && now - quiet_since > opt_.peer_dead_timeout) {
        FL_LOG(kError, "ftccl") << "no healthy path to rank " << p.rank
                                << "; what each channel waits for:\n"
                                << DumpLocked();
        Fail(UnavailableError("ftccl: no healthy path to rank " + std::to_string(p.rank) + " for " +
                              FormatDuration(now - p.all_down_since)));
        p.all_down_since = now;
      }
    }
  }
  // Pending accepts that never say hello.
  for (size_t i = 0; i < pending_.size();) {
    if (now - pending_[i]->since > opt_.connect_timeout) {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, pending_[i]->conn->fd(), nullptr);
      pending_.erase(pending_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

void Engine::Impl::Loop() {
  epoll_event evs[256];
  Nanos last_iter = MonoNowNs();
  Nanos tick = std::max<Nanos>(kNsPerMs, std::min(opt_.keepalive_interval, opt_.dead_timeout) / 4);
  Nanos next_timers = MonoNowNs() + tick;
  while (!stop_) {
    int timeout_ms = static_cast<int>(std::max<Nanos>(0, next_timers - MonoNowNs()) / kNsPerMs) + 1;
    int n = epoll_wait(epfd_, evs, 256, timeout_ms);
    {
      // When this thread itself was starved of CPU (an overloaded host), silence on the
      // channels says nothing about the paths: restart their clocks instead of failing them.
      Nanos now = MonoNowNs();
      if (now - last_iter > opt_.dead_timeout / 2) {
        for (auto& p : peers_)
          for (auto& ch : p.ch)
            if (ch.state == ChState::kUp)
              ch.last_rx = std::max(ch.last_rx, now - opt_.dead_timeout / 2);
      }
      last_iter = now;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t key = evs[i].data.u64;
      auto kind = static_cast<FdKind>(key >> 56);
      uint64_t a = (key >> 24) & 0xffffffffull;
      uint64_t b = key & 0xffffff;
      switch (kind) {
        case kFdWake: {
          uint64_t v;
          ssize_t r = read(wake_fd_, &v, sizeof(v));
          (void)r;
          DrainInbox();
          break;
        }
        case kFdLink:
          OnLinkChanges();
          break;
        case kFdListener:
          OnAccept(static_cast<int>(a));
          break;
        case kFdPending:
          for (size_t k = 0; k < pending_.size(); ++k) {
            if (static_cast<uint64_t>(pending_[k]->conn->fd()) == a) {
              OnPendingReadable(k);
              break;
            }
          }
          break;
        case kFdChannel: {
          int peer = static_cast<int>(a);
          if (peer >= static_cast<int>(peers_.size()) || b >= peers_[peer].ch.size()) break;
          Channel& ch = peers_[peer].ch[b];
          if (!ch.conn) break;
          if (ch.state == ChState::kConnecting) {
            if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) OnConnectable(peer, ch);
            break;
          }
          if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
            OnReadable(peer, ch);
            // Acks (and other control frames) queued while reading.
            if (ch.conn && ch.ctrl_off < ch.ctrl.size()) PumpSend(peer, ch);
          }
          if (ch.conn && (evs[i].events & EPOLLOUT)) PumpSend(peer, ch);
          break;
        }
      }
    }
    Nanos now = MonoNowNs();
    if (now >= next_timers) {
      Timers(now);
      next_timers = now + tick;
    }
    if (flushing_) {
      size_t owed = 0;
      for (const Peer& p : peers_) {
        bool left = p.gone;
        for (const Channel& ch : p.ch) left |= ch.bye;
        if (!left) owed += p.send.unacked();
      }
      owed_ = owed;
      ++loop_gen_;
    }
  }
  // Say goodbye on every channel that is between frames, so peers do not take our exit for
  // a fault (best effort: a channel in the middle of a frame just closes).
  for (auto& p : peers_) {
    for (auto& ch : p.ch) {
      if (ch.state != ChState::kUp || !ch.conn || ch.cur) continue;
      QueueCtrl(ch, MakeHeader(kBye, 0, 0, 0, 0));
      iovec v{ch.ctrl.data() + ch.ctrl_off, ch.ctrl.size() - ch.ctrl_off};
      auto n = ch.conn->Send(&v, 1);
      (void)n;
    }
  }
}

// ---------------------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const CommConfig& config, std::shared_ptr<transport::Transport> transport,
    const EngineOptions& options, std::shared_ptr<transport::Transport> host_transport) {
  auto impl =
      std::make_unique<Impl>(config, std::move(transport), std::move(host_transport), options);
  FL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

int Engine::rank() const { return impl_->cfg_.rank; }
int Engine::size() const { return impl_->cfg_.world_size; }
const EngineOptions& Engine::options() const { return impl_->opt_; }
std::vector<std::string> Engine::HostIds() const { return impl_->HostIds(); }
std::vector<std::vector<std::string>> Engine::NicAddrs() const { return impl_->NicAddrs(); }
void Engine::PostSend(int peer, uint64_t tag, const void* data, size_t len, uint64_t cookie) {
  impl_->Post(
      MakeOp(Op::kSend, peer, tag, const_cast<char*>(static_cast<const char*>(data)), len, cookie));
}
void Engine::PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie) {
  impl_->Post(MakeOp(Op::kRecv, peer, tag, static_cast<char*>(data), len, cookie));
}
void Engine::PostRecv(int peer, uint64_t tag, void* data, size_t len, uint64_t cookie,
                      const Arrival& arrival) {
  Op op = MakeOp(Op::kRecv, peer, tag, static_cast<char*>(data), len, cookie);
  op.has_arrival = true;
  op.arrival = arrival;
  impl_->Post(op);
}
StatusOr<Completion> Engine::WaitCompletion(Deadline deadline) { return impl_->Wait(deadline); }
Status Engine::WaitCounts(size_t recvs, size_t sends, size_t* recvs_done, size_t* sends_done,
                          Deadline deadline) {
  return impl_->WaitCounts(recvs, sends, recvs_done, sends_done, deadline);
}
void Engine::CancelAll() { impl_->CancelAll(); }
void Engine::DetachSends() { impl_->Post(MakeOp(Op::kDetach)); }
std::string Engine::DumpState() { return impl_->Dump(); }
Status Engine::error() const { return impl_->error(); }
EngineStats Engine::stats() const {
  EngineStats s;
  s.chunks_sent = impl_->st_sent_;
  s.chunks_requeued = impl_->st_requeued_;
  s.duplicates_dropped = impl_->st_dups_;
  s.path_faults = impl_->st_faults_;
  s.paths_restored = impl_->st_restored_;
  s.chunks_relayed = impl_->st_relayed_;
  s.chunks_forwarded = impl_->st_forwarded_;
  s.sends_detached = impl_->st_detached_;
  s.chunks_host_local = impl_->st_host_local_;
  return s;
}
void Engine::Fail(Status status) { impl_->Fail(std::move(status)); }
void Engine::Abort() { impl_->Fail(CancelledError("ftccl: communicator aborted")); }
void Engine::EmitCollective(EventType type, uint64_t seq, std::string detail) {
  Event e{type};
  e.seq = seq;
  e.detail = std::move(detail);
  impl_->Emit(e);
}

}  // namespace fl::ccl::ftccl
