// Serialization of the values rpc() and rpc_ff() carry between ranks (arguments and results),
// after UPC++'s: a value is written into a byte buffer by a serial_writer at the origin and
// read back by a serial_reader at the target, which may load code at other addresses.
//
// What is serializable (the concept `serializable`):
// - trivially copyable types that are not pointers or spans, copied byte by byte (a member
//   that is a raw pointer travels as its bits: it means nothing at the target);
//   global_ptr<T> is one of these and stays valid everywhere;
// - std::vector<T> and std::basic_string of serializable T, nested to any depth;
// - user types with a member/static pair (UPC++'s "serialize"/"deserialize" shape):
//       struct particle {
//         std::string name;
//         std::vector<double> xs;
//         void serialize(oneside::serial_writer& w) const { w.write(name); w.write(xs); }
//         static particle deserialize(oneside::serial_reader& r) {
//           particle p;
//           p.name = r.read<std::string>();
//           p.xs = r.read<std::vector<double>>();
//           return p;
//         }
//       };
//   deserialize reads what serialize wrote, in the same order; the pair wins over the rules
//   above (a trivially copyable type with the pair uses the pair).
// std::span<const T> of trivially copyable T is an rpc parameter type, not a value: see rpc.hpp.
//
// Wire format: a value is its bytes; a sequence (vector, string, span) is a 64-bit count, then
// padding to the element's alignment (for spans received as views), then its elements.
// Reading past the end of the buffer raises error(truncate).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <oneside/pgas/global_ptr.hpp>

namespace oneside {

class serial_writer;
class serial_reader;

namespace pgas::detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_string : std::false_type {};
template <class C, class Tr, class A>
struct is_string<std::basic_string<C, Tr, A>> : std::true_type {};
template <class T>
struct is_span : std::false_type {};
template <class T, std::size_t N>
struct is_span<std::span<T, N>> : std::true_type {};

// Raises error(truncate) for a read of `bytes` at `at` past a buffer of `size` bytes.
[[noreturn]] void raise_short_buffer(std::size_t at, std::size_t bytes, std::size_t size);
}  // namespace pgas::detail

// A type with the user's pair: v.serialize(writer) and T::deserialize(reader) -> T.
template <class T>
concept user_serializable = requires(const T& v, serial_writer& w, serial_reader& r) {
  v.serialize(w);
  { T::deserialize(r) } -> std::same_as<T>;
};

// A value serialized byte by byte.
template <class T>
concept bitwise_serializable = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> &&
                               !std::is_member_pointer_v<T> && !pgas::detail::is_span<T>::value &&
                               !std::is_const_v<T> && !std::is_array_v<T> && !user_serializable<T>;

template <class T>
struct is_serializable;

// What rpc arguments and results may be (see the file comment).
template <class T>
concept serializable = is_serializable<T>::value;

template <class T>
struct is_serializable : std::bool_constant<user_serializable<T> || bitwise_serializable<T>> {};
template <class T, class A>
struct is_serializable<std::vector<T, A>> : is_serializable<T> {};
template <class A>
struct is_serializable<std::vector<bool, A>> : std::false_type {};  // no contiguous storage
template <class C, class Tr, class A>
struct is_serializable<std::basic_string<C, Tr, A>>
    : std::bool_constant<std::is_trivially_copyable_v<C>> {};

// Appends values to a byte vector. Alignment padding counts from where the writer started.
class serial_writer {
 public:
  explicit serial_writer(std::vector<std::byte>& out) noexcept : out_(&out), start_(out.size()) {}

