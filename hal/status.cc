#include "hal/status.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace hal {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    rep_ = new Rep{{1}, code, std::move(message)};
  }
}

void Status::Unref(Rep* rep) {
  // acq_rel: the last owner must see every other owner's reads of the record
  // done before it deletes it (as RefCounted::Release).
  if (rep->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete rep;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = StatusCodeName(code());
  if (!message().empty()) {
    out += ": ";
    out += message();
  }
  return out;
}

Status Status::Annotate(const std::string& context) const {
  if (ok()) return *this;
  return Status(code(), context + ": " + message());
}

Status VMakeStatus(StatusCode code, const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(message.data(), message.size() + 1, format, args);
  return Status(code, std::move(message));
}

Status MakeStatus(StatusCode code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  Status s = VMakeStatus(code, format, args);
  va_end(args);
  return s;
}

namespace internal {
void DieOnValueOfError(const Status& status) {
  std::fprintf(stderr, "StatusOr::value() on an error: %s\n",
               status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

}  // namespace hal
