// Linked into every test binary that uses gRPC (fl_grpc_quiesce, tests/CMakeLists.txt).
//
// OpenSSL keeps a random generator per thread and frees it when the thread exits. gRPC's
// worker threads make them (a TLS handshake's ClientHello) and go on exiting after the last
// channel is gone. A test process that exits while one of them is half-way through exiting
// has LeakSanitizer, scanning at exit, report that thread's generators as leaked (CI, once:
// "tls: the token is not among the bytes an agent sends to an unverified peer"; here about 1
// run in 40 under load; RAND_get0_public/RAND_get0_private from
// tsi_ssl_client_handshaker_factory_create_handshaker with fast_unwind_on_malloc=0).
//
// So this listener holds one reference to the gRPC library for the whole run, gives it back
// with grpc_shutdown_blocking() (the last shutdown runs here, to the end), and then waits,
// up to 5 s, until this is the process's only thread: a thread leaves /proc/self/task only
// after its thread-exit destructors have run.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <grpc/grpc.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <thread>

namespace {

int ThreadCount() {
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return n;
}

class GrpcQuiesce : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo& info) override {
    TestEventListenerBase::testRunStarting(info);
    grpc_init();
  }
  void testRunEnded(const Catch::TestRunStats& stats) override {
    grpc_shutdown_blocking();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int n = ThreadCount();
    while (n > 1 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      n = ThreadCount();
    }
    if (n > 1) std::fprintf(stderr, "grpc_quiesce: %d threads still running at exit\n", n);
    TestEventListenerBase::testRunEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(GrpcQuiesce)
