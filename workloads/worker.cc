#include "workloads/worker.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "ccl_under_test/api/shrink_agreement.h"
#include "common/log.h"

namespace fl::workloads {

StatusOr<OnRankLoss> ParseOnRankLoss(std::string_view text) {
  if (text == "abort") return OnRankLoss::kAbort;
  if (text == "shrink") return OnRankLoss::kShrink;
  return InvalidArgumentError("on_rank_loss must be abort or shrink, got '" + std::string(text) +
                              "'");
}

bool IsRankLoss(const Status& status) {
  return status.code() == Code::kUnavailable || status.code() == Code::kDeadlineExceeded;
}

namespace {

std::string JsonInts(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// The group the loop runs on, and what it went through.
struct Group {
  ccl::Communicator* comm = nullptr;
  int generation = 0;          // shrinks so far
  std::vector<int> job_ranks;  // job rank of each rank of comm
};

// Recovers from `failure` of a collective in iteration `iteration` by shrinking the group to
// the survivors; returns the iteration to go on from. Any error ends the job (fail-stop).
StatusOr<uint64_t> ShrinkAfterRankLoss(const Status& failure, uint64_t iteration, int job_rank,
                                       Group& group, Workload& workload, const ShrinkOptions& so,
                                       TelemetrySink& sink) {
  ccl::Event lost(ccl::EventType::kFaultDetected);
  lost.wall_ns = WallNowNs();
  lost.mono_ns = MonoNowNs();
  lost.rank = job_rank;
  lost.cause = "rank_lost";
  lost.detail = failure.message();
  sink.OnEvent(lost);
  sink.OnWorkerEvent("rank_lost", "{\"iteration\":" + std::to_string(iteration) +
                                      ",\"generation\":" + std::to_string(group.generation) +
                                      ",\"code\":\"" + std::string(CodeName(failure.code())) +
                                      "\"}");
  ccl::ShrinkAgreementOptions ao;
  ao.prefix = so.key_prefix;
  ao.generation = static_cast<uint64_t>(group.generation);
  ao.rank = group.comm->rank();
  ao.world_size = group.comm->size();
  ao.resume_iteration = iteration;
  ao.grace = so.grace;
  ao.decision_timeout = so.timeout;
  auto decided = ccl::AgreeOnSurvivors(*so.store, ao);
  if (!decided.ok()) {
    Status st = decided.status();
    return st.Prepend("shrinking after \"" + failure.message() + "\"");
  }
  const ccl::ShrinkDecision& d = *decided;
  if (d.new_rank < 0)
    return UnavailableError("shrinking after \"" + failure.message() +
                            "\": the survivors left this rank out (it reported in after rank " +
                            std::to_string(d.leader) + "'s grace time)");
  if (d.excluded.empty()) {
    // Every rank reported in: nobody is lost, the failure was something else.
    Status st = failure;
    return st.Prepend("every rank is alive, nothing to shrink");
  }
  auto next = group.comm->Shrink(d.excluded, so.timeout);
  if (!next.ok()) {
    Status st = next.status();
    return st.Prepend("shrinking after \"" + failure.message() + "\"");
  }
  if ((*next)->rank() != d.new_rank || (*next)->size() != d.new_size)
    return InternalError("shrink: the CCL made rank " + std::to_string((*next)->rank()) + " of " +
                         std::to_string((*next)->size()) + ", the agreement says " +
                         std::to_string(d.new_rank) + " of " + std::to_string(d.new_size));
  FL_RETURN_IF_ERROR(workload.Init(next->get(), so.workload));
  std::vector<int> lost_job_ranks, job_ranks;
  for (int r : d.excluded) lost_job_ranks.push_back(group.job_ranks[static_cast<size_t>(r)]);
  for (int r : d.survivors) job_ranks.push_back(group.job_ranks[static_cast<size_t>(r)]);
  const int old_size = group.comm->size();
  // The previous shrunk communicator (this one's parent) is no longer needed; the caller's
  // original one stays the caller's.
  *so.shrunk = *std::move(next);
  group.comm = so.shrunk->get();
  group.job_ranks = std::move(job_ranks);
  ++group.generation;

  ccl::Event done(ccl::EventType::kFailoverDone);
  done.wall_ns = WallNowNs();
  done.mono_ns = MonoNowNs();
  done.rank = job_rank;
  done.peer = lost_job_ranks.front();
  done.cause = "shrunk";
  done.detail = "world " + std::to_string(old_size) + " -> " + std::to_string(d.new_size) +
                ", lost job ranks " + JsonInts(lost_job_ranks) + ", resuming at iteration " +
                std::to_string(d.resume_iteration);
  sink.OnEvent(done);
  sink.OnWorkerEvent("shrunk", "{\"generation\":" + std::to_string(group.generation) +
                                   ",\"lost\":" + JsonInts(lost_job_ranks) +
                                   ",\"rank\":" + std::to_string(d.new_rank) +
                                   ",\"world\":" + std::to_string(d.new_size) +
                                   ",\"resume\":" + std::to_string(d.resume_iteration) + "}");
  FL_LOG(kWarn, "worker") << "rank loss: shrank to " << d.new_size << " ranks (lost job ranks "
                          << JsonInts(lost_job_ranks) << "), resuming at iteration "
                          << d.resume_iteration;
  return d.resume_iteration;
}

}  // namespace

StatusOr<LoopResult> RunLoop(Workload& workload, int rank, const LoopOptions& options,
                             TelemetrySink& sink, const std::atomic<bool>& stop) {
  if (options.iterations == 0 && options.duration_ns <= 0)
    return InvalidArgumentError("the loop needs iterations or a duration");
  const bool elastic = options.on_rank_loss == OnRankLoss::kShrink;
  if (elastic) {
    if (!options.comm || !options.shrink.store || !options.shrink.shrunk)
      return InvalidArgumentError(
          "on_rank_loss shrink needs the communicator, the store and a place for the new one");
    if (Status st = options.comm->ShrinkSupport(); !st.ok())
      return st.Prepend("on_rank_loss shrink");
  }
  const uint64_t check_every = options.check_every == 0 ? 1 : options.check_every;
  const Nanos end_mono = options.duration_ns > 0 ? MonoNowNs() + options.duration_ns : 0;
  LoopResult result;
  const uint64_t agree_every = options.agree_every == 0 ? 1 : options.agree_every;
  Group group;
  group.comm = options.comm;
  for (int r = 0; group.comm && r < group.comm->size(); ++r) group.job_ranks.push_back(r);
  // A failed collective in iteration `it`: the error to end the loop with, or (shrunk) the
  // iteration to go on from.
  auto on_failure = [&](Status st, uint64_t it) -> StatusOr<uint64_t> {
    if (!elastic || !IsRankLoss(st)) return st;
    auto resume = ShrinkAfterRankLoss(st, it, rank, group, workload, options.shrink, sink);
    if (resume.ok()) ++result.shrinks;
    return resume;
  };
  for (uint64_t it = options.first_iteration;; ++it) {
    if (options.iterations > 0 && it >= options.iterations) break;
    if (group.comm == nullptr) {
      if (end_mono > 0 && MonoNowNs() >= end_mono) break;
      if (stop.load()) break;
    } else if ((it - options.first_iteration) % agree_every == 0) {
      // Every rank reaches this point at the same iteration index: agree on stopping.
      int32_t flag = (end_mono > 0 && MonoNowNs() >= end_mono) || stop.load() ? 1 : 0;
      ccl::CollectiveOptions co;
      // With shrink, every collective of the loop has the workload's deadline, so that the
      // grace time (which must outlast the survivors' detection spread) covers this one too.
      co.timeout = elastic ? options.shrink.workload.collective_timeout : 30 * kNsPerSec;
      Status st =
          group.comm->AllReduce(&flag, &flag, 1, ccl::DataType::kInt32, ccl::ReduceOp::kMax, co);
      if (!st.ok()) {
        st.Prepend("agreeing on the end of the job before iteration " + std::to_string(it));
        auto resume = on_failure(std::move(st), it);
        if (!resume.ok()) return std::move(resume).TakeStatus();
        it = *resume - 1;  // the loop's ++it (wraps from 0: unsigned, defined)
        continue;
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
      auto resume = on_failure(std::move(st), it);
      if (!resume.ok()) return std::move(resume).TakeStatus();
      it = *resume - 1;
      continue;
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
  result.world_size = group.comm ? group.comm->size() : 0;
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
