// The engine thread (engine_impl.h): one epoll loop over the wake-up eventfd, rtnetlink, the
// listeners, pending accepts and every channel; and the timers it runs each tick: keep-alives,
// silent paths, connect timeouts, reconnects, peers with no path left.
#include "ccl_under_test/ftccl/engine_impl.h"

#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

void Engine::Impl::Timers(Nanos now) {
  for (auto& p : peers_) {
    if (p.rank == cfg_.rank) continue;
    bool any_up = false;
    for (auto& ch : p.ch) {
      switch (ch.state) {
        case ChState::kUp: {
          // Silence here while the peer speaks on another path is this path's fault; silence
          // everywhere is more likely the peer's CPU.
          const Nanos heard_ago = PeerHeardElsewhereAgo(p, ch, now);
          const Nanos limit = ch.health.SilenceLimit(heard_ago);
          if (now - ch.last_rx > limit && !HasPendingBytes(ch)) {
            FailChannel(p.rank, ch, "keepalive_timeout",
                        "nothing heard for " + FormatDuration(now - ch.last_rx) +
                            " (dead timeout " + FormatDuration(limit) + "; " +
                            (heard_ago < 0 ? std::string("the peer silent on every path")
                                           : "the peer heard on another path " +
                                                 FormatDuration(heard_ago) + " ago") +
                            ")");
            break;
          }
          JudgeHealth(p, ch, now, heard_ago);
          if (ch.state != ChState::kUp) break;
          if (now - ch.last_tx > opt_.keepalive_interval && !ch.cur &&
              ch.ctrl_off >= ch.ctrl.size()) {
            QueueCtrl(ch, MakeHeader(kPing, 0, 0, 0, 0));
            PumpSend(p.rank, ch);
          }
          break;
        }
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
  // A starved engine thread (below) is one that did not run for this long.
  const Nanos starved = std::min(opt_.dead_timeout, opt_.health.stall_floor) / 2;
  Nanos next_timers = MonoNowNs() + tick;
  while (!stop_) {
    int timeout_ms = static_cast<int>(std::max<Nanos>(0, next_timers - MonoNowNs()) / kNsPerMs) + 1;
    int n = epoll_wait(epfd_, evs, 256, timeout_ms);
    {
      // When this thread itself was starved of CPU (an overloaded host), silence on the
      // channels says nothing about the paths: restart their clocks instead of failing them.
      Nanos now = MonoNowNs();
      if (now - last_iter > starved) {
        for (auto& p : peers_)
          for (auto& ch : p.ch)
            if (ch.state == ChState::kUp) {
              ch.last_rx = std::max(ch.last_rx, now - ch.health.DeadTimeout() / 2);
              ch.health.Excuse(now);
            }
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

}  // namespace fl::ccl::ftccl
