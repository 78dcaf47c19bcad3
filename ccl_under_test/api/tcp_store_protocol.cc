#include "ccl_under_test/api/tcp_store_protocol.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>

namespace fl::ccl::kv {
namespace {

constexpr size_t kMaxErrorText = 1024;

void PutU32(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

uint32_t GetU32(std::string_view s) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

std::string Frame(Type t, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  PutU32(&out, static_cast<uint32_t>(1 + payload.size()));
  out.push_back(static_cast<char>(t));
  out.append(payload);
  return out;
}

Status Bad(std::string what) { return InvalidArgumentError("kv frame: " + std::move(what)); }

Status CheckKey(std::string_view key, const Limits& l) {
  if (key.empty()) return Bad("empty key");
  if (key.size() > l.max_key)
    return Bad("key of " + std::to_string(key.size()) + " bytes (at most " +
               std::to_string(l.max_key) + ")");
  return OkStatus();
}

Status CheckValue(std::string_view value, const Limits& l) {
  if (value.size() > l.max_value)
    return Bad("value of " + std::to_string(value.size()) + " bytes (at most " +
               std::to_string(l.max_value) + ")");
  return OkStatus();
}

}  // namespace

FrameReader::Result FrameReader::Next(uint32_t max_frame, std::string* body) {
  if (buf_.size() < 4) return Result::kNeedMore;
  uint32_t len = GetU32(buf_);
  if (len == 0 || len > max_frame) return Result::kMalformed;
  if (buf_.size() - 4 < len) return Result::kNeedMore;
  body->assign(buf_, 4, len);
  buf_.erase(0, 4 + static_cast<size_t>(len));
  return Result::kFrame;
}

std::string EncodeHello(std::string_view server_nonce) {
  std::string p(1, static_cast<char>(kVersion));
  p.append(server_nonce);
  return Frame(Type::kHello, p);
}

std::string EncodeAuth(std::string_view client_nonce, std::string_view mac) {
  std::string p(client_nonce);
  p.append(mac);
  return Frame(Type::kAuth, p);
}

std::string EncodeAuthOk(std::string_view mac) { return Frame(Type::kAuthOk, mac); }

std::string EncodeSet(std::string_view key, std::string_view value) {
  std::string p;
  PutU32(&p, static_cast<uint32_t>(key.size()));
  p.append(key);
  p.append(value);
  return Frame(Type::kSet, p);
}

std::string EncodeGet(std::string_view key, uint32_t wait_ms) {
  std::string p;
  PutU32(&p, wait_ms);
  p.append(key);
  return Frame(Type::kGet, p);
}

std::string EncodeEmpty(Type t) { return Frame(t, {}); }
std::string EncodeValue(std::string_view value) { return Frame(Type::kValue, value); }
std::string EncodeError(std::string_view message) {
  return Frame(Type::kError, message.substr(0, kMaxErrorText));
}

std::string Encode(const Message& m) {
  switch (m.type) {
    case Type::kHello:
      return EncodeHello(m.nonce);
    case Type::kAuth:
      return EncodeAuth(m.nonce, m.mac);
    case Type::kAuthOk:
      return EncodeAuthOk(m.mac);
    case Type::kSet:
      return EncodeSet(m.key, m.value);
    case Type::kGet:
      return EncodeGet(m.key, m.wait_ms);
    case Type::kValue:
      return EncodeValue(m.value);
    case Type::kError:
      return EncodeError(m.value);
    case Type::kAuthFail:
    case Type::kOk:
    case Type::kNotFound:
      return EncodeEmpty(m.type);
  }
  return EncodeEmpty(m.type);
}

StatusOr<Message> Decode(std::string_view body, const Limits& limits) {
  if (body.empty()) return Bad("empty body");
  Message m;
  const uint8_t t = static_cast<uint8_t>(body[0]);
  std::string_view p = body.substr(1);
  auto exact = [&](size_t n) -> Status {
    if (p.size() != n)
      return Bad("type " + std::to_string(t) + " with " + std::to_string(p.size()) +
                 " payload bytes (want " + std::to_string(n) + ")");
    return OkStatus();
  };
  switch (t) {
    case static_cast<uint8_t>(Type::kHello):
      FL_RETURN_IF_ERROR(exact(1 + kNonceBytes));
      if (static_cast<uint8_t>(p[0]) != kVersion)
        return Bad("protocol version " + std::to_string(static_cast<uint8_t>(p[0])) +
                   " (this build speaks " + std::to_string(kVersion) + ")");
      m.type = Type::kHello;
      m.nonce = std::string(p.substr(1));
      return m;
    case static_cast<uint8_t>(Type::kAuth):
      FL_RETURN_IF_ERROR(exact(kNonceBytes + kMacBytes));
      m.type = Type::kAuth;
      m.nonce = std::string(p.substr(0, kNonceBytes));
      m.mac = std::string(p.substr(kNonceBytes));
      return m;
    case static_cast<uint8_t>(Type::kAuthOk):
      FL_RETURN_IF_ERROR(exact(kMacBytes));
      m.type = Type::kAuthOk;
      m.mac = std::string(p);
      return m;
    case static_cast<uint8_t>(Type::kAuthFail):
    case static_cast<uint8_t>(Type::kOk):
    case static_cast<uint8_t>(Type::kNotFound):
      FL_RETURN_IF_ERROR(exact(0));
      m.type = static_cast<Type>(t);
      return m;
    case static_cast<uint8_t>(Type::kSet): {
      if (p.size() < 4) return Bad("set without a key length");
      uint32_t klen = GetU32(p);
      if (klen > p.size() - 4)
        return Bad("set with a key length of " + std::to_string(klen) + " in " +
                   std::to_string(p.size()) + " payload bytes");
      m.type = Type::kSet;
      m.key = std::string(p.substr(4, klen));
      m.value = std::string(p.substr(4 + klen));
      FL_RETURN_IF_ERROR(CheckKey(m.key, limits));
      FL_RETURN_IF_ERROR(CheckValue(m.value, limits));
      return m;
    }
    case static_cast<uint8_t>(Type::kGet):
      if (p.size() < 4) return Bad("get without a wait");
      m.type = Type::kGet;
      m.wait_ms = GetU32(p);
      m.key = std::string(p.substr(4));
      FL_RETURN_IF_ERROR(CheckKey(m.key, limits));
      return m;
    case static_cast<uint8_t>(Type::kValue):
      m.type = Type::kValue;
      m.value = std::string(p);
      FL_RETURN_IF_ERROR(CheckValue(m.value, limits));
      return m;
    case static_cast<uint8_t>(Type::kError):
      if (p.size() > kMaxErrorText) return Bad("error text too long");
      m.type = Type::kError;
      m.value = std::string(p);
      return m;
    default:
      return Bad("unknown type " + std::to_string(t));
  }
}

std::string AuthMac(std::string_view token, std::string_view label, std::string_view server_nonce,
                    std::string_view client_nonce) {
  std::string msg(label);
  msg.append(server_nonce);
  msg.append(client_nonce);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  if (!HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
            reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &out_len)) {
    return {};  // compares unequal to every real MAC
  }
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

bool MacEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

StatusOr<std::string> RandomBytes(size_t n) {
  // The kernel's CSPRNG rather than OpenSSL's: no per-thread generator state in the server
  // thread (which LeakSanitizer reports at exit).
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ErrnoStatus(errno, "kv: getrandom");
    got += static_cast<size_t>(r);
  }
  return out;
}

}  // namespace fl::ccl::kv
