// local_view<T, N>: a non-owning view of an N-d row-major block (layout right: the last
// index varies fastest), as std::mdspan<T, dextents<size_t, N>> would give; what
// dist_array::local() returns for the block a rank owns. Indexing is a multiply-add per
// dimension on a raw pointer, with no check (use at() for a checked access).
//
// The block is dense (strides from the extents) or padded (explicit strides, the last one 1:
// rows of the last dimension are contiguous, with gaps between them, as std::mdspan's
// layout_right_padded; a dist_array with halos views its owned cells so). contiguous() tells
// which; span(), begin() and end() walk the storage and are meaningful only for a contiguous
// view. size() and index_of() always count the viewed elements, not the gaps.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>

#include <oneside/runtime/error.hpp>

namespace oneside {

template <class T, std::size_t N>
requires(N >= 1) class local_view {
 public:
  using element_type = T;
  using index_type = std::array<std::size_t, N>;

  constexpr local_view() noexcept = default;
  // The block of `extents` elements at `data` (null only when some extent is 0).
  constexpr local_view(T* data, const index_type& extents) noexcept
      : data_(data), extents_(extents) {
    std::size_t s = 1;
    for (std::size_t d = N; d-- > 0;) {
      strides_[d] = s;
      s *= extents_[d];
    }
    size_ = s;
  }
  // The block of `extents` elements at `data` whose neighbours along dimension d are
  // strides[d] elements apart; strides[N - 1] must be 1 and each stride at least the span
  // of the dimensions after it (a padded row-major layout).
  constexpr local_view(T* data, const index_type& extents, const index_type& strides) noexcept
      : data_(data), extents_(extents), strides_(strides) {
    std::size_t s = 1;
    for (std::size_t d = N; d-- > 0;) {
      dense_ = dense_ && strides_[d] == s;
      s *= extents_[d];
    }
    size_ = s;
    dense_ = dense_ || size_ == 0;
  }

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr const index_type& extents() const noexcept { return extents_; }
  constexpr std::size_t extent(std::size_t d) const noexcept { return extents_[d]; }
  // Elements between neighbours along dimension d (the last dimension's is 1).
  constexpr std::size_t stride(std::size_t d) const noexcept { return strides_[d]; }
  // Whether the elements are one run of storage (a dense view, or padding that happens to
  // be empty); span(), begin() and end() need it.
  constexpr bool contiguous() const noexcept { return dense_; }
  // The elements in storage order (a contiguous view only).
  constexpr std::span<T> span() const noexcept { return {data_, size_}; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }

  // The element at local index (i0, …, iN-1); no range check.
  template <std::integral... I>
  requires(sizeof...(I) == N) constexpr T& operator()(I... i) const noexcept {
    const std::array<std::size_t, N> idx{static_cast<std::size_t>(i)...};
    return (*this)[idx];
  }
  constexpr T& operator[](const index_type& idx) const noexcept { return data_[offset(idx)]; }
  constexpr T& operator[](std::size_t i) const noexcept requires(N == 1) { return data_[i]; }
  // The storage offset of idx from data() (no range check).
  constexpr std::size_t offset(const index_type& idx) const noexcept {
    std::size_t o = idx[N - 1];  // the last stride is 1: spelled out, loops over it vectorize
    for (std::size_t d = 0; d + 1 < N; ++d) o += idx[d] * strides_[d];
    return o;
  }
  // The local index of the o-th element in row-major order (o < size(); for a dense view, the
  // element at storage offset o).
  constexpr index_type index_of(std::size_t o) const noexcept {
    index_type idx{};
    for (std::size_t d = N; d-- > 0;) {
      idx[d] = extents_[d] == 0 ? 0 : o % extents_[d];
      o = extents_[d] == 0 ? 0 : o / extents_[d];
    }
    return idx;
  }
  // The element at idx; error(arg) naming local_view::at when idx is outside the extents.
  T& at(const index_type& idx) const {
    for (std::size_t d = 0; d < N; ++d) {
      if (idx[d] >= extents_[d]) {
        detail::raise(error_class::arg, {.call = "local_view::at"},
                      "index " + std::to_string(idx[d]) + " in dimension " + std::to_string(d) +
                          " is outside the local extent " + std::to_string(extents_[d]));
      }
    }
    return (*this)[idx];
  }

 private:
  T* data_ = nullptr;
  index_type extents_{};
  index_type strides_{};
  std::size_t size_ = 0;
  bool dense_ = true;
};

}  // namespace oneside
