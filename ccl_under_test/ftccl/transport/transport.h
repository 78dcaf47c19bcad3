// The Transport contract inside ftccl: byte streams over one path (a local NIC to a remote
// NIC). ftccl's engine builds channels, framing, acknowledgements and failover on top; a
// transport only moves bytes and reports errors.
//
// Non-blocking, like NCCL's net plug-ins: no call here waits for the network.
//   - Connect() starts a connection and returns at once; the engine polls fd() for
//     writability and then calls FinishConnect(), which says whether it succeeded.
//   - Send/Recv move what they can now and return the byte count (0 = would block).
//   - Errors are Unavailable (path or peer down: the engine fails the channel over).
// Readiness is level-triggered on fd(); an implementation that buffers must keep fd()
// readable while it has bytes to hand out.
//
// Thread-safety: a Transport may be shared; a Connection or Listener is used by one thread
// at a time (ftccl's engine thread).
// Ownership: the caller owns what Connect/Listen/Accept return; destroying closes it.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace fl::ccl::ftccl::transport {

struct Properties {
  std::string name;          // "tcp", "faulty(tcp)"
  bool host_memory = true;   // can send from / receive into host memory
  bool cuda_memory = false;  // can send from / receive into device memory directly
};

class Connection {
 public:
  virtual ~Connection() = default;
  // The pollable descriptor (readable: Recv may return bytes; writable: Send may accept).
  virtual int fd() const = 0;
  // After fd() became writable on a connection from Connect: OK when connected,
  // Unavailable when the connection failed.
  virtual Status FinishConnect() = 0;
  // Writes as much of iov as the connection accepts now; 0 when it would block.
  virtual StatusOr<size_t> Send(const iovec* iov, int iovcnt) = 0;
  // Reads up to len bytes; 0 when nothing is there now; Unavailable on EOF or error.
  virtual StatusOr<size_t> Recv(void* buf, size_t len) = 0;
  // "127.0.0.1:40000->127.0.0.2:41234"
  virtual std::string Describe() const = 0;
  // The path's own counters, where the transport has them (TCP: TCP_INFO), for path health
  // (path_health.h). False when it has none.
  struct Counters {
    uint64_t segs_out = 0;       // segments sent
    uint64_t total_retrans = 0;  // segments retransmitted
    Nanos rtt = 0;               // the transport's smoothed round-trip time, 0 = unknown
  };
  virtual bool ReadCounters(Counters* out) const {
    (void)out;
    return false;
  }
};

class Listener {
 public:
  virtual ~Listener() = default;
  virtual int fd() const = 0;
  // The address peers connect to: "ip:port" (the port was chosen by the kernel).
  virtual std::string address() const = 0;
  // A pending connection, or nullptr when there is none now.
  virtual StatusOr<std::unique_ptr<Connection>> Accept() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Properties properties() const = 0;
  // Listens on local_ip, port chosen by the kernel.
  virtual StatusOr<std::unique_ptr<Listener>> Listen(const std::string& local_ip) = 0;
  // Starts connecting from local_ip to remote "ip:port"; see FinishConnect.
  virtual StatusOr<std::unique_ptr<Connection>> Connect(const std::string& local_ip,
                                                        const std::string& remote) = 0;
};

}  // namespace fl::ccl::ftccl::transport
