// Little-endian binary writing and bounds-checked reading for engine files. Every read failure
// names the byte offset, so a truncated or corrupt file is refused with a precise message.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "voxrt/status.h"

namespace voxrt::runtime {

class ByteWriter {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.append(p, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes_.append(s.data(), s.size());
  }
  void put_bytes(const void* data, std::size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
  }
  void align(std::size_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back('\0');
  }
  std::size_t size() const { return bytes_.size(); }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  // `base_offset` is where `data` starts in the file, so errors report file offsets.
  ByteReader(const char* data, std::size_t size, std::size_t base_offset, std::string what)
      : data_(data), size_(size), base_(base_offset), what_(std::move(what)) {}

  template <typename T>
  Status get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (size_ - pos_ < sizeof(T)) return truncated(sizeof(T));
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status get_string(std::string& s, std::size_t max_bytes = 1 << 24) {
    std::uint32_t n = 0;
    VOXRT_RETURN_IF_ERROR(get(n));
    if (n > max_bytes)
      return corrupt(what_, ": string of ", n, " bytes at offset ", offset() - 4,
                     " exceeds the limit");
    if (size_ - pos_ < n) return truncated(n);
    s.assign(data_ + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  // A count that must be plausible: each element takes at least `min_bytes_each` bytes.
  Status get_count(std::uint32_t& n, std::size_t min_bytes_each = 1) {
    VOXRT_RETURN_IF_ERROR(get(n));
    if (static_cast<std::uint64_t>(n) * min_bytes_each > size_ - pos_) {
      return corrupt(what_, ": count ", n, " at offset ", offset() - 4, " exceeds the remaining ",
                     size_ - pos_, " bytes");
    }
    return Status::ok();
  }
  std::size_t offset() const { return base_ + pos_; }
  bool at_end() const { return pos_ == size_; }

 private:
  Status truncated(std::size_t wanted) const {
    return corrupt(what_, ": truncated at offset ", offset(), " (wanted ", wanted, " bytes, ",
                   size_ - pos_, " left)");
  }
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::size_t base_;
  std::string what_;
};

// FNV-1a 64; also used for model hashes and timing-cache keys.
std::uint64_t fnv1a64(const void* data, std::size_t size,
                      std::uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace voxrt::runtime
