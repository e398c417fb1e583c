// Intrusive reference counting for HAL objects.
//
// Every HAL object derives from RefCounted. Ref<T> holds one reference; it is
// not itself thread-safe, but different Ref<T>s to one object may be copied
// and dropped from any threads at once. Objects start with one reference,
// which MakeRef adopts.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace hal {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  void AddRef() const { count_.fetch_add(1, std::memory_order_relaxed); }
  void Release() const {
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  uint32_t ref_count_for_testing() const {
    return count_.load(std::memory_order_relaxed);
  }

 protected:
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<uint32_t> count_{1};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT
  // Adds a reference to `ptr`.
  explicit Ref(T* ptr) : ptr_(ptr) {
    if (ptr_) ptr_->AddRef();
  }
  Ref(const Ref& other) : Ref(other.ptr_) {}
  Ref(Ref&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <typename U>
  Ref(const Ref<U>& other) : Ref(static_cast<T*>(other.get())) {}  // NOLINT
  template <typename U>
  Ref(Ref<U>&& other) noexcept : ptr_(other.release()) {}  // NOLINT
  ~Ref() { reset(); }

  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  // Takes over the reference the caller already owns.
  static Ref Adopt(T* ptr) {
    Ref r;
    r.ptr_ = ptr;
    return r;
  }
  T* release() { return std::exchange(ptr_, nullptr); }
  void reset() {
    if (T* p = std::exchange(ptr_, nullptr)) p->Release();
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  friend bool operator==(const Ref& a, const Ref& b) {
    return a.ptr_ == b.ptr_;
  }

 private:
  T* ptr_ = nullptr;
};

template <typename T, typename... Args>
Ref<T> MakeRef(Args&&... args) {
  return Ref<T>::Adopt(new T(std::forward<Args>(args)...));
}

}  // namespace hal
