// HPCC RandomAccess's random stream and table layout, shared by the GUPS app, its MPI peer and
// the stream's unit test.
//
// The stream: a_k = x^k in GF(2)[x] / (x^64 + x^2 + x + 1) (HPCC's POLY 7), stepped by one
// shift and a conditional xor; its period is HPCC's PERIOD. starts(n) jumps to a_n by
// square-and-multiply, so each rank starts its share of the global stream where HPCC's MPI
// version does: update k of the job (0-based) uses a_{k+1}, rank r makes updates
// [factor * start(r), factor * (start(r) + local_size(r))).
//
// The table: 2^n words spread over the ranks in contiguous blocks whose sizes differ by at most
// one, the first ranks holding the larger ones (HPCC's MPI layout: Remainder, Top,
// MinLocalTableSize), each word initially its global index.
#pragma once

#include <bit>
#include <cstdint>

namespace oneside::apps::gups {

inline constexpr std::uint64_t poly = 0x0000000000000007ULL;
inline constexpr std::int64_t period = 1317624576693539401LL;

// a_{k+1} from a_k: multiplication by x modulo x^64 + poly.
constexpr std::uint64_t step(std::uint64_t a) noexcept {
  return (a << 1) ^ (static_cast<std::int64_t>(a) < 0 ? poly : 0);
}

// a * b modulo x^64 + poly (Horner over b's bits, high to low).
constexpr std::uint64_t multiply(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r = 0;
  for (int i = 63; i >= 0; --i) {
    r = step(r);
    if ((b >> i) & 1) r ^= a;
  }
  return r;
}

// a_n = x^n (n taken modulo the period; a negative n counts back from a_0 = 1).
constexpr std::uint64_t starts(std::int64_t n) noexcept {
  n %= period;
  if (n < 0) n += period;
  std::uint64_t r = 1;
  const auto bits = static_cast<std::uint64_t>(n);
  for (int i = static_cast<int>(std::bit_width(bits)) - 1; i >= 0; --i) {
    r = multiply(r, r);
    if ((bits >> i) & 1) r = step(r);
  }
  return r;
}

// Where the table's words live.
class table_layout {
 public:
  table_layout(int log2_size, int ranks)
      : size_(std::uint64_t{1} << log2_size),
        ranks_(static_cast<std::uint64_t>(ranks)),
        min_local_(size_ / ranks_),
        remainder_(size_ % ranks_),
        top_((min_local_ + 1) * remainder_),
        shift_(std::has_single_bit(ranks_) ? std::countr_zero(min_local_) : -1) {}

  std::uint64_t size() const noexcept { return size_; }
  int ranks() const noexcept { return static_cast<int>(ranks_); }
  // The words of rank r: [start(r), start(r) + local_size(r)).
  std::uint64_t local_size(int r) const noexcept {
    return min_local_ + (static_cast<std::uint64_t>(r) < remainder_ ? 1 : 0);
  }
  std::uint64_t start(int r) const noexcept {
    const auto q = static_cast<std::uint64_t>(r);
    return q * min_local_ + (q < remainder_ ? q : remainder_);
  }
  // The largest block (the first rank's).
  std::uint64_t max_local_size() const noexcept { return local_size(0); }
  // The owner of word g (< size): a shift when the rank count is a power of two.
  int owner(std::uint64_t g) const noexcept {
    if (shift_ >= 0) return static_cast<int>(g >> shift_);
    return static_cast<int>(g < top_ ? g / (min_local_ + 1) : (g - remainder_) / min_local_);
  }
  // The word a stream value updates.
  std::uint64_t index_of(std::uint64_t a) const noexcept { return a & (size_ - 1); }

 private:
  std::uint64_t size_;
  std::uint64_t ranks_;
  std::uint64_t min_local_;
  std::uint64_t remainder_;
  std::uint64_t top_;
  int shift_;  // log2 of the block size when every block has it, else -1
};

// One rank's share of the updates, value by value: `count` stream values from a_{first + 1},
// leaving out every `skip_every`-th one when it is not 0 (testing only: lost updates the
// verification must catch).
class update_stream {
 public:
  update_stream(std::uint64_t first, std::uint64_t count, std::uint64_t skip_every = 0) noexcept
      : a_(starts(static_cast<std::int64_t>(first % static_cast<std::uint64_t>(period)))),
        left_(count),
        skip_every_(skip_every) {}

  // This rank's share of `factor` updates per word on `t`.
  static update_stream share(const table_layout& t, int rank, std::uint64_t factor,
                             std::uint64_t skip_every = 0) noexcept {
    return {factor * t.start(rank), factor * t.local_size(rank), skip_every};
  }

  // The next update's value into `a`; false when the share is done.
  bool next(std::uint64_t& a) noexcept {
    while (left_ != 0) {
      --left_;
      a_ = step(a_);
      if (skip_every_ == 0 || ++made_ % skip_every_ != 0) {
        a = a_;
        return true;
      }
    }
    return false;
  }

 private:
  std::uint64_t a_;
  std::uint64_t left_;
  std::uint64_t skip_every_;
  std::uint64_t made_ = 0;
};

}  // namespace oneside::apps::gups
