#include "injectors/netlink.h"

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "injectors/sys.h"

namespace fl::injectors {

StatusOr<std::unique_ptr<RtNetlink>> RtNetlink::Open(const std::string& netns) {
  mnl_socket* nl = nullptr;
  auto open_socket = [&]() -> Status {
    nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (!nl) return ErrnoStatus(errno, "netlink socket");
    if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
      int e = errno;
      mnl_socket_close(nl);
      nl = nullptr;
      return ErrnoStatus(e, "netlink bind");
    }
    return OkStatus();
  };
  if (netns.empty()) {
    FL_RETURN_IF_ERROR(open_socket());
  } else {
    FL_RETURN_IF_ERROR(RunInNetns(netns, open_socket));
  }
  return std::unique_ptr<RtNetlink>(new RtNetlink(nl));
}

RtNetlink::~RtNetlink() {
  if (nl_) mnl_socket_close(nl_);
}

Status RtNetlink::Transact(void* buf, size_t len, LinkState* reply, std::vector<uint8_t>* raw) {
  auto* nlh = static_cast<nlmsghdr*>(buf);
  unsigned seq = nlh->nlmsg_seq;
  if (mnl_socket_sendto(nl_, buf, len) < 0) return ErrnoStatus(errno, "netlink send");
  Deadline deadline = Deadline::After(kNsPerSec);
  std::vector<char> rbuf(MNL_SOCKET_BUFFER_SIZE);
  unsigned portid = mnl_socket_get_portid(nl_);
  struct Out {
    LinkState* state;
    std::vector<uint8_t>* raw;
  } out{reply, raw};
  const bool get = reply != nullptr || raw != nullptr;
  while (true) {
    pollfd pfd{mnl_socket_get_fd(nl_), POLLIN, 0};
    int prc = poll(&pfd, 1, deadline.RemainingMsForPoll());
    if (prc < 0 && errno == EINTR) continue;
    if (prc == 0) return DeadlineExceededError("netlink: no answer from the kernel within 1s");
    ssize_t n = mnl_socket_recvfrom(nl_, rbuf.data(), rbuf.size());
    if (n < 0) return ErrnoStatus(errno, "netlink recv");
    int ret = mnl_cb_run(
        rbuf.data(), n, seq, portid,
        [](const nlmsghdr* h, void* data) -> int {
          auto* o = static_cast<Out*>(data);
          if (h->nlmsg_type != RTM_NEWLINK) return MNL_CB_OK;
          if (o->raw) {
            const auto* p = reinterpret_cast<const uint8_t*>(h);
            o->raw->assign(p, p + h->nlmsg_len);
          }
          if (o->state) {
            auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(h));
            o->state->admin_up = ifi->ifi_flags & IFF_UP;
            o->state->carrier = ifi->ifi_flags & IFF_LOWER_UP;
            o->state->ifindex = ifi->ifi_index;
          }
          return MNL_CB_OK;
        },
        &out);
    if (ret == -1) return ErrnoStatus(errno, "netlink");
    if (ret == MNL_CB_STOP) return OkStatus();
    // For a plain ACK mnl_cb_run returns MNL_CB_STOP; for a GET reply (no ACK requested
    // beyond the answer) one message suffices.
    if (get) return OkStatus();
  }
}

Status RtNetlink::SetLinkUp(const std::string& ifname, bool up, AckTiming* timing) {
  if (ifname.size() >= IFNAMSIZ) return InvalidArgumentError("interface name too long: " + ifname);
  alignas(nlmsghdr) char buf[512];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq_++;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = up ? IFF_UP : 0;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname.c_str());
  Nanos t0 = WallNowNs();
  Status s = Transact(buf, nlh->nlmsg_len, nullptr);
  Nanos t1 = WallNowNs();
  if (!s.ok()) return s.Prepend("set " + ifname + (up ? " up" : " down"));
  if (timing) {
    timing->requested_wall_ns = t0;
    timing->effective_wall_ns = t1;
  }
  return OkStatus();
}

namespace {

// An RTM_GETLINK request for ifname in buf (512 bytes); without the statistics unless asked.
nlmsghdr* GetLinkRequest(char* buf, unsigned seq, const std::string& ifname, bool stats) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST;
  nlh->nlmsg_seq = seq;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  if (!stats) mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname.c_str());
  return nlh;
}

}  // namespace

StatusOr<LinkState> RtNetlink::GetLink(const std::string& ifname) {
  if (ifname.size() >= IFNAMSIZ) return InvalidArgumentError("interface name too long: " + ifname);
  alignas(nlmsghdr) char buf[512];
  nlmsghdr* nlh = GetLinkRequest(buf, seq_++, ifname, false);
  LinkState st;
  Status s = Transact(buf, nlh->nlmsg_len, &st);
  if (!s.ok()) return s.Prepend("get link " + ifname);
  return st;
}

StatusOr<std::vector<uint8_t>> RtNetlink::GetLinkMessage(const std::string& ifname) {
  if (ifname.size() >= IFNAMSIZ) return InvalidArgumentError("interface name too long: " + ifname);
  alignas(nlmsghdr) char buf[512];
  nlmsghdr* nlh = GetLinkRequest(buf, seq_++, ifname, true);
  std::vector<uint8_t> raw;
  Status s = Transact(buf, nlh->nlmsg_len, nullptr, &raw);
  if (!s.ok()) return s.Prepend("get link " + ifname);
  if (raw.empty()) return UnavailableError("get link " + ifname + ": no answer message");
  return raw;
}

StatusOr<RtNetlink*> RtNetlinkPool::Get(const std::string& netns) {
  auto it = sockets_.find(netns);
  if (it != sockets_.end()) return it->second.get();
  FL_ASSIGN_OR_RETURN(auto nl, RtNetlink::Open(netns));
  RtNetlink* raw = nl.get();
  sockets_[netns] = std::move(nl);
  return raw;
}

Status RtNetlinkPool::SetLinkUp(const std::string& netns, const std::string& ifname, bool up,
                                AckTiming* timing) {
  std::lock_guard<std::mutex> l(mu_);
  FL_ASSIGN_OR_RETURN(RtNetlink * nl, Get(netns));
  Status s = nl->SetLinkUp(ifname, up, timing);
  if (s.ok()) return s;
  // A cached socket may belong to a namespace that was deleted and re-created under the same
  // name: retry once on a fresh socket.
  sockets_.erase(netns);
  FL_ASSIGN_OR_RETURN(nl, Get(netns));
  return nl->SetLinkUp(ifname, up, timing);
}

StatusOr<LinkState> RtNetlinkPool::GetLink(const std::string& netns, const std::string& ifname) {
  std::lock_guard<std::mutex> l(mu_);
  FL_ASSIGN_OR_RETURN(RtNetlink * nl, Get(netns));
  auto st = nl->GetLink(ifname);
  if (st.ok()) return st;
  sockets_.erase(netns);
  FL_ASSIGN_OR_RETURN(nl, Get(netns));
  return nl->GetLink(ifname);
}

Status SetLinkUp(const std::string& netns, const std::string& ifname, bool up, AckTiming* timing) {
  FL_ASSIGN_OR_RETURN(auto nl, RtNetlink::Open(netns));
  return nl->SetLinkUp(ifname, up, timing);
}

StatusOr<LinkState> GetLink(const std::string& netns, const std::string& ifname) {
  FL_ASSIGN_OR_RETURN(auto nl, RtNetlink::Open(netns));
  return nl->GetLink(ifname);
}

}  // namespace fl::injectors
