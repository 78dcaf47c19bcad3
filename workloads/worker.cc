#include "workloads/worker.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/log.h"

namespace fl::workloads {

StatusOr<LoopResult> RunLoop(Workload& workload, int rank, const LoopOptions& options,
                             TelemetrySink& sink, const std::atomic<bool>& stop) {
  if (options.iterations == 0 && options.duration_ns <= 0)
    return InvalidArgumentError("the loop needs iterations or a duration");
  const uint64_t check_every = options.check_every == 0 ? 1 : options.check_every;
  const Nanos end_mono = options.duration_ns > 0 ? MonoNowNs() + options.duration_ns : 0;
  LoopResult result;
  const uint64_t agree_every = options.agree_every == 0 ? 1 : options.agree_every;
  for (uint64_t it = options.first_iteration;; ++it) {
    if (options.iterations > 0 && it >= options.iterations) break;
    if (options.comm == nullptr) {
      if (end_mono > 0 && MonoNowNs() >= end_mono) break;
      if (stop.load()) break;
    } else if ((it - options.first_iteration) % agree_every == 0) {
      // Every rank reaches this point at the same iteration index: agree on stopping.
      int32_t flag = (end_mono > 0 && MonoNowNs() >= end_mono) || stop.load() ? 1 : 0;
      ccl::CollectiveOptions co;
      co.timeout = 30 * kNsPerSec;
      Status st =
          options.comm->AllReduce(&flag, &flag, 1, ccl::DataType::kInt32, ccl::ReduceOp::kMax, co);
      if (!st.ok()) {
        st.Prepend("agreeing on the end of the job before iteration " + std::to_string(it));
        return st;
      }
      if (flag != 0) break;
    }
    IterationSample s;
    s.rank = rank;
    s.iteration = it;
    s.start_wall_ns = WallNowNs();
    Status st = workload.Step(it);
    s.end_wall_ns = WallNowNs();
    if (!st.ok()) {
      sink.OnWorkerEvent("collective_failed", "{\"iteration\":" + std::to_string(it) +
                                                  ",\"code\":\"" +
                                                  std::string(CodeName(st.code())) + "\"}");
      st.Prepend("iteration " + std::to_string(it));
      return st;
    }
    s.bytes = workload.bytes_per_step();
    if (it % check_every == 0) {
      s.verified = true;
      ++result.verified;
      Status v = workload.Verify(it);
      if (!v.ok()) {
        s.mismatch = true;
        ++result.mismatches;
        FL_LOG(kError, "worker") << v.message();
      }
    }
    sink.OnSample(s);
    ++result.iterations;
  }
  return result;
}

void JsonLinesSink::WriteLine(const std::string& line) {
  if (!healthy_) return;
  std::lock_guard lock(mu_);
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd_, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      healthy_ = false;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void JsonLinesSink::OnSample(const IterationSample& s) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "{\"t\":\"sample\",\"rank\":%d,\"it\":%llu,\"start\":%lld,\"end\":%lld,\"bytes\":%llu,"
      "\"verified\":%s,\"mismatch\":%s}\n",
      s.rank, static_cast<unsigned long long>(s.iteration), static_cast<long long>(s.start_wall_ns),
      static_cast<long long>(s.end_wall_ns), static_cast<unsigned long long>(s.bytes),
      s.verified ? "true" : "false", s.mismatch ? "true" : "false");
  WriteLine(buf);
}

void JsonLinesSink::OnEvent(const ccl::Event& e) {
  WriteLine("{\"t\":\"ccl\",\"rank\":" + std::to_string(rank_) + ",\"e\":" + ccl::ToJson(e) +
            "}\n");
}

void JsonLinesSink::OnWorkerEvent(const std::string& kind, const std::string& detail_json) {
  WriteLine("{\"t\":\"worker\",\"rank\":" + std::to_string(rank_) +
            ",\"wall\":" + std::to_string(WallNowNs()) + ",\"kind\":\"" + kind +
            "\",\"detail\":" + (detail_json.empty() ? "{}" : detail_json) + "}\n");
}

}  // namespace fl::workloads
