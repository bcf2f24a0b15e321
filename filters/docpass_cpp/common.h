// Shared pieces of the compiled per-document pass (filters/docpass.py is its Python face):
// UTF-8 decoding of Arrow string buffers and the 64-bit keys of filters/quality/repeat.py.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace docpass {

// Code points of a valid UTF-8 string (Arrow strings are valid UTF-8), at most `limit` of them.
inline void decode_utf8(const uint8_t* p, size_t n, std::vector<uint32_t>& out, size_t limit = SIZE_MAX) {
  out.clear();
  size_t i = 0;
  while (i < n && out.size() < limit) {
    uint32_t c = p[i];
    if (c < 0x80) {
      i += 1;
    } else if (c < 0xE0) {
      c = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F);
      i += 2;
    } else if (c < 0xF0) {
      c = ((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
      i += 3;
    } else {
      c = ((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F);
      i += 4;
    }
    out.push_back(c);
  }
}

inline void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// Number of code points in a UTF-8 string (bytes that are not continuation bytes).
inline size_t utf8_length(const uint8_t* p, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += (p[i] & 0xC0) != 0x80;
  return count;
}

// filters/quality/repeat.py: odd 64-bit multipliers and the substring hash base.
constexpr uint64_t KEY_P = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t KEY_Q = 0xBF58476D1CE4E5B9ULL;
constexpr uint64_t KEY_B = 0xD6E8FEB86659FD93ULL;

// substring_keys: (sum codes[s + j] * B**j mod 2**64) ^ length, times P.
inline uint64_t substring_key(const uint32_t* codes, int64_t start, int64_t end) {
  uint64_t h = 0;
  for (int64_t j = end - 1; j >= start; --j) h = h * KEY_B + codes[j];
  return (h ^ static_cast<uint64_t>(end - start)) * KEY_P;
}

// doc_keys: an item hash made unique to its document (chunk-local index `doc`).
inline uint64_t doc_key(uint64_t hash, uint64_t doc) { return (hash ^ (doc * KEY_Q)) * KEY_P; }

// A fixed array of T in memory asked to be backed by huge pages (madvise; transparent huge pages
// in "madvise" mode here): a table of 100+ MB read at random costs a TLB miss per read otherwise.
template <typename T>
class HugeArray {
 public:
  HugeArray() = default;
  HugeArray(size_t n, const T& fill) : n_(n) {
    constexpr size_t HUGE_PAGE = 2u << 20;
    bytes_ = (n * sizeof(T) + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void* p = nullptr;
    if (posix_memalign(&p, HUGE_PAGE, bytes_) != 0) throw std::bad_alloc();
    madvise(p, bytes_, MADV_HUGEPAGE);
    data_ = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) data_[i] = fill;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  HugeArray(HugeArray&& o) noexcept { swap(o); }
  HugeArray& operator=(HugeArray&& o) noexcept {
    swap(o);
    return *this;
  }
  ~HugeArray() { std::free(data_); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return n_; }
  T* data() { return data_; }
  const T* data() const { return data_; }

 private:
  void swap(HugeArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(n_, o.n_);
    std::swap(bytes_, o.bytes_);
  }
  T* data_ = nullptr;
  size_t n_ = 0, bytes_ = 0;
};

}  // namespace docpass
