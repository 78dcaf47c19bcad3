// Status and StatusOr: how every fallible faultline function reports failure.
//
// A Status carries one code from a small fixed taxonomy, a message, and a trail of the places
// it was propagated through (FL_RETURN_IF_ERROR appends file:line), so an error printed at the
// top says where it was born and how it travelled. Codes mean what callers act on:
//   kInvalidArgument    bad input (scenario, topology, flag); the message carries its location
//   kNotFound           a named thing (target, run, lab) does not exist
//   kFailedPrecondition the system is not in a state that allows the call (not root, lab down)
//   kUnavailable        a link, peer or path is down: the caller may fail over or retry
//   kDeadlineExceeded   a bounded wait ran out
//   kDataLoss           a correctness failure (wrong reduction result, corrupt journal)
//   kCancelled          stopped on request (Ctrl-C, Abort)
//   kInternal           a bug
//
// Thread-safety: values; a Status is not shared between threads while being mutated.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace fl {

enum class Code {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kUnavailable,
  kDeadlineExceeded,
  kDataLoss,
  kCancelled,
  kInternal,
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Places this status was propagated through, innermost first ("file.cc:42").
  const std::vector<std::string>& trail() const { return trail_; }

  // Appends a propagation frame; returns *this so it can be returned directly.
  Status& AddTrail(const char* file, int line);
  // Prefixes the message with context ("opening journal: ...").
  Status& Prepend(std::string_view context);

  // "Unavailable: link down [at a.cc:10 <- b.cc:20]"
  std::string ToString() const;
  // Message without code or trail, for users.
  std::string ToUserString() const;

  // Explicitly discards the status where failure is acceptable (best-effort cleanup).
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::vector<std::string> trail_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status FailedPreconditionError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status DataLossError(std::string message);
Status CancelledError(std::string message);
Status InternalError(std::string message);

// Maps an errno value from a system call to a Status: network-down and reset errors become
// kUnavailable, timeouts kDeadlineExceeded, EINVAL kInvalidArgument, EPERM/EACCES
// kFailedPrecondition, ENOENT/ENODEV kNotFound, the rest kInternal. The message is
// "<what>: <strerror> (errno N)".
Status ErrnoStatus(int err, std::string_view what);

// A value or the Status explaining its absence.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : v_(value) {}        // NOLINT: implicit by design
  StatusOr(T&& value) : v_(std::move(value)) {}  // NOLINT
  StatusOr(const Status& status) : v_(status) {  // NOLINT
    assert(!status.ok() && "StatusOr needs a value or a non-OK status");
  }
  StatusOr(Status&& status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "StatusOr needs a value or a non-OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status&& TakeStatus() && { return std::move(std::get<Status>(v_)); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : fallback; }

 private:
  std::variant<Status, T> v_;
};

namespace internal {
inline Status&& AsStatus(Status&& s) { return std::move(s); }
inline Status AsStatus(const Status& s) { return s; }
}  // namespace internal

}  // namespace fl

#define FL_STATUS_CONCAT_INNER(a, b) a##b
#define FL_STATUS_CONCAT(a, b) FL_STATUS_CONCAT_INNER(a, b)

// Evaluates expr (a Status); on error returns it from the current function with this
// location appended to its trail.
#define FL_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::fl::Status fl_status_ = (expr);          \
    if (!fl_status_.ok()) {                    \
      fl_status_.AddTrail(__FILE__, __LINE__); \
      return fl_status_;                       \
    }                                          \
  } while (0)

// FL_ASSIGN_OR_RETURN(auto x, Foo()); evaluates a StatusOr, returns its status (with a trail
// entry) on error, else moves the value into lhs.
#define FL_ASSIGN_OR_RETURN(lhs, expr) \
  FL_ASSIGN_OR_RETURN_IMPL(FL_STATUS_CONCAT(fl_statusor_, __LINE__), lhs, expr)
#define FL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)      \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) {                                    \
    ::fl::Status fl_s_ = std::move(tmp).TakeStatus(); \
    fl_s_.AddTrail(__FILE__, __LINE__);               \
    return fl_s_;                                     \
  }                                                   \
  lhs = std::move(tmp).value()
