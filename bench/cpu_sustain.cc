// bench_cpu_sustain: does this machine keep its CPU speed under sustained load? One thread per
// core runs a fixed unit of work (a 4 MiB copy and an integer loop) for --seconds and the
// program prints the units per second of every interval. On the development VM the rate falls
// by about 15% after 15-20 s at full load, which is why CPU-bound series (bench_ftccl) fall
// over their runs while link-bound ones do not (docs/performance.md).
//
//   bench_cpu_sustain [--seconds 90] [--interval 5] [--threads 0 (= every core)]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_cpu_sustain: CPU work rate over time at full load"};
  double seconds = 90, interval = 5;
  unsigned threads = 0;
  app.add_option("--seconds", seconds, "how long to run");
  app.add_option("--interval", interval, "print the rate every this many seconds");
  app.add_option("--threads", threads, "worker threads (0: one per core)");
  CLI11_PARSE(app, argc, argv);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());

  std::atomic<uint64_t> units{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      constexpr size_t kBytes = 4 << 20;
      std::vector<char> a(kBytes, 1), b(kBytes, 2);
      volatile uint32_t x = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        std::memcpy(b.data(), a.data(), kBytes);
        uint32_t v = x;
        for (int i = 0; i < 200000; ++i) v = v * 1664525u + 1013904223u;
        x = v + static_cast<uint8_t>(b[kBytes / 2]);
        units.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::printf("# %u threads, %.0f s, rate per %.0f s interval (units/s, %% of the first)\n",
              threads, seconds, interval);
  const auto start = Clock::now();
  auto last = start;
  uint64_t last_units = 0;
  double first = 0;
  while (Seconds(start, Clock::now()) < seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    const auto now = Clock::now();
    const uint64_t u = units.load();
    const double rate = (u - last_units) / Seconds(last, now);
    if (first == 0) first = rate;
    std::printf("%6.0f s  %8.0f units/s  %5.1f%%\n", Seconds(start, now), rate, 100 * rate / first);
    std::fflush(stdout);
    last = now;
    last_units = u;
  }
  stop = true;
  for (auto& w : workers) w.join();
  return 0;
}
