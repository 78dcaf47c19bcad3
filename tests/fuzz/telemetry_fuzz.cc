// Fuzzes the telemetry line parser: one JSON line a worker writes to its agent's socket
// ({"t":"sample",...}, {"t":"ccl","e":{...}}, {"t":"worker",...}), turned into the
// TelemetryBatch the agent sends to the coordinator; the batch is then serialised and parsed
// back as the coordinator receives it.
// Seeds: tests/fuzz/corpus/telemetry/ (hand-made lines of every kind).
//
// TODO(parse): the agent's parser is still a private member (AgentRuntime's Ingest in
// harness/agent/agent_runtime.cc), so IngestLine below is a line-for-line copy of it. Once
// harness/agent/ has the pure ParseTelemetryLine, call that instead and delete the copy.
#include <nlohmann/json.hpp>

#include "harness/proto/faultline.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace pb = faultline::v1;

// Copy of AgentRuntime's Ingest (see the TODO above).
void IngestLine(const std::string& line, pb::TelemetryBatch& batch) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return;
  const std::string t = j.value("t", "");
  if (t == "sample") {
    pb::Sample* s = batch.add_samples();
    s->set_rank(j.value("rank", 0));
    s->set_iteration(j.value("it", 0ull));
    s->set_start_wall_ns(j.value("start", 0ll));
    s->set_end_wall_ns(j.value("end", 0ll));
    s->set_bytes(j.value("bytes", 0ull));
    s->set_verified(j.value("verified", false));
    s->set_mismatch(j.value("mismatch", false));
  } else if (t == "ccl" && j.contains("e")) {
    const auto& e = j["e"];
    pb::Event* ev = batch.add_events();
    ev->set_rank(e.value("rank", j.value("rank", -1)));
    ev->set_wall_ns(e.value("wall_ns", 0ll));
    ev->set_kind(e.value("type", "ccl_event"));
    ev->set_detail(e.dump());
  } else if (t == "worker") {
    pb::Event* ev = batch.add_events();
    ev->set_rank(j.value("rank", -1));
    ev->set_wall_ns(j.value("wall", 0ll));
    ev->set_kind(j.value("kind", "worker"));
    ev->set_detail(j.contains("detail") ? j["detail"].dump() : "{}");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pb::TelemetryBatch batch;
  IngestLine(std::string(fl::fuzz::AsText(data, size)), batch);
  std::string wire;
  FL_FUZZ_CHECK(batch.SerializeToString(&wire));
  pb::TelemetryBatch received;
  FL_FUZZ_CHECK(received.ParseFromString(wire));
  FL_FUZZ_CHECK(received.samples_size() == batch.samples_size() &&
                received.events_size() == batch.events_size());
  return 0;
}