  void write_bytes(const void* p, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = out_->size();
    out_->resize(at + n);
    std::memcpy(out_->data() + at, p, n);
  }
  // Pads with zeros until the next byte's offset from the start is a multiple of `a`.
  void align(std::size_t a) {
    const std::size_t off = out_->size() - start_;
    out_->resize(out_->size() + (a - off % a) % a);
  }
  // A sequence: its count, padding, its elements.
  template <class T>
  void write_sequence(std::span<const T> s) {
    const auto n = static_cast<std::uint64_t>(s.size());
    write_bytes(&n, sizeof n);
    if constexpr (bitwise_serializable<T>) {
      align(alignof(T));
      write_bytes(s.data(), s.size_bytes());
    } else {
      for (const T& v : s) write(v);
    }
  }
  template <serializable T>
  void write(const T& v) {
    if constexpr (user_serializable<T>) {
      v.serialize(*this);
    } else if constexpr (pgas::detail::is_vector<T>::value) {
      write_sequence(std::span<const typename T::value_type>(v.data(), v.size()));
    } else if constexpr (pgas::detail::is_string<T>::value) {
      write_sequence(std::span<const typename T::value_type>(v.data(), v.size()));
    } else {
      write_bytes(&v, sizeof v);
    }
  }
  // Bytes written since the writer started.
  std::size_t size() const noexcept { return out_->size() - start_; }

 private:
  std::vector<std::byte>* out_;
  std::size_t start_;
};

// Reads values back from a buffer, in the order they were written.
class serial_reader {
 public:
  explicit serial_reader(std::span<const std::byte> in) noexcept : in_(in) {}

  std::span<const std::byte> read_bytes(std::size_t n) {
    if (n > in_.size() - at_) pgas::detail::raise_short_buffer(at_, n, in_.size());
    const std::span<const std::byte> s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }
  void align(std::size_t a) {
    const std::size_t pad = (a - at_ % a) % a;
    read_bytes(pad);
  }
  // The count of a sequence, checked against what is left (so a corrupt count cannot make a
  // reader allocate without bound).
  std::size_t read_count(std::size_t min_element_bytes) {
    std::uint64_t n = 0;
    std::memcpy(&n, read_bytes(sizeof n).data(), sizeof n);
    if (min_element_bytes != 0 && n > (in_.size() - at_) / min_element_bytes) {
      pgas::detail::raise_short_buffer(at_, static_cast<std::size_t>(n) * min_element_bytes,
                                       in_.size());
    }
    return static_cast<std::size_t>(n);
  }
  // A view of a sequence of trivially copyable T inside the buffer (written by
  // write_sequence, or as a vector of T): valid while the buffer is. The buffer must start
  // at an address aligned for T (rpc's are aligned to 16 bytes).
  template <bitwise_serializable T>
  std::span<const T> read_view() {
    const std::size_t n = read_count(sizeof(T));
    align(alignof(T));
    const std::span<const std::byte> b = read_bytes(n * sizeof(T));
    return {reinterpret_cast<const T*>(b.data()), n};
  }
  template <serializable T>
  T read() {
    if constexpr (user_serializable<T>) {
      return T::deserialize(*this);
    } else if constexpr (pgas::detail::is_vector<T>::value || pgas::detail::is_string<T>::value) {
      using V = typename T::value_type;
      if constexpr (bitwise_serializable<V>) {
        const std::size_t n = read_count(sizeof(V));
        align(alignof(V));
        const std::span<const std::byte> b = read_bytes(n * sizeof(V));
        T out;
        out.resize(n);
        if (n != 0) std::memcpy(static_cast<void*>(out.data()), b.data(), b.size());
        return out;
      } else {
        const std::size_t n = read_count(0);
        T out;
        out.reserve(std::min<std::size_t>(n, in_.size() - at_));
        for (std::size_t i = 0; i < n; ++i) out.push_back(read<V>());
        return out;
      }
    } else {
      std::array<std::byte, sizeof(T)> raw;
      std::memcpy(raw.data(), read_bytes(sizeof(T)).data(), sizeof(T));
      return std::bit_cast<T>(raw);
    }
  }
  // Bytes not read yet.
  std::size_t remaining() const noexcept { return in_.size() - at_; }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace oneside
