// The TCP rendezvous store's wire format (tcp_store.h), as pure functions: framing, the
// messages, the challenge-response authentication. No sockets here, so the parser can be
// unit-tested and fuzzed on bytes (tests/fuzz/tcp_store_fuzz.cc).
//
// Every message is a frame: a 4-byte big-endian body length, then the body; body[0] is the
// message type. A connection goes:
//   server -> client  kHello    version(1) server_nonce(32)
//   client -> server  kAuth     client_nonce(32) HMAC-SHA256(token, "fl-kv-client" s c)(32)
//   server -> client  kAuthOk   HMAC-SHA256(token, "fl-kv-server" s c)(32)   (or kAuthFail)
// (s, c: the two nonces), so both sides prove they hold the token without sending it, and a
// recorded exchange cannot be replayed (the server's nonce is fresh per connection). Then any
// number of request/reply pairs, one at a time:
//   kSet  key_len(4) key value        -> kOk | kError message
//   kGet  wait_ms(4) key              -> kValue value | kNotFound (not set within wait_ms)
//                                        | kError message
// Authentication only: keys and values (the ranks' listening addresses) travel in clear.
//
// Thread-safety: everything here is a pure function or a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fl::ccl::kv {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
// Frames a peer may send before it has authenticated are at most this long (the kAuth frame
// is 65 bytes): an unauthenticated connection costs the server almost nothing.
inline constexpr uint32_t kMaxPreAuthFrame = 128;

enum class Type : uint8_t {
  kHello = 1,
  kAuth = 2,
  kAuthOk = 3,
  kAuthFail = 4,
  kSet = 5,
  kGet = 6,
  kOk = 7,
  kValue = 8,
  kNotFound = 9,
  kError = 10,
};

// Limits both sides check; the server's are TcpStoreServer::Options.
struct Limits {
  uint32_t max_key = 1024;
  uint32_t max_value = 1 << 20;
  // The largest frame a peer may send once authenticated.
  uint32_t MaxFrame() const { return 1 + 4 + max_key + max_value; }
};

// One decoded message. Which fields mean something depends on type.
struct Message {
  Type type = Type::kOk;
  std::string key;
  std::string value;     // kSet, kValue; the text of kError
  uint32_t wait_ms = 0;  // kGet
  std::string nonce;     // kHello (server's), kAuth (client's)
  std::string mac;       // kAuth, kAuthOk
};

// Splits frames off the front of a byte stream.
class FrameReader {
 public:
  enum class Result { kFrame, kNeedMore, kMalformed };
  // Appends received bytes. REQUIRES: size() stays bounded by the caller (it reads at most
  // max_frame + 4 bytes before calling Next).
  void Append(const char* data, size_t n) { buf_.append(data, n); }
  // kFrame: *body is the next frame's body (removed from the buffer). kMalformed: the length
  // prefix is 0 or larger than max_frame (the stream cannot be trusted any further).
  Result Next(uint32_t max_frame, std::string* body);
  size_t size() const { return buf_.size(); }

 private:
  std::string buf_;
};

// Frame (length prefix + body) of one message.
std::string Encode(const Message& m);
std::string EncodeHello(std::string_view server_nonce);
std::string EncodeAuth(std::string_view client_nonce, std::string_view mac);
std::string EncodeAuthOk(std::string_view mac);
std::string EncodeSet(std::string_view key, std::string_view value);
std::string EncodeGet(std::string_view key, uint32_t wait_ms);
std::string EncodeEmpty(Type t);  // kAuthFail, kOk, kNotFound
std::string EncodeValue(std::string_view value);
std::string EncodeError(std::string_view message);

// Decodes one frame body against the limits. InvalidArgument (saying what is wrong) for an
// unknown type, a field that does not fit the body, an empty or oversize key or value.
StatusOr<Message> Decode(std::string_view body, const Limits& limits);

// HMAC-SHA256(token, label || server_nonce || client_nonce), 32 raw bytes.
std::string AuthMac(std::string_view token, std::string_view label, std::string_view server_nonce,
                    std::string_view client_nonce);
inline constexpr std::string_view kClientLabel = "fl-kv-client";
inline constexpr std::string_view kServerLabel = "fl-kv-server";
// Constant-time comparison (CRYPTO_memcmp); different sizes compare unequal.
bool MacEqual(std::string_view a, std::string_view b);
// n bytes from the kernel's CSPRNG (getrandom).
StatusOr<std::string> RandomBytes(size_t n);

}  // namespace fl::ccl::kv
