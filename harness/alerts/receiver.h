// An Alertmanager webhook receiver (docs/detectors.md, "Receiving alerts"): an HTTP server on
// one address that takes each POSTed notification (a JSON object, at most 1 MiB) and appends
// it as one line to an alerts file, the file `faultline score --alerts` reads. Each line is
// written with one write(2) and fdatasync'd before the 200 answer, so an answered
// notification is on disk. Anything else is answered and not written: a method other than
// POST 405, a body over the limit 413, a body that is not a JSON object 400.
//
// Thread-safety: Start, port, received and Stop from one thread; the server runs on its own.
// Ownership: it owns its thread, socket and file. Blocking: Stop joins the thread (an open
// connection is closed within its 10 s read limit at most).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness::alerts {

struct ReceiverOptions {
  std::string listen = "127.0.0.1:9095";  // HOST:PORT (an IPv4 or IPv6 literal); port 0: any
  std::string out_path;                   // the alerts file, created 0600 if missing
  size_t max_body = 1 << 20;
  Nanos read_timeout = 10 * kNsPerSec;
};

class AlertReceiver {
 public:
  // InvalidArgument for a bad address or a missing out_path, Unavailable when it cannot bind
  // or the file cannot be opened.
  [[nodiscard]] static StatusOr<std::unique_ptr<AlertReceiver>> Start(
      const ReceiverOptions& options);
  virtual ~AlertReceiver() = default;

  virtual int port() const = 0;
  // Notifications written to the file so far.
  virtual size_t received() const = 0;
  virtual void Stop() = 0;
};

}  // namespace fl::harness::alerts
