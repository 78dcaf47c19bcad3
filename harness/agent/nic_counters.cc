#include "harness/agent/nic_counters.h"

#include <dirent.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>

#include "common/file_util.h"
#include "common/log.h"
#include "common/name_chars.h"
#include "common/unique_fd.h"
#include "injectors/netlink.h"
#include "injectors/sys.h"

namespace fl::harness {

std::vector<NicTarget> NicTargetsOf(const std::string& host,
                                    const std::vector<injectors::Port>& ports) {
  std::vector<NicTarget> out;
  const std::string prefix = host + ".";
  for (const auto& p : ports) {
    if (p.sw || p.ifname.empty()) continue;
    std::string nic = p.name.rfind(prefix, 0) == 0 ? p.name.substr(prefix.size()) : p.name;
    if (nic.empty()) continue;
    NicTarget t{std::move(nic), p.netns, p.ifname};
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
  }
  return out;
}

// ---- rtnetlink -----------------------------------------------------------------------------

namespace {

constexpr size_t kAlign = 4;  // NLMSG_ALIGNTO and RTA_ALIGNTO
size_t Align(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The first `have` bytes of a kernel struct that grew over the years (rtnl_link_stats64 has
// fields newer kernels added at its end): what is missing stays zero.
template <typename T>
T LoadPrefix(const uint8_t* p, size_t have) {
  T v{};
  std::memcpy(&v, p, std::min(have, sizeof v));
  return v;
}

}  // namespace

StatusOr<NicCounters> ParseLinkStats(std::span<const uint8_t> msg) {
  if (msg.size() < sizeof(nlmsghdr))
    return DataLossError("netlink message of " + std::to_string(msg.size()) +
                         " bytes is shorter than its header");
  const auto h = Load<nlmsghdr>(msg.data());
  if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > msg.size())
    return DataLossError("netlink message says " + std::to_string(h.nlmsg_len) + " bytes, has " +
                         std::to_string(msg.size()));
  const uint8_t* payload = msg.data() + Align(sizeof(nlmsghdr));
  const size_t payload_len = h.nlmsg_len - std::min<size_t>(h.nlmsg_len, Align(sizeof(nlmsghdr)));
  if (h.nlmsg_type == NLMSG_ERROR) {
    if (payload_len < sizeof(nlmsgerr)) return DataLossError("truncated netlink error");
    const int err = -Load<nlmsgerr>(payload).error;
    return UnavailableError(ErrnoStatus(err, "get link statistics").message());
  }
  if (h.nlmsg_type != RTM_NEWLINK)
    return DataLossError("netlink message of type " + std::to_string(h.nlmsg_type) +
                         " is not RTM_NEWLINK");
  if (payload_len < sizeof(ifinfomsg)) return DataLossError("RTM_NEWLINK without its ifinfomsg");
  const uint8_t* at = payload + Align(sizeof(ifinfomsg));
  const uint8_t* end = payload + payload_len;
  const uint8_t* stats64 = nullptr;
  const uint8_t* stats32 = nullptr;
  size_t stats64_len = 0, stats32_len = 0;
  std::optional<uint32_t> carrier_changes;  // the ledger's kernel layer (reports/metrics/ledger.h)
  while (at < end) {
    if (static_cast<size_t>(end - at) < sizeof(rtattr))
      return DataLossError("RTM_NEWLINK: truncated attribute header");
    const auto a = Load<rtattr>(at);
    if (a.rta_len < sizeof(rtattr) || a.rta_len > static_cast<size_t>(end - at))
      return DataLossError("RTM_NEWLINK: attribute " + std::to_string(a.rta_type) + " of " +
                           std::to_string(a.rta_len) + " bytes overruns the message");
    const uint8_t* data = at + Align(sizeof(rtattr));
    const size_t len = a.rta_len - Align(sizeof(rtattr));
    if ((a.rta_type & NLA_TYPE_MASK) == IFLA_STATS64) {
      stats64 = data;
      stats64_len = len;
    } else if ((a.rta_type & NLA_TYPE_MASK) == IFLA_STATS) {
      stats32 = data;
      stats32_len = len;
    } else if ((a.rta_type & NLA_TYPE_MASK) == IFLA_CARRIER_CHANGES && len >= sizeof(uint32_t)) {
      carrier_changes = LoadPrefix<uint32_t>(data, len);
    }
    at += std::min<size_t>(Align(a.rta_len), static_cast<size_t>(end - at));
  }
  // The eight counters we keep are the first eight fields of both structs.
  NicCounters c;
  if (carrier_changes) c.extra["carrier_changes"] = *carrier_changes;
  auto fill = [&c](const auto& s) {
    c.rx_packets = s.rx_packets;
    c.tx_packets = s.tx_packets;
    c.rx_bytes = s.rx_bytes;
    c.tx_bytes = s.tx_bytes;
    c.rx_errors = s.rx_errors;
    c.tx_errors = s.tx_errors;
    c.rx_dropped = s.rx_dropped;
    c.tx_dropped = s.tx_dropped;
  };
  if (stats64 && stats64_len >= 8 * sizeof(uint64_t)) {
    fill(LoadPrefix<rtnl_link_stats64>(stats64, stats64_len));
    return c;
  }
  if (stats32 && stats32_len >= 8 * sizeof(uint32_t)) {
    fill(LoadPrefix<rtnl_link_stats>(stats32, stats32_len));
    return c;
  }
  return DataLossError("RTM_NEWLINK holds no link statistics (IFLA_STATS64 or IFLA_STATS)");
}

// ---- ethtool statistics ------------------------------------------------------------------

namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    size_t at = s.find(sep, from);
    out.push_back(s.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
}

// "rx3" -> "rx", "ch12" -> "ch": a per-queue prefix word.
bool StripQueuePrefix(std::string& word) {
  for (const char* p : {"rx", "tx", "ch", "q"}) {
    const size_t n = std::strlen(p);
    if (word.size() > n && word.compare(0, n, p) == 0 && AllDigits(word.substr(n))) {
      word.resize(n);
      return true;
    }
  }
  return false;
}

// The name a counter is kept under: printable, per-queue numbers taken out, bounded.
std::string KeptName(const std::string& raw) {
  std::string s = raw;
  for (char& ch : s)
    if (!IsNameChar(ch, "_.:-")) ch = '_';
  std::vector<std::string> words = Split(s, '_');
  std::vector<std::string> kept;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string w = words[i];
    if (AllDigits(w) && !kept.empty() && (kept.back() == "queue" || kept.back() == "q")) continue;
    if (i == 0) StripQueuePrefix(w);
    kept.push_back(std::move(w));
  }
  std::string out;
  for (const auto& w : kept) out += (out.empty() ? "" : "_") + w;
  if (out.size() > kMaxCounterNameBytes) out.resize(kMaxCounterNameBytes);
  return out;
}

bool Has(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

// +1 received, -1 sent, 0 neither or both: an "rx"/"tx" word ("rx_prio3_pause",
// "port.link_xoff_rx"), or a queue word ("rx3_pause").
int Direction(const std::string& lower) {
  std::string words = lower;
  for (char& ch : words)
    if (!IsNameChar(ch, "")) ch = '_';
  bool rx = false, tx = false;
  for (std::string w : Split(words, '_')) {
    StripQueuePrefix(w);
    if (w == "rx" || w == "rcv" || w == "recv") rx = true;
    if (w == "tx" || w == "xmit" || w == "xmt") tx = true;
  }
  return rx == tx ? 0 : (rx ? 1 : -1);
}

}  // namespace

EthtoolPlan PlanEthtoolCounters(const std::vector<std::string>& names) {
  EthtoolPlan plan;
  plan.n_stats = names.size();
  struct Kept {
    std::string name;
    bool pause = false;
    std::vector<size_t> indices;
  };
  std::vector<Kept> kept;  // in the driver's order
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string lower = names[i];
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool pause_word = Has(lower, "pause") || Has(lower, "xoff");
    // Durations and on/off transitions of pause are not frame counts; storms are events.
    const bool pause_frames = pause_word && !Has(lower, "duration") && !Has(lower, "transition") &&
                              !Has(lower, "storm") && !Has(lower, "time") && !Has(lower, "_us");
    const bool other = Has(lower, "drop") || Has(lower, "discard") || Has(lower, "err") ||
                       Has(lower, "out_of_buffer") || Has(lower, "ecn") || Has(lower, "cnp") ||
                       Has(lower, "storm");
    if (!pause_frames && !other) continue;
    if (pause_frames) {
      const int dir = Direction(lower);
      if (dir != 0) {
        plan.uses.push_back(
            {i, dir > 0 ? EthtoolPlan::Use::kRxPause : EthtoolPlan::Use::kTxPause, ""});
        (dir > 0 ? plan.has_rx_pause : plan.has_tx_pause) = true;
      }
    }
    const std::string name = KeptName(names[i]);
    if (name.empty()) continue;
    auto [it, fresh] = by_name.try_emplace(name, kept.size());
    if (fresh) kept.push_back({name, pause_frames, {}});
    kept[it->second].indices.push_back(i);
    kept[it->second].pause = kept[it->second].pause || pause_frames;
  }
  // Pause counters first, then the rest, each in the driver's order, up to the cap.
  std::stable_partition(kept.begin(), kept.end(), [](const Kept& k) { return k.pause; });
  if (kept.size() > kMaxEthtoolExtras) kept.resize(kMaxEthtoolExtras);
  for (const auto& k : kept)
    for (size_t i : k.indices) plan.uses.push_back({i, EthtoolPlan::Use::kExtra, k.name});
  return plan;
}

