// TCP_INFO's counters for path health. Apart from tcp_transport.cc: glibc's <netinet/tcp.h>
// has an older struct tcp_info without tcpi_segs_out, and the kernel's <linux/tcp.h> cannot
// be included beside it.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace fl::ccl::ftccl::transport::tcp {

bool ReadTcpCounters(int fd, uint64_t* segs_out, uint64_t* total_retrans, int64_t* rtt_ns) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  // An old kernel's shorter struct ends before tcpi_segs_out.
  if (len < offsetof(tcp_info, tcpi_segs_out) + sizeof(info.tcpi_segs_out)) return false;
  *segs_out = info.tcpi_segs_out;
  *total_retrans = info.tcpi_total_retrans;
  *rtt_ns = static_cast<int64_t>(info.tcpi_rtt) * 1000;
  return true;
}

}  // namespace fl::ccl::ftccl::transport::tcp
