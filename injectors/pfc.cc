#include "injectors/pfc.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "injectors/sys.h"

namespace fl::injectors {
namespace {
constexpr uint16_t kMacControl = 0x8808;
constexpr uint16_t kPfcOpcode = 0x0101;

void Put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = v >> 8;
  b[at + 1] = v & 0xff;
}
uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Opens an AF_PACKET socket bound to ifname inside netns; returns fd and ifindex.
Status OpenPacketSocket(const std::string& netns, const std::string& ifname, uint16_t proto,
                        int* fd_out, int* ifindex_out, std::array<uint8_t, 6>* mac) {
  auto open = [&]() -> Status {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(proto));
    if (fd < 0) return ErrnoStatus(errno, "AF_PACKET socket");
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) {
      close(fd);
      return NotFoundError("no interface " + ifname + " in " +
                           (netns.empty() ? "this namespace" : netns));
    }
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(proto);
    sll.sll_ifindex = static_cast<int>(idx);
    if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
      int e = errno;
      close(fd);
      return ErrnoStatus(e, "bind AF_PACKET to " + ifname);
    }
    if (mac) {
      ifreq ifr{};
      std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
      if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) std::memcpy(mac->data(), ifr.ifr_hwaddr.sa_data, 6);
    }
    *fd_out = fd;
    *ifindex_out = static_cast<int>(idx);
    return OkStatus();
  };
  return netns.empty() ? open() : RunInNetns(netns, open);
}
}  // namespace

std::vector<uint8_t> BuildPfcFrame(const PfcFrame& f) {
  std::vector<uint8_t> b(kPfcFrameLen, 0);
  std::memcpy(b.data(), kPfcDst.data(), 6);
  std::memcpy(b.data() + 6, f.src.data(), 6);
  Put16(b, 12, kMacControl);
  Put16(b, 14, kPfcOpcode);
  Put16(b, 16, f.class_enable);
  for (int i = 0; i < 8; ++i) Put16(b, 18 + 2 * i, f.quanta[i]);
  return b;
}

StatusOr<PfcFrame> ParsePfcFrame(const uint8_t* d, size_t len) {
  if (len < 34) return NotFoundError("too short for a PFC frame");
  if (std::memcmp(d, kPfcDst.data(), 6) != 0)
    return NotFoundError("not addressed to 01:80:C2:00:00:01");
  if (Get16(d + 12) != kMacControl || Get16(d + 14) != kPfcOpcode)
    return NotFoundError("not a PFC frame");
  PfcFrame f;
  std::memcpy(f.src.data(), d + 6, 6);
  f.class_enable = Get16(d + 16);
  for (int i = 0; i < 8; ++i) f.quanta[i] = Get16(d + 18 + 2 * i);
  return f;
}

StatusOr<std::unique_ptr<PfcGenerator>> PfcGenerator::Start(const std::string& netns,
                                                            const std::string& ifname,
                                                            PfcFrame frame, double fps) {
  if (!(fps > 0 && fps <= 1e6))
    return InvalidArgumentError("PFC frames per second must be in (0, 1e6]");
  std::unique_ptr<PfcGenerator> g(new PfcGenerator());
  int ifindex = 0;
  FL_RETURN_IF_ERROR(OpenPacketSocket(netns, ifname, kMacControl, &g->fd_, &ifindex, &frame.src));
  std::vector<uint8_t> bytes = BuildPfcFrame(frame);
  auto* raw = g.get();
  g->thread_ = std::thread([raw, bytes, fps] {
    const Nanos interval = static_cast<Nanos>(kNsPerSec / fps);
    Nanos next = MonoNowNs();
    while (!raw->stop_.load()) {
      if (send(raw->fd_, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())) {
        raw->sent_.fetch_add(1);
      } else {
        raw->errors_.fetch_add(1);
      }
      next += interval;
      // Sleep in slices so Stop() is prompt even at low rates.
      for (Nanos wait = next - MonoNowNs(); wait > 0 && !raw->stop_.load();
           wait = next - MonoNowNs()) {
        Nanos slice = std::min<Nanos>(wait, 50 * kNsPerMs);
        timespec ts{static_cast<time_t>(slice / kNsPerSec), static_cast<long>(slice % kNsPerSec)};
        nanosleep(&ts, nullptr);
      }
    }
  });
  return g;
}

void PfcGenerator::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

PfcGenerator::~PfcGenerator() { Stop(); }

StatusOr<std::unique_ptr<PfcCapture>> PfcCapture::Open(const std::string& netns,
                                                       const std::string& ifname) {
  std::unique_ptr<PfcCapture> c(new PfcCapture());
  int ifindex = 0;
  FL_RETURN_IF_ERROR(OpenPacketSocket(netns, ifname, ETH_P_ALL, &c->fd_, &ifindex, nullptr));
  return c;
}

PfcCapture::~PfcCapture() {
  if (fd_ >= 0) close(fd_);
}

std::vector<PfcFrame> PfcCapture::Collect(size_t min_frames, int64_t timeout_ns) {
  std::vector<PfcFrame> frames;
  Deadline deadline = Deadline::After(timeout_ns);
  uint8_t buf[2048];
  while (frames.size() < min_frames && !deadline.Expired()) {
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, deadline.RemainingMsForPoll()) <= 0) continue;
    ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) continue;
    auto f = ParsePfcFrame(buf, static_cast<size_t>(n));
    if (f.ok()) frames.push_back(*f);
  }
  return frames;
}

}  // namespace fl::injectors