void ApplyEthtoolPlan(const EthtoolPlan& plan, std::span<const uint64_t> values, NicCounters& out) {
  for (const auto& u : plan.uses) {
    if (u.index >= values.size()) continue;
    const uint64_t v = values[u.index];
    switch (u.role) {
      case EthtoolPlan::Use::kRxPause:
        out.rx_pause = out.rx_pause.value_or(0) + v;
        break;
      case EthtoolPlan::Use::kTxPause:
        out.tx_pause = out.tx_pause.value_or(0) + v;
        break;
      case EthtoolPlan::Use::kExtra:
        out.extra[u.name] += v;
        break;
    }
  }
}

// ---- RDMA ports (sysfs) ---------------------------------------------------------------------

namespace {

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string Trimmed(const std::string& path) {
  auto s = ReadFile(path);
  if (!s.ok()) return "";
  std::string v = *s;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The counters kept of a port: the IB PMA ones every device has, and the RoCE congestion and
// buffer ones of hw_counters where the driver has them.
constexpr const char* kRdmaCounters[] = {
    "counters/port_rcv_data",      "counters/port_xmit_data",
    "counters/port_rcv_packets",   "counters/port_xmit_packets",
    "counters/port_rcv_errors",    "counters/port_xmit_discards",
    "counters/port_xmit_wait",     "counters/link_downed",
    "counters/symbol_error",       "hw_counters/out_of_buffer",
    "hw_counters/out_of_sequence", "hw_counters/np_cnp_sent",
    "hw_counters/rp_cnp_handled",  "hw_counters/np_ecn_marked_roce_packets",
};
static_assert(kMaxEthtoolExtras + std::size(kRdmaCounters) <= kMaxExtraCounters);

}  // namespace

std::string FindRdmaPort(const std::string& ib_class_dir, const std::string& ifname) {
  if (ifname.empty()) return "";
  std::string only_port_of_device;
  for (const auto& dev : ListDir(ib_class_dir)) {
    const std::string ports_dir = ib_class_dir + "/" + dev + "/ports";
    const std::vector<std::string> ports = ListDir(ports_dir);
    for (const auto& port : ports) {
      const std::string ndevs = ports_dir + "/" + port + "/gid_attrs/ndevs";
      for (const auto& gid : ListDir(ndevs))
        if (Trimmed(ndevs + "/" + gid) == ifname) return ports_dir + "/" + port;
    }
    if (only_port_of_device.empty() && ports.size() == 1 &&
        Exists(ib_class_dir + "/" + dev + "/device/net/" + ifname))
      only_port_of_device = ports_dir + "/" + ports.front();
  }
  return only_port_of_device;
}

void ReadRdmaCounters(const std::string& port_dir, NicCounters& out) {
  for (const char* rel : kRdmaCounters) {
    const std::string text = Trimmed(port_dir + "/" + rel);
    if (!AllDigits(text) || text.size() > 20) continue;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) continue;
    const char* name = std::strchr(rel, '/') + 1;
    out.extra[std::string("rdma_") + name] = v;
  }
}

