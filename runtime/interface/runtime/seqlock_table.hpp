// A table that one writer at a time replaces while any thread of the process reads it without a
// lock: what the transport's table of exposed memory (transport::reach_table) and the rma
// layer's view of a dynamic window's regions are built on. Layer API, not for applications.
//
// How readers stay safe while old contents go. Readers are on the hottest paths (every rput to
// a node peer looks its target up here), may be any thread of the process (the rank's threads,
// task workers, the transport's agent) and may be descheduled mid-read for a long time (ranks
// outnumber cores). Publishing immutable copies and reclaiming the replaced ones (epochs,
// hazard pointers, reference counts) needs every reader to announce itself (a thread-local
// store, and a fence or a membarrier(2) on the reclaiming side) and lets one descheduled reader
// hold back every reclamation; keeping them, as before, grew memory with every change. Here
// nothing is ever reclaimed while the table lives, because nothing is replaced: the writer
// rewrites the one copy in place under a sequence lock (the scheme of the owners' own tables in
// shared memory), and a reader copies out what it needs and then checks that no write began
// meanwhile (valid()); if one did, it discards its copies and reads under the writers' lock
// instead. The storage is a block of words that only ever grows: when a write needs more room
// it takes a block at least twice the size and keeps the old one (a reader may still be looking
// at it), so the blocks together are less than twice the last one and less than four times the
// largest table there was, however many writes there are. Reading costs two loads of the sequence
// word beside what the lookup reads anyway, and no store.
//
// Every word is read and written as a relaxed atomic, so a read that overlaps a write is no
// data race (only stale or mixed words, which valid() then rejects), and never leaves the
// current block: each block's count is at most its capacity. Entries are trivially copyable
// and made of whole 64-bit words.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace oneside::detail {

template <class Entry>
class seqlock_table {
  static_assert(std::is_trivially_copyable_v<Entry>);
  static_assert(sizeof(Entry) % sizeof(std::uint64_t) == 0);

  using atomic_word = std::atomic<std::uint64_t>;
  static constexpr std::size_t entry_words = sizeof(Entry) / sizeof(std::uint64_t);
  // A block: [count, tag, entries...]. The empty table reads a shared block of two zero words.
  static constexpr std::size_t header_words = 2;

 public:
  seqlock_table() = default;
  seqlock_table(const seqlock_table&) = delete;
  seqlock_table& operator=(const seqlock_table&) = delete;

  // One read of the table (any thread): copies of entries, good when valid() says so at the
  // end. Until then a copy may be stale or mixed from two versions: look at it, never act on it.
  class reader {
   public:
    explicit reader(const seqlock_table& t) noexcept
        : table_(t),
          seq_(t.seq_.load(std::memory_order_acquire)),
          block_(t.block_.load(std::memory_order_acquire)),
          count_(block_[0].load(std::memory_order_relaxed)) {}

    std::size_t size() const noexcept { return static_cast<std::size_t>(count_); }
    // What the writer tagged this version with (e.g. the version of the table it copies).
    std::uint64_t tag() const noexcept { return block_[1].load(std::memory_order_relaxed); }
    // Word k of entry i (an entry's words in the order of its members), for lookups that read
    // only what they need.
    std::uint64_t word(std::size_t i, std::size_t k) const noexcept {
      return block_[header_words + i * entry_words + k].load(std::memory_order_relaxed);
    }
    Entry operator[](std::size_t i) const noexcept {
      return words_of(i, std::make_index_sequence<entry_words>());
    }
    // True when no write overlapped this read: everything it copied is of one version (always
    // true for a read under the writers' lock).
    bool valid() const noexcept {
      std::atomic_thread_fence(std::memory_order_acquire);
      return (seq_ & 1U) == 0 && table_.seq_.load(std::memory_order_relaxed) == seq_;
    }

   private:
    // Every word loaded into a register (a copy through memory would stall on store
    // forwarding), then reinterpreted.
    template <std::size_t... K>
    Entry words_of(std::size_t i, std::index_sequence<K...>) const noexcept {
      return std::bit_cast<Entry>(std::array<std::uint64_t, entry_words>{word(i, K)...});
    }

    const seqlock_table& table_;
    std::uint64_t seq_;
    const atomic_word* block_;
    std::uint64_t count_;
  };

  // Replaces the contents with `entries`, tagged `tag`. Callers serialize writes (one lock).
  void assign(std::span<const Entry> entries, std::uint64_t tag) {
    atomic_word* b = block_.load(std::memory_order_relaxed);
    if (blocks_.empty() || entries.size() > capacity_) {
      // A fresh block, filled before it is published; the old one stays for readers still in it.
      const std::size_t cap = std::max({entries.size(), 2 * capacity_, std::size_t{4}});
      blocks_.push_back(std::make_unique<atomic_word[]>(header_words + cap * entry_words));
      b = blocks_.back().get();
      capacity_ = cap;
      bytes_ += (header_words + cap * entry_words) * sizeof(atomic_word);
    }
    const std::uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::uint64_t w[entry_words];
      std::memcpy(w, &entries[i], sizeof w);
      atomic_word* at = b + header_words + i * entry_words;
      for (std::size_t k = 0; k < entry_words; ++k) at[k].store(w[k], std::memory_order_relaxed);
    }
    b[1].store(tag, std::memory_order_relaxed);
    b[0].store(entries.size(), std::memory_order_relaxed);
    block_.store(b, std::memory_order_release);
    seq_.store(s + 2, std::memory_order_release);
  }

  // Bytes of storage held: every block, old ones included (the writer's lock held).
  std::size_t footprint() const noexcept { return bytes_; }

 private:
  inline static atomic_word empty_[header_words] = {};  // never written: the writer takes a block

  std::atomic<std::uint64_t> seq_{0};  // odd while a write is under way
  std::atomic<atomic_word*> block_{empty_};
  // The writer's: the current block's capacity in entries, and every block taken (the current
  // one last).
  std::size_t capacity_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::unique_ptr<atomic_word[]>> blocks_;
};

}  // namespace oneside::detail
