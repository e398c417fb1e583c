// Status and StatusOr: the one error type of the HAL.
//
// Codes are the canonical ones used by absl and IREE. A Status is one
// pointer: null when OK, so an OK status allocates nothing, copies and
// destroys without an atomic, and moves by stealing the pointer. An error
// carries its code and message in an immutable, intrusively refcounted heap
// record: copying an error costs one atomic increment. Status is safe to pass
// between threads (the record is immutable after construction).
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <memory>  // not used here; kept for files that rely on it
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace hal {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "INVALID_ARGUMENT" etc.; "UNKNOWN_CODE" for values outside the enum.
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);
  Status(const Status& other) noexcept : rep_(other.rep_) {
    if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Status(Status&& other) noexcept : rep_(other.rep_) { other.rep_ = nullptr; }
  Status& operator=(const Status& other) noexcept {
    if (rep_ != other.rep_) {
      if (other.rep_) other.rep_->refs.fetch_add(1, std::memory_order_relaxed);
      if (rep_) Unref(rep_);
      rep_ = other.rep_;
    }
    return *this;
  }
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      Rep* old = rep_;
      rep_ = other.rep_;
      other.rep_ = nullptr;
      if (old) Unref(old);
    }
    return *this;
  }
  ~Status() {
    if (rep_) Unref(rep_);
  }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "OK" or "CODE: message".
  std::string ToString() const;
  // Returns a copy whose message is prefixed with `context: `; OK stays OK.
  Status Annotate(const std::string& context) const;
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    mutable std::atomic<uint32_t> refs;
    StatusCode code;
    std::string message;
  };
  // Drops one reference; deletes the record with the last one.
  static void Unref(Rep* rep);

  Rep* rep_ = nullptr;
};
static_assert(sizeof(Status) == sizeof(void*), "Status is one pointer");

inline Status OkStatus() { return Status(); }

// printf-style constructors for errors.
Status MakeStatus(StatusCode code, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
Status VMakeStatus(StatusCode code, const char* format, va_list args);

#define HAL_DEFINE_ERROR_CTOR(Name, Code)                   \
  inline Status Name(const char* format, ...)               \
      __attribute__((format(printf, 1, 2)));                \
  inline Status Name(const char* format, ...) {             \
    va_list args;                                           \
    va_start(args, format);                                 \
    Status s = VMakeStatus(StatusCode::Code, format, args); \
    va_end(args);                                           \
    return s;                                               \
  }
HAL_DEFINE_ERROR_CTOR(CancelledError, kCancelled)
HAL_DEFINE_ERROR_CTOR(UnknownError, kUnknown)
HAL_DEFINE_ERROR_CTOR(InvalidArgumentError, kInvalidArgument)
HAL_DEFINE_ERROR_CTOR(DeadlineExceededError, kDeadlineExceeded)
HAL_DEFINE_ERROR_CTOR(NotFoundError, kNotFound)
HAL_DEFINE_ERROR_CTOR(AlreadyExistsError, kAlreadyExists)
HAL_DEFINE_ERROR_CTOR(PermissionDeniedError, kPermissionDenied)
HAL_DEFINE_ERROR_CTOR(ResourceExhaustedError, kResourceExhausted)
HAL_DEFINE_ERROR_CTOR(FailedPreconditionError, kFailedPrecondition)
HAL_DEFINE_ERROR_CTOR(AbortedError, kAborted)
HAL_DEFINE_ERROR_CTOR(OutOfRangeError, kOutOfRange)
HAL_DEFINE_ERROR_CTOR(UnimplementedError, kUnimplemented)
HAL_DEFINE_ERROR_CTOR(InternalError, kInternal)
HAL_DEFINE_ERROR_CTOR(UnavailableError, kUnavailable)
HAL_DEFINE_ERROR_CTOR(DataLossError, kDataLoss)
#undef HAL_DEFINE_ERROR_CTOR

namespace internal {
// Prints "StatusOr::value() on an error: <status>" and aborts.
[[noreturn]] void DieOnValueOfError(const Status& status);
}  // namespace internal

// Holds either a value or an error status (never an OK status without value).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT
    if (status_.ok()) status_ = InternalError("StatusOr built from OK status");
  }
  StatusOr(Status&& status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = InternalError("StatusOr built from OK status");
  }
  template <typename U = T, typename = std::enable_if_t<
                                std::is_convertible_v<U&&, T> &&
                                !std::is_same_v<std::decay_t<U>, Status>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // value(), * and -> on an error abort the process with the status (never
  // undefined behaviour); check ok() first.
  T& value() & { return Checked(), *value_; }
  const T& value() const& { return Checked(), *value_; }
  T&& value() && { return Checked(), std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Checked() const {
    if (!value_) internal::DieOnValueOfError(status_);
  }
  Status status_;
  std::optional<T> value_;
};

namespace internal {
inline const Status& GetStatus(const Status& s) { return s; }
template <typename T>
const Status& GetStatus(const StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace hal

#define HAL_STATUS_CONCAT_INNER(a, b) a##b
#define HAL_STATUS_CONCAT(a, b) HAL_STATUS_CONCAT_INNER(a, b)

#define HAL_RETURN_IF_ERROR(expr)                                       \
  do {                                                                  \
    const ::hal::Status _hal_status = ::hal::internal::GetStatus(expr); \
    if (!_hal_status.ok()) return _hal_status;                          \
  } while (false)

#define HAL_ASSIGN_OR_RETURN(lhs, expr)                                       \
  HAL_ASSIGN_OR_RETURN_IMPL(HAL_STATUS_CONCAT(_hal_statusor_, __LINE__), lhs, \
                            expr)
#define HAL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