// ---- KernelNicCounters -----------------------------------------------------------------------

struct KernelNicCounters::Sockets {
  std::unique_ptr<injectors::RtNetlink> netlink;  // bound in the NIC's namespace
  UniqueFd ioctl;  // SIOCETHTOOL resolves the name in the namespace of this socket
};

KernelNicCounters::KernelNicCounters(std::string ib_class_dir)
    : ib_class_dir_(std::move(ib_class_dir)) {}
KernelNicCounters::~KernelNicCounters() = default;

StatusOr<KernelNicCounters::Sockets*> KernelNicCounters::SocketsFor(const std::string& netns) {
  if (auto it = sockets_.find(netns); it != sockets_.end()) return it->second.get();
  auto s = std::make_unique<Sockets>();
  auto open = [&]() -> Status {
    s->ioctl = UniqueFd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (s->ioctl.get() < 0) return ErrnoStatus(errno, "ioctl socket");
    return OkStatus();
  };
  Status st = netns.empty() ? open() : injectors::RunInNetns(netns, open);
  if (st.ok()) {
    auto nl = injectors::RtNetlink::Open(netns);
    if (nl.ok()) s->netlink = std::move(*nl);
    st = nl.status();
  }
  if (!st.ok())
    return UnavailableError("NIC counters in namespace '" + netns + "': " + st.ToUserString());
  Sockets* raw = s.get();
  sockets_[netns] = std::move(s);
  return raw;
}

