// Payload buffers of the engine: a process-wide pool (BufferPool) and the buffer that takes
// from it and gives back (Blob).
//
// Thread-safety: BufferPool is (its own mutex); a Blob is owned by one thread at a time.
// Ownership: a Blob owns its bytes; they go back to the pool when it is reset or destroyed.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace fl::ccl::ftccl {

// Payload buffers of chunks that arrive before their receive is posted (or that we forward)
// come and go at the network's pace, up to chunk_bytes each. Fresh ones of that size are
// mmapped by malloc and page-faulted in again each time (6% of the CPU of a 64 MiB AllReduce
// on the lab, perf); recycled ones are warm. Process-wide, since ranks may be threads.
class BufferPool {
 public:
  static BufferPool& Get() {
    static BufferPool* pool = new BufferPool;  // never destroyed: buffers may outlive main
    return *pool;
  }
  // A buffer of at least n bytes; *cap is its real size.
  char* Take(size_t n, size_t* cap) {
    *cap = n < kMinPooled ? n : RoundUp(n);
    if (*cap >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& list = free_[*cap];
      if (!list.empty()) {
        char* p = list.back();
        list.pop_back();
        pooled_ -= *cap;
        return p;
      }
    }
    return new char[*cap];
  }
  void Give(char* p, size_t cap) {
    if (cap >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      if (pooled_ + cap <= kMaxPooledBytes) {
        free_[cap].push_back(p);
        pooled_ += cap;
        return;
      }
    }
    delete[] p;
  }

 private:
  static constexpr size_t kMinPooled = 64 * 1024;
  static constexpr size_t kMaxPooledBytes = 64 << 20;
  static size_t RoundUp(size_t n) { return (n + kMinPooled - 1) / kMinPooled * kMinPooled; }
  std::mutex mu_;
  std::map<size_t, std::vector<char*>> free_;
  size_t pooled_ = 0;
};

// A payload buffer that is not zero-filled (it is always written before it is read).
class Blob {
 public:
  Blob() = default;
  Blob(Blob&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) {
    o.data_ = nullptr;
    o.size_ = o.cap_ = 0;
  }
  Blob& operator=(Blob&& o) noexcept {
    if (this != &o) {
      Reset(0);
      data_ = o.data_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.data_ = nullptr;
      o.size_ = o.cap_ = 0;
    }
    return *this;
  }
  ~Blob() { Reset(0); }
  void Reset(size_t n) {
    if (data_) BufferPool::Get().Give(data_, cap_);
    data_ = n ? BufferPool::Get().Take(n, &cap_) : nullptr;
    size_ = n;
    if (!n) cap_ = 0;
  }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};

}  // namespace fl::ccl::ftccl
