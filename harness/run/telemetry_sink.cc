#include "harness/run/telemetry_sink.h"

#include <algorithm>
#include <climits>

#include "common/json_util.h"
#include "common/log.h"
#include "common/process.h"
#include "harness/agent/telemetry_line.h"
#include "harness/proto/nic_sample.h"
#include "reports/metrics/metrics.h"

namespace fl::harness::run {

namespace pb = faultline::v1;

namespace {

// What is wrong with an agent's NIC sample ("" when nothing): its NIC must be a name, its
// extra counters few and named (they become a JSON column and chart labels).
std::string NicSampleProblem(const pb::NicSample& n) {
  if (!IsSafeName(n.nic(), kMaxNicCounterNameBytes)) return "a NIC sample whose NIC is not a name";
  if (static_cast<size_t>(n.extra_size()) > kMaxNicExtraCounters)
    return "a NIC sample of " + n.nic() + " with over " + std::to_string(kMaxNicExtraCounters) +
           " extra counters";
  for (const auto& kv : n.extra())
    if (!IsValidNicCounterName(kv.first))
      return "a NIC sample of " + n.nic() + " with an extra counter that is not a name";
  return "";
}

// The row of an agent's NIC sample; `off` is the host's clock offset (host minus ours).
reports::NicSampleRecord NicRecordOf(const std::string& run_id, const std::string& host, Nanos off,
                                     const pb::NicSample& n) {
  reports::NicSampleRecord r;
  r.run_id = run_id;
  r.host = host;
  r.nic = n.nic();
  r.wall_ns = n.wall_ns() - off;
  r.counters() = NicCountersOf(n);
  return r;
}

}  // namespace

int64_t Progress::MinIteration(int world, bool skip_lost) {
  std::lock_guard lock(mu);
  if (static_cast<int>(last_iteration.size()) < world) return -1;
  int64_t m = INT64_MAX;
  for (auto& [r, it] : last_iteration) {
    if (skip_lost) {
      auto e = exit_code.find(r);
      if (e != exit_code.end() && e->second != 0) continue;
    }
    m = std::min(m, it);
  }
  return m == INT64_MAX ? -1 : m;
}
int Progress::FailedRanks() {
  std::lock_guard lock(mu);
  int n = 0;
  for (auto& [r, c] : exit_code) n += c != 0;
  return n;
}
int Progress::Exited() {
  std::lock_guard lock(mu);
  return static_cast<int>(exit_code.size());
}
std::optional<std::pair<int, int>> Progress::FirstFailure() {
  std::lock_guard lock(mu);
  for (auto& [r, c] : exit_code)
    if (c != 0) return std::make_pair(r, c);
  return std::nullopt;
}

void OnTelemetry(RunContext& run, Progress& progress, const std::string& host,
                 const pb::TelemetryBatch& batch) {
  const Nanos off = run.session.OffsetOf(host);
  const int world = run.prepared.world;
  const std::string& run_id = run.ids.run_id;
  reports::BatchWriter& writer = *run.results.writer;
  std::vector<reports::SampleRecord> samples;
  std::vector<reports::EventRecord> events;
  std::vector<reports::NicSampleRecord> nics;
  {
    std::lock_guard lock(progress.mu);
    auto bad = [&](const std::string& why) {
      ++progress.bad_telemetry;
      if (progress.bad_telemetry_hosts.insert(host).second)
        FL_LOG(kWarn, "coord") << "dropped bad telemetry from agent " << host << ": " << why
                               << "; further bad records from it are only counted";
    };
    for (const auto& s : batch.samples()) {
      if (s.rank() < 0 || s.rank() >= world) {
        bad("a sample of rank " + std::to_string(s.rank()) + " (world size " +
            std::to_string(world) + ")");
        continue;
      }
      if (s.iteration() > static_cast<uint64_t>(INT64_MAX)) {
        bad("a sample with iteration " + std::to_string(s.iteration()));
        continue;
      }
      reports::SampleRecord r;
      r.run_id = run_id;
      r.rank = s.rank();
      r.iteration = static_cast<int64_t>(s.iteration());
      r.start_ns = s.start_wall_ns() - off;
      r.end_ns = s.end_wall_ns() - off;
      r.bytes = s.bytes();
      r.verified = s.verified();
      r.mismatch = s.mismatch();
      samples.push_back(r);
      auto& last = progress.last_iteration.try_emplace(s.rank(), -1).first->second;
      last = std::max<int64_t>(last, r.iteration);
      progress.samples++;
      progress.mismatches += s.mismatch();
      progress.last_sample_mono = MonoNowNs();
    }
    for (const auto& e : batch.events()) {
      if (e.rank() < -1 || e.rank() >= world) {
        bad("an event of rank " + std::to_string(e.rank()));
        continue;
      }
      if (!IsValidEventKind(e.kind())) {
        bad("an event whose kind is not a name");
        continue;
      }
      if (e.detail().size() > kMaxTelemetryLineBytes) {
        bad("a " + e.kind() + " event with a detail over " +
            std::to_string(kMaxTelemetryLineBytes) + " bytes");
        continue;
      }
      if (!e.detail().empty()) {
        auto d = ParseJson(e.detail(), e.kind() + " detail");
        if (!d.ok() || !d->is_object()) {
          bad("a " + e.kind() + " event whose detail is not a JSON object");
          continue;
        }
      }
      std::optional<int> code;
      if (e.kind() == "rank_exit") {
        auto c = e.rank() >= 0 ? ParseRankExitDetail(e.detail().empty() ? "{}" : e.detail())
                               : StatusOr<int>(InvalidArgumentError("rank_exit without a rank"));
        if (!c.ok()) {
          bad(c.status().ToUserString());
          continue;
        }
        code = *c;
      }
      reports::EventRecord r;
      r.run_id = run_id;
      r.rank = e.rank();
      r.wall_ns = e.wall_ns() - off;
      r.kind = e.kind();
      r.detail_json = e.detail().empty() ? "{}" : e.detail();
      const bool bad_exit = code && *code != 0;
      if ((bad_exit || r.kind == reports::kEventFaultDetected ||
           r.kind == reports::kEventFailoverDone || r.kind == reports::kEventPathRestored) &&
          progress.notable.size() < 4096)
        progress.notable.push_back(r);
      if ((r.kind == reports::kEventFaultDetected || r.kind == reports::kEventFailoverDone ||
           r.kind == reports::kEventPathRestored) &&
          progress.anchor_events.size() < 4096) {
        progress.anchor_events.push_back(r);
        progress.anchor_event_cv.notify_all();
      }
      events.push_back(r);
      if (code) progress.exit_code[e.rank()] = *code;
    }
    for (const auto& n : batch.nics()) {
      if (std::string why = NicSampleProblem(n); !why.empty()) {
        bad(why);
        continue;
      }
      nics.push_back(NicRecordOf(run_id, host, off, n));
    }
  }
  if (!samples.empty() && !writer.PushSamples(samples, Deadline::After(5 * kNsPerSec)).ok())
    run.results.dropped_telemetry += samples.size();
  if (!nics.empty() && !writer.PushNicSamples(nics, Deadline::After(5 * kNsPerSec)).ok())
    run.results.dropped_telemetry += nics.size();
  if (!events.empty() && !writer.PushEvents(events, Deadline::After(5 * kNsPerSec)).ok())
    run.results.dropped_telemetry += events.size();
}

}  // namespace fl::harness::run