namespace {

int Ethtool(int fd, const std::string& ifname, void* data) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = static_cast<char*>(data);
  return ioctl(fd, SIOCETHTOOL, &ifr);
}

constexpr uint32_t kMaxEthtoolStats = 16384;  // a sanity bound on what a driver claims

// The driver's ETH_SS_STATS names; empty when it has none (veth has a few, lo none).
std::vector<std::string> EthtoolNames(int fd, const std::string& ifname) {
  std::vector<uint64_t> info_buf((sizeof(ethtool_sset_info) + sizeof(uint32_t) + 7) / 8 + 1);
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  if (Ethtool(fd, ifname, info) != 0 || !(info->sset_mask & (1ULL << ETH_SS_STATS))) return {};
  const uint32_t n = info->data[0];
  if (n == 0 || n > kMaxEthtoolStats) return {};
  std::vector<uint64_t> buf((sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN + 7) / 8);
  auto* gs = reinterpret_cast<ethtool_gstrings*>(buf.data());
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = n;
  if (Ethtool(fd, ifname, gs) != 0) return {};
  std::vector<std::string> names;
  for (uint32_t i = 0; i < std::min(gs->len, n); ++i) {
    const char* s = reinterpret_cast<const char*>(gs->data) + size_t{i} * ETH_GSTRING_LEN;
    names.emplace_back(s, strnlen(s, ETH_GSTRING_LEN));
  }
  return names;
}

// GSTATS values; empty on failure. `answered` gets the driver's count.
std::vector<uint64_t> EthtoolValues(int fd, const std::string& ifname, size_t n,
                                    uint32_t* answered) {
  std::vector<uint64_t> buf(sizeof(ethtool_stats) / 8 + n);
  auto* st = reinterpret_cast<ethtool_stats*>(buf.data());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = static_cast<uint32_t>(n);
  if (Ethtool(fd, ifname, st) != 0) return {};
  *answered = st->n_stats;
  return std::vector<uint64_t>(st->data, st->data + std::min<size_t>(st->n_stats, n));
}

}  // namespace

