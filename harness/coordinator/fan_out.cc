#include "harness/coordinator/fan_out.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace fl::harness {

std::vector<Status> FanOut(const std::vector<std::string>& hosts, int max_in_flight,
                           const std::function<Status(const std::string& host)>& fn,
                           Deadline deadline) {
  std::vector<Status> out(hosts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < hosts.size(); i = next++) {
      if (deadline.Expired()) {
        out[i] = DeadlineExceededError("no time left to send to agent " + hosts[i]);
        continue;
      }
      try {
        out[i] = fn(hosts[i]);
      } catch (const std::exception& e) {  // nothing thrown may end the coordinator
        out[i] = InternalError("agent " + hosts[i] + ": " + e.what());
      }
    }
  };
  const size_t threads =
      std::min<size_t>(hosts.size(), static_cast<size_t>(std::max(1, max_in_flight)));
  if (threads <= 1) {
    work();
    return out;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

Status FirstError(const std::vector<Status>& statuses) {
  for (const Status& st : statuses)
    if (!st.ok()) return st;
  return OkStatus();
}

}  // namespace fl::harness
