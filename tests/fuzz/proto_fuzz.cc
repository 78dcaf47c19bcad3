// Fuzzes the control-plane messages (harness/proto/faultline.proto): the input is parsed as
// each top-level message (AgentMessage, what the coordinator reads; CoordinatorMessage, what
// an agent reads), serialised and parsed back (must round-trip), and then run through the
// conversion code each side applies that is callable without a gRPC stream:
//   agent:       InjectFault -> injectors::FaultSpec -> the injector's Validate and
//                lab::CheckFaultSpec (no fabric); LaunchRanks' worker_args_json parse.
//   coordinator: Ack -> fl::Status (code and message), Hello's token comparison, telemetry
//                event details parsed as JSON.
// Seeds: tests/fuzz/corpus/proto/*.txtpb, encoded with protoc at build time.
#include <nlohmann/json.hpp>

#include "harness/control/auth.h"
#include "harness/lab/fault_spec.h"
#include "harness/proto/faultline.pb.h"
#include "injectors/injector.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace fl;
namespace pb = faultline::v1;

const injectors::InjectorRegistry& Injectors() {
  static const injectors::InjectorRegistry* registry = [] {
    auto* r = new injectors::InjectorRegistry("injector");
    FL_FUZZ_CHECK(injectors::RegisterBuiltinInjectors(*r).ok());
    return r;
  }();
  return *registry;
}

template <typename M>
bool ParseAndRoundTrip(const uint8_t* data, size_t size, M& m) {
  if (!m.ParseFromArray(data, static_cast<int>(size))) return false;
  std::string wire;
  FL_FUZZ_CHECK(m.SerializeToString(&wire));
  M again;
  FL_FUZZ_CHECK(again.ParseFromString(wire));
  FL_FUZZ_CHECK(again.ByteSizeLong() == m.ByteSizeLong());
  (void)m.DebugString();
  return true;
}

void AgentSide(const pb::CoordinatorMessage& m) {
  if (m.has_inject()) {
    const pb::InjectFault& f = m.inject();
    injectors::FaultSpec spec;  // as FaultKeeper::Inject builds it
    spec.kind = f.kind();
    spec.target = f.target();
    spec.params = {f.params().begin(), f.params().end()};
    // The agent multiplies without a check (see the report: duration_ms * kNsPerMs overflows
    // for duration_ms > INT64_MAX / 1e6); here such inputs stop before the multiplication.
    if (f.duration_ms() > INT64_MAX / kNsPerMs || f.duration_ms() < INT64_MIN / kNsPerMs) return;
    spec.duration = f.duration_ms() * kNsPerMs;
    auto inj = Injectors().Create(spec.kind);
    if (inj.ok()) (void)(*inj)->Validate(spec);
    (void)lab::CheckFaultSpec(spec, Injectors(), nullptr);
  }
  if (m.has_launch()) {
    nlohmann::json extra = nlohmann::json::parse(m.launch().worker_args_json(), nullptr, false);
    if (extra.is_array())
      for (const auto& a : extra)
        if (a.is_string()) (void)a.get<std::string>();
  }
}

void CoordinatorSide(const pb::AgentMessage& m) {
  if (m.has_hello()) (void)harness::TokensEqual(m.hello().token(), "fuzz-token");
  if (m.has_ack() && !m.ack().ok()) {
    Status st(static_cast<Code>(m.ack().error_code()), m.ack().error());
    (void)st.ToString();
  }
  if (m.has_telemetry())
    for (const pb::Event& e : m.telemetry().events()) {
      auto d = nlohmann::json::parse(e.detail(), nullptr, false);
      (void)d.is_object();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Injectors();
  pb::CoordinatorMessage down;
  if (ParseAndRoundTrip(data, size, down)) AgentSide(down);
  pb::AgentMessage up;
  if (ParseAndRoundTrip(data, size, up)) CoordinatorSide(up);
  return 0;
}