StatusOr<NicCounters> KernelNicCounters::Read(const NicTarget& nic) {
  if (nic.ifname.empty() || nic.ifname.size() >= IFNAMSIZ)
    return InvalidArgumentError("NIC " + nic.nic + ": bad interface name '" + nic.ifname + "'");
  FL_ASSIGN_OR_RETURN(Sockets * s, SocketsFor(nic.netns));
  auto msg = s->netlink->GetLinkMessage(nic.ifname);
  if (!msg.ok()) {
    // A namespace deleted and made again under its name: a fresh socket next time.
    sockets_.erase(nic.netns);
    // The kernel's refusal (no such interface) is Unavailable, as the NIC is for now.
    Status st = msg.status().code() == Code::kDeadlineExceeded
                    ? msg.status()
                    : UnavailableError(msg.status().message());
    return st.Prepend("NIC " + nic.nic + " (" + nic.ifname + ")");
  }
  auto counters = ParseLinkStats(*msg);
  if (!counters.ok()) return Status(counters.status()).Prepend("NIC " + nic.nic);
  NicCounters c = std::move(*counters);

  NicState& state = nics_[nic.netns + "/" + nic.ifname];
  if (!state.planned) {
    state.plan = PlanEthtoolCounters(EthtoolNames(s->ioctl.get(), nic.ifname));
    state.rdma_port = FindRdmaPort(ib_class_dir_, nic.ifname);
    state.planned = true;
  }
  if (state.plan.n_stats > 0 && !state.plan.uses.empty()) {
    uint32_t answered = 0;
    auto values = EthtoolValues(s->ioctl.get(), nic.ifname, state.plan.n_stats, &answered);
    if (answered == state.plan.n_stats) ApplyEthtoolPlan(state.plan, values, c);
    if (answered != state.plan.n_stats) state.planned = false;  // the driver changed: plan again
  }
  if (!state.rdma_port.empty()) ReadRdmaCounters(state.rdma_port, c);
  // Pause counts exist where the driver has them, whatever a read of them gave.
  if (state.plan.has_rx_pause && !c.rx_pause) c.rx_pause = 0;
  if (state.plan.has_tx_pause && !c.tx_pause) c.tx_pause = 0;
  while (c.extra.size() > kMaxExtraCounters) c.extra.erase(std::prev(c.extra.end()));  // guard
  return c;
}

// ---- NicSampler ------------------------------------------------------------------------------

Nanos NextTick(Nanos start, Nanos interval, Nanos now) {
  if (now < start) return start;
  return start + ((now - start) / interval + 1) * interval;
}

NicSampler::NicSampler(std::unique_ptr<NicCounterSource> source, Sink sink, Nanos interval)
    : source_(std::move(source)), sink_(std::move(sink)), interval_(std::max<Nanos>(interval, 1)) {}

NicSampler::~NicSampler() { Stop(); }

void NicSampler::Start(std::vector<NicTarget> nics) {
  if (nics.empty()) {
    Stop();
    return;
  }
  std::lock_guard control(control_mu_);
  {
    std::lock_guard lock(mu_);
    nics_ = std::move(nics);
    if (active_) return;  // running: the new list from the next round
    stop_ = false;
    active_ = true;
  }
  warned_.clear();  // no sampler thread now
  thread_ = std::thread([this] { Loop(); });
}

void NicSampler::Stop() {
  std::lock_guard control(control_mu_);
  {
    std::lock_guard lock(mu_);
    if (!active_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard lock(mu_);
  nics_.clear();
  stop_ = false;
  active_ = false;
}

bool NicSampler::running() const {
  std::lock_guard lock(mu_);
  return active_ && !stop_;
}

void NicSampler::Loop() {
  const Nanos start = MonoNowNs();
  std::unique_lock lock(mu_);
  for (bool first = true;; first = false) {
    if (!first) {
      const Nanos next = NextTick(start, interval_, MonoNowNs());
      while (!stop_) {
        const Nanos now = MonoNowNs();
        if (now >= next) break;
        cv_.wait_for(lock, std::chrono::nanoseconds(next - now));
      }
    }
    const bool last = stop_;  // the round after Stop is the last
    std::vector<NicTarget> nics = nics_;
    lock.unlock();
    Round(nics);
    lock.lock();
    if (last) return;
  }
}

void NicSampler::Round(const std::vector<NicTarget>& nics) {
  std::vector<NicSample> round;
  round.reserve(nics.size());
  for (const auto& n : nics) {
    auto c = source_->Read(n);
    if (!c.ok()) {
      if (!warned_[n.nic])
        FL_LOG(kWarn, "agent") << "cannot read the counters of " << n.nic
                               << " (further failures of it are not logged): "
                               << c.status().ToUserString();
      warned_[n.nic] = true;
      continue;
    }
    round.push_back({n.nic, WallNowNs(), std::move(*c)});
  }
  if (!round.empty()) sink_(std::move(round));
}

}  // namespace fl::harness
