#include "harness/proto/nic_sample.h"

#include <cstdint>
#include <optional>

namespace fl::harness {

namespace {

namespace pb = faultline::v1;

// A counter both sides always have, by the record's member and the sample's accessors.
struct Counter {
  uint64_t reports::NicCounters::*field;
  uint64_t (pb::NicSample::*get)() const;
  void (pb::NicSample::*set)(uint64_t);
};

constexpr Counter kCounters[] = {
    {&reports::NicCounters::rx_bytes, &pb::NicSample::rx_bytes, &pb::NicSample::set_rx_bytes},
    {&reports::NicCounters::tx_bytes, &pb::NicSample::tx_bytes, &pb::NicSample::set_tx_bytes},
    {&reports::NicCounters::rx_packets, &pb::NicSample::rx_packets, &pb::NicSample::set_rx_packets},
    {&reports::NicCounters::tx_packets, &pb::NicSample::tx_packets, &pb::NicSample::set_tx_packets},
    {&reports::NicCounters::rx_dropped, &pb::NicSample::rx_dropped, &pb::NicSample::set_rx_dropped},
    {&reports::NicCounters::tx_dropped, &pb::NicSample::tx_dropped, &pb::NicSample::set_tx_dropped},
    {&reports::NicCounters::rx_errors, &pb::NicSample::rx_errors, &pb::NicSample::set_rx_errors},
    {&reports::NicCounters::tx_errors, &pb::NicSample::tx_errors, &pb::NicSample::set_tx_errors},
};

// A pause count, which the driver may not keep (an optional on both sides).
struct PauseCounter {
  std::optional<uint64_t> reports::NicCounters::*field;
  bool (pb::NicSample::*has)() const;
  uint64_t (pb::NicSample::*get)() const;
  void (pb::NicSample::*set)(uint64_t);
};

constexpr PauseCounter kPauseCounters[] = {
    {&reports::NicCounters::rx_pause, &pb::NicSample::has_rx_pause, &pb::NicSample::rx_pause,
     &pb::NicSample::set_rx_pause},
    {&reports::NicCounters::tx_pause, &pb::NicSample::has_tx_pause, &pb::NicSample::tx_pause,
     &pb::NicSample::set_tx_pause},
};

}  // namespace

void SetNicCounters(const reports::NicCounters& c, pb::NicSample* n) {
  for (const Counter& k : kCounters) (n->*k.set)(c.*k.field);
  for (const PauseCounter& k : kPauseCounters)
    if (const auto& v = c.*k.field) (n->*k.set)(*v);
  n->mutable_extra()->insert(c.extra.begin(), c.extra.end());
}

reports::NicCounters NicCountersOf(const pb::NicSample& n) {
  reports::NicCounters c;
  for (const Counter& k : kCounters) c.*k.field = (n.*k.get)();
  for (const PauseCounter& k : kPauseCounters)
    if ((n.*k.has)()) c.*k.field = (n.*k.get)();
  c.extra.insert(n.extra().begin(), n.extra().end());
  return c;
}

}  // namespace fl::harness
