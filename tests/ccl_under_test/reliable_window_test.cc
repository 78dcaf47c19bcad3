// ftccl's reliable window (reliable_window.h) on its own: sequence numbers, acks, requeue after
// a lost path, duplicates and reordering at the receiver, the per-channel window; and a
// seeded simulation of two paths that lose, duplicate and reorder chunks, after which every
// chunk has been applied exactly once.
#include "ccl_under_test/ftccl/reliable_window.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <vector>

namespace fl::ccl::ftccl {
namespace {

struct TestChunk : WindowSlot {
  int payload = 0;  // stands for the data: where the receiver applies it
};

using Window = SendWindow<TestChunk>;

TestChunk& Push(Window& w, int payload, uint32_t len = 100) {
  auto c = std::make_unique<TestChunk>();
  c->payload = payload;
  c->len = len;
  return w.AddNext(std::move(c));
}

TEST_CASE("SendWindow numbers chunks from 1 and sends the lowest queued first", "[unit]") {
  Window w;
  for (int i = 0; i < 3; ++i) Push(w, 10 + i);
  REQUIRE(w.unacked() == 3);
  REQUIRE(w.queued() == 3);
  TestChunk& a = w.Take(/*channel=*/0, /*via=*/-1);
  TestChunk& b = w.Take(1, -1);
  CHECK(a.seq == 1);
  CHECK(a.payload == 10);
  CHECK(a.channel == 0);
  CHECK(b.seq == 2);
  CHECK(b.channel == 1);
  CHECK_FALSE(b.queued());
  CHECK(w.queued() == 1);
  CHECK(w.FrontQueued() == 3);
  CHECK(w.unacked() == 3);  // in flight is still unacknowledged
}

TEST_CASE("SendWindow: an ack releases its chunk once, unknown and second acks release nothing",
          "[unit]") {
  Window w;
  Push(w, 1);
  Push(w, 2);
  w.Take(0, -1);
  auto got = w.Release(1);
  REQUIRE(got);
  CHECK(got->payload == 1);
  CHECK(w.Release(1) == nullptr);   // a second ack (the chunk was resent)
  CHECK(w.Release(99) == nullptr);  // never sent
  CHECK(w.Find(1) == nullptr);
  // An ack of a queued chunk (its first copy arrived before the path failed) takes it off the
  // queue as well: it is not sent again.
  auto queued = w.Release(2);
  REQUIRE(queued);
  CHECK_FALSE(w.HasQueued());
  CHECK(w.empty());
}

TEST_CASE("SendWindow: a lost path's chunks are requeued and resent on another, lowest first",
          "[unit]") {
  Window w;
  for (int i = 0; i < 4; ++i) Push(w, i);
  w.Take(0, -1);  // seq 1 on channel 0
  w.Take(1, -1);  // seq 2 on channel 1
  w.Take(0, -1);  // seq 3 on channel 0
  w.Take(0, 5);   // seq 4 on channel 0 of relay rank 5: another path, not failed
  std::vector<uint64_t> seen;
  const size_t moved = w.RequeueCarried(0, -1, [&](TestChunk& c) { seen.push_back(c.seq); });
  CHECK(moved == 2);
  CHECK(seen == std::vector<uint64_t>{1, 3});
  CHECK(w.queued() == 2);
  CHECK(w.Find(2)->channel == 1);  // untouched
  CHECK(w.Find(4)->via == 5);      // untouched
  TestChunk& again = w.Take(1, -1);
  CHECK(again.seq == 1);
  CHECK(again.channel == 1);
  CHECK(w.Take(1, -1).seq == 3);
  // Nothing left on channel 0.
  CHECK(w.RequeueCarried(0, -1) == 0);
  // Requeue of one chunk (a path closed without fault).
  w.Requeue(*w.Find(2));
  CHECK(w.Find(2)->queued());
  CHECK(w.FrontQueued() == 2);
}

TEST_CASE("SendWindow: Add keeps a caller's key, RemoveIf drops queued and in-flight chunks",
          "[unit]") {
  Window w;
  Push(w, 1);
  auto fwd = std::make_unique<TestChunk>();
  fwd->seq = (1ull << 63) + 7;  // a relay's forward key
  fwd->payload = 70;
  w.Add(std::move(fwd));
  CHECK(w.FrontQueued() == 1);  // own chunks (low keys) go first
  w.Take(0, -1);
  CHECK(w.FrontQueued() == (1ull << 63) + 7);
  w.RemoveIf([](TestChunk& c) { return c.payload == 70; });
  CHECK_FALSE(w.HasQueued());
  CHECK(w.unacked() == 1);
  w.RemoveIf([](TestChunk& c) { return !c.queued(); });
  CHECK(w.empty());
  // The next sequence number continues: removed numbers are never reused.
  CHECK(Push(w, 2).seq == 2);
}

TEST_CASE("RecvWindow applies out-of-order arrivals once each and remembers only the gap",
          "[unit]") {
  RecvWindow r;
  CHECK(r.low() == 1);
  CHECK(r.Apply(3));
  CHECK(r.Apply(5));
  CHECK(r.low() == 1);  // 1 still missing
  CHECK(r.out_of_order() == 2);
  CHECK_FALSE(r.Applied(1));
  CHECK(r.Applied(3));
  CHECK(r.Apply(1));
  CHECK(r.low() == 2);
  CHECK(r.Apply(2));
  CHECK(r.low() == 4);  // 1..3 contiguous
  CHECK(r.out_of_order() == 1);
  CHECK(r.Apply(4));
  CHECK(r.low() == 6);
  CHECK(r.out_of_order() == 0);
}

TEST_CASE("RecvWindow: a duplicate is refused whether below the low mark or above the gap",
          "[unit]") {
  RecvWindow r;
  CHECK(r.Apply(1));
  CHECK(r.Apply(4));
  CHECK_FALSE(r.Apply(1));  // below low
  CHECK_FALSE(r.Apply(4));  // above the gap
  CHECK(r.low() == 2);
  CHECK(r.out_of_order() == 1);
  CHECK(r.Apply(2));
  CHECK(r.Apply(3));
  CHECK_FALSE(r.Apply(3));
  CHECK(r.low() == 5);
}

TEST_CASE("InflightCount: a channel takes chunks while under the window, again after acks",
          "[unit]") {
  InflightCount f;
  const size_t window = 250;
  int taken = 0;
  while (f.HasRoom(window)) {
    f.Add(100);
    ++taken;
  }
  CHECK(taken == 3);  // 0, 100, 200 < 250: the third takes it past by less than a chunk
  CHECK(f.bytes == 300);
  CHECK(f.chunks == 3);
  f.Remove(100);  // an ack
  CHECK(f.bytes == 200);
  CHECK(f.chunks == 2);
  CHECK(f.HasRoom(window));
  f.Add(100);
  CHECK_FALSE(f.HasRoom(window));
  // A late ack after the count was cleared (the channel failed) does not wrap around.
  f.Clear();
  f.Remove(100);
  CHECK(f.bytes == 0);
  CHECK(f.chunks == 0);
}

// Two paths between a sender and a receiver that lose, duplicate and reorder frames and acks;
// a path with nothing left in transit while chunks are unacknowledged on it is declared dead
// (the engine's dead_timeout) and its chunks are requeued. Every chunk must be applied exactly
// once, with its own payload, and every chunk released.
TEST_CASE("Reliable window over lossy, duplicating, reordering paths: exactly-once apply",
          "[unit]") {
  constexpr int kChunks = 200;
  constexpr int kPaths = 2;
  constexpr size_t kWindow = 300;  // three 100-byte chunks per path
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto chance = [&](int percent) {
      return std::uniform_int_distribution<int>(0, 99)(rng) < percent;
    };
    Window w;
    for (int i = 0; i < kChunks; ++i) Push(w, 1000 + i);
    InflightCount inflight[kPaths];
    struct Frame {
      uint64_t seq;
      int payload;
    };
    std::deque<Frame> data[kPaths];  // sender -> receiver, per path
    std::deque<uint64_t> acks[kPaths];
    RecvWindow r;
    std::map<uint64_t, int> applied;  // seq -> times applied
    std::map<uint64_t, int> where;    // seq -> payload applied
    size_t requeued = 0, duplicates = 0;

    auto fill = [&](int path) {
      while (w.HasQueued() && inflight[path].HasRoom(kWindow)) {
        TestChunk& c = w.Take(path, -1);
        inflight[path].Add(c.len);
        data[path].push_back({c.seq, c.payload});
      }
    };
    auto on_ack = [&](uint64_t seq) {
      TestChunk* c = w.Find(seq);
      if (!c) return;  // a second ack
      if (!c->queued()) inflight[c->channel].Remove(c->len);
      REQUIRE(w.Release(seq));
    };
    int steps = 0;
    while (!w.empty() && steps++ < 200000) {
      for (int k = 0; k < kPaths; ++k) fill(k);
      const int path = std::uniform_int_distribution<int>(0, kPaths - 1)(rng);
      if (data[path].empty() && acks[path].empty()) {
        bool carries = false;
        w.ForEach([&](TestChunk& c) { carries |= c.channel == path; });
        if (carries) {  // silence with chunks outstanding: the path is failed
          requeued += w.RequeueCarried(path, -1);
          inflight[path].Clear();
        }
        continue;
      }
      if (!data[path].empty() && (acks[path].empty() || chance(50))) {
        // Any frame in transit may come next (reorder).
        const size_t i = std::uniform_int_distribution<size_t>(0, data[path].size() - 1)(rng);
        const Frame f = data[path][i];
        if (!chance(20)) data[path].erase(data[path].begin() + static_cast<long>(i));
        if (chance(10)) continue;  // lost
        if (r.Apply(f.seq)) {
          ++applied[f.seq];
          where[f.seq] = f.payload;
        } else {
          ++duplicates;
        }
        acks[path].push_back(f.seq);  // duplicates are acknowledged again
      } else {
        const uint64_t seq = acks[path].front();
        acks[path].pop_front();
        if (chance(10)) continue;  // the ack is lost
        on_ack(seq);
      }
    }
    REQUIRE(w.empty());
    CHECK(r.low() == kChunks + 1);
    CHECK(r.out_of_order() == 0);
    REQUIRE(applied.size() == static_cast<size_t>(kChunks));
    for (auto& [seq, times] : applied) {
      CHECK(times == 1);
      CHECK(where[seq] == 1000 + static_cast<int>(seq) - 1);
    }
    // The run exercised what it claims to.
    CHECK(requeued > 0);
    CHECK(duplicates > 0);
  }
}

}  // namespace
}  // namespace fl::ccl::ftccl
