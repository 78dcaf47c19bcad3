// Fuzzes ftccl's wire frames (ccl_under_test/ftccl/frame.h), which the engine reads from every
// peer and from anything that connects to its listening ports. Each input is a byte stream of
// frames: they are decoded one after another until the first error or the end. A decoded
// frame must pass CheckHeader, lie within the input and re-encode to the same bytes; an error
// must be InvalidArgument with a message. The decoded data and ack frames then drive a
// receive and a send window (reliable_window.h): a sequence number is applied at most once
// and an ack releases a chunk at most once.
// Seeds: tests/fuzz/corpus/ftccl_frame/ (streams of frames as the engine sends them).
#include <set>
#include <string>
#include <string_view>

#include "ccl_under_test/ftccl/frame.h"
#include "ccl_under_test/ftccl/reliable_window.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace frame = fl::ccl::ftccl::frame;
using fl::ccl::ftccl::RecvWindow;
using fl::ccl::ftccl::SendWindow;

struct Chunk : fl::ccl::ftccl::WindowSlot {};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = fl::fuzz::AsText(data, size);
  RecvWindow recv;
  std::set<uint64_t> applied;
  SendWindow<Chunk> send;
  for (int i = 0; i < 64; ++i) send.AddNext(std::make_unique<Chunk>());
  size_t released = 0;
  while (!in.empty()) {
    auto f = frame::DecodeFrame(in);
    if (!f.ok()) {
      FL_FUZZ_CHECK(f.status().code() == fl::Code::kInvalidArgument);
      FL_FUZZ_CHECK(!f.status().message().empty());
      break;
    }
    FL_FUZZ_CHECK(frame::CheckHeader(f->header).ok());
    FL_FUZZ_CHECK(f->size >= frame::kHeaderBytes && f->size <= in.size());
    FL_FUZZ_CHECK(frame::EncodeFrame(f->header, f->payload) == in.substr(0, f->size));
    if (f->header.type == frame::kData) {
      const bool fresh = recv.Apply(f->header.seq);
      // Sequence numbers start at 1: 0 reads as applied (a duplicate) from the start.
      const bool expect = f->header.seq != 0 && applied.insert(f->header.seq).second;
      FL_FUZZ_CHECK(fresh == expect);
      FL_FUZZ_CHECK(recv.Applied(f->header.seq));
    } else if (f->header.type == frame::kAck) {
      if (send.HasQueued() && f->header.flags & 1) send.Take(0, -1);
      if (send.Release(f->header.seq)) ++released;
      FL_FUZZ_CHECK(send.Find(f->header.seq) == nullptr);
      FL_FUZZ_CHECK(send.unacked() == 64 - released);
    }
    in.remove_prefix(f->size);
  }
  return 0;
}
