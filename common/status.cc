#include "common/status.h"

#include <cerrno>
#include <cstring>

#include "common/enum_names.h"

namespace fl {

constexpr NamedValue<Code> kCodeNames[] = {{Code::kOk, "OK"},
                                           {Code::kInvalidArgument, "InvalidArgument"},
                                           {Code::kNotFound, "NotFound"},
                                           {Code::kFailedPrecondition, "FailedPrecondition"},
                                           {Code::kUnavailable, "Unavailable"},
                                           {Code::kDeadlineExceeded, "DeadlineExceeded"},
                                           {Code::kDataLoss, "DataLoss"},
                                           {Code::kCancelled, "Cancelled"},
                                           {Code::kInternal, "Internal"}};

std::string_view CodeName(Code code) { return NameIn(kCodeNames, code, "Unknown"); }

Status& Status::AddTrail(const char* file, int line) {
  // __FILE__ is relative to the repository root (-fmacro-prefix-map in the build).
  if (ok()) return *this;
  trail_.push_back(std::string(file) + ":" + std::to_string(line));
  return *this;
}

Status& Status::Prepend(std::string_view context) {
  if (!ok()) message_ = std::string(context) + ": " + message_;
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  if (!trail_.empty()) {
    s += " [at ";
    for (size_t i = 0; i < trail_.size(); ++i) {
      if (i) s += " <- ";
      s += trail_[i];
    }
    s += "]";
  }
  return s;
}

std::string Status::ToUserString() const { return ok() ? "OK" : message_; }

Status InvalidArgumentError(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
Status NotFoundError(std::string m) { return {Code::kNotFound, std::move(m)}; }
Status FailedPreconditionError(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
Status UnavailableError(std::string m) { return {Code::kUnavailable, std::move(m)}; }
Status DeadlineExceededError(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
Status DataLossError(std::string m) { return {Code::kDataLoss, std::move(m)}; }
Status CancelledError(std::string m) { return {Code::kCancelled, std::move(m)}; }
Status InternalError(std::string m) { return {Code::kInternal, std::move(m)}; }

Status ErrnoStatus(int err, std::string_view what) {
  std::string msg =
      std::string(what) + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
  switch (err) {
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EHOSTDOWN:
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case EPIPE:
    case ENOTCONN:
    case ENETRESET:
    case ENOLINK:
      return {Code::kUnavailable, std::move(msg)};
    case ETIMEDOUT:
      return {Code::kDeadlineExceeded, std::move(msg)};
    case EINVAL:
    case ERANGE:
    case E2BIG:
      return {Code::kInvalidArgument, std::move(msg)};
    case EPERM:
    case EACCES:
    case EBUSY:
    case EEXIST:
      return {Code::kFailedPrecondition, std::move(msg)};
    case ENOENT:
    case ENODEV:
    case ESRCH:
    case ENXIO:
      return {Code::kNotFound, std::move(msg)};
    case EINTR:
      return {Code::kCancelled, std::move(msg)};
    default:
      return {Code::kInternal, std::move(msg)};
  }
}

}  // namespace fl
