// The access interface (access.hpp): resolution, data movement, atomics and completion.
#include "rma/access.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include <oneside/runtime/copy.hpp>

#include "runtime/amo_local.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"
#include "runtime/layout.hpp"

namespace oneside::rma::detail {
namespace {

using oneside::detail::raise;

// Raises the completion mark `mark` to `through` (never lowers it).
void raise_mark(std::atomic<std::uint64_t>& mark, std::uint64_t through) noexcept {
  std::uint64_t cur = mark.load(std::memory_order_relaxed);
  while (cur < through && !mark.compare_exchange_weak(cur, through, std::memory_order_acq_rel)) {
  }
}

struct run {
  std::ptrdiff_t offset;
  std::size_t length;
};

std::vector<run> runs_of(const datatype& type, count_t count) {
  std::vector<run> out;
  out.reserve(oneside::detail::byte_run_count(type, count));
  oneside::detail::for_each_byte_run(type, count, [&](std::ptrdiff_t off, std::size_t len) {
    out.push_back(run{off, len});
  });
  return out;
}

// Calls f(offset in a, offset in b, length) for the stretches that are contiguous in both.
template <class F>
void match_runs(const std::vector<run>& a, const std::vector<run>& b, F&& f) {
  std::size_t i = 0, j = 0, ai = 0, bj = 0;
  while (i < a.size() && j < b.size()) {
    const std::size_t n = std::min(a[i].length - ai, b[j].length - bj);
    if (n > 0) {
      f(a[i].offset + static_cast<std::ptrdiff_t>(ai),
        b[j].offset + static_cast<std::ptrdiff_t>(bj), n);
    }
    ai += n;
    bj += n;
    if (ai == a[i].length) {
      ++i;
      ai = 0;
    }
    if (bj == b[j].length) {
      ++j;
      bj = 0;
    }
  }
}

void check_signatures(count_t local_count, const datatype& local_type, count_t remote_count,
                      const datatype& remote_type, rank_t rank, const char* call) {
  ONESIDE_CHECK(local_count >= 0 && remote_count >= 0, error_class::count,
                {.call = call, .target = rank}, "a count is negative");
  if (local_type == remote_type && local_count == remote_count) return;
  ONESIDE_CHECK(
      oneside::detail::signatures_match(local_count, local_type, remote_count, remote_type),
      error_class::type, {.call = call, .target = rank},
      "the local (" + std::to_string(local_count) + " x " + std::string(local_type.name()) +
          ") and remote (" + std::to_string(remote_count) + " x " +
          std::string(remote_type.name()) + ") type signatures differ");
}

// The layout transfer of put_layout/get_layout, once checked.
template <bool Write>
bool move_layout(transport::backend& t, const access_target& at, std::byte* local,
                 count_t local_count, const datatype& local_type, count_t remote_count,
                 const datatype& remote_type, bool defer) {
  const std::vector<run> mine = runs_of(local_type, local_count);
  const std::vector<run> theirs = runs_of(remote_type, remote_count);
  if (at.local != nullptr) {
    match_runs(mine, theirs, [&](std::ptrdiff_t lo, std::ptrdiff_t ro, std::size_t n) {
      if constexpr (Write) {
        oneside::detail::copy_bytes(at.local + ro, local + lo, n);
      } else {
        oneside::detail::copy_bytes(local + lo, at.local + ro, n);
      }
    });
    return false;
  }
  std::vector<transport::remote_iov> remote;
  remote.reserve(theirs.size());
  for (const run& r : theirs) {
    remote.push_back({at.addr + static_cast<std::uintptr_t>(r.offset), r.length});
  }
  transport::completion* const done = defer ? transport::deferred() : nullptr;
  if constexpr (Write) {
    std::vector<transport::const_iov> iov;
    iov.reserve(mine.size());
    for (const run& r : mine) iov.push_back({local + r.offset, r.length});
    t.putv(at.rank, iov, remote, done);
    return true;
  } else {
    std::vector<transport::mutable_iov> iov;
    iov.reserve(mine.size());
    for (const run& r : mine) iov.push_back({local + r.offset, r.length});
    t.getv(at.rank, iov, remote, done);
    return defer && !t.caps().gets_complete_at_once;
  }
}

[[noreturn, gnu::cold, gnu::noinline]] void not_exposed(rank_t rank, std::uintptr_t addr,
                                                        std::size_t bytes, const char* call) {
  std::string what = oneside::detail::hex(addr);
  what.append(" (").append(std::to_string(bytes)).append(" bytes) is not memory rank ");
  what.append(std::to_string(rank)).append(" exposed (outside every heap and window of it)");
  raise(error_class::rma_range, {.call = call, .target = rank, .bytes = bytes}, what);
}

}  // namespace

// ---- completion -----------------------------------------------------------------------

completion_counter::completion_counter(int ranks)
    : done_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(ranks))) {}

void completion_counter::complete(transport::backend& t, rank_t r, std::uint64_t ticket) {
  if (!is_complete(r, ticket)) {
    // Everything issued before this read is complete once the flush returns.
    const std::uint64_t through = issued_.load(std::memory_order_acquire);
    t.flush(r);
    raise_mark(done_[static_cast<std::size_t>(r)], through);
  }
  if (has_waiters()) run_due();
}

void completion_counter::complete_all(transport::backend& t) {
  const std::uint64_t through = issued_.load(std::memory_order_acquire);
  if (all_.load(std::memory_order_acquire) < through) {
    t.flush_all();
    raise_mark(all_, through);
  }
  if (has_waiters()) run_due();
}

void completion_counter::when_complete(rank_t r, std::uint64_t ticket, completion_waiter& w) {
  if (is_complete(r, ticket)) {
    w.completed();
    return;
  }
  w.rank_ = r;
  w.ticket_ = ticket;
  {
    const std::lock_guard lock(waiters_mutex_);
    waiters_.push_back(&w);
    waiting_.store(waiters_.size(), std::memory_order_release);
  }
  // A completion between the look above and the registration has not seen it.
  if (is_complete(r, ticket)) run_due();
}

void completion_counter::drive(transport::backend& t) {
  if (!has_waiters()) return;
  std::vector<rank_t> targets;
  {
    const std::lock_guard lock(waiters_mutex_);
    for (const completion_waiter* w : waiters_) targets.push_back(w->rank_);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  const std::uint64_t through = issued_.load(std::memory_order_acquire);
  for (rank_t r : targets) complete(t, r, through);
}

void completion_counter::run_due() noexcept {
  std::vector<completion_waiter*> due;
  {
    const std::lock_guard lock(waiters_mutex_);
    std::erase_if(waiters_, [&](completion_waiter* w) {
      if (!is_complete(w->rank_, w->ticket_)) return false;
      due.push_back(w);
      return true;
    });
    waiting_.store(waiters_.size(), std::memory_order_release);
  }
  for (completion_waiter* w : due) w->completed();
}

// ---- resolution -----------------------------------------------------------------------

access_target resolve(transport::backend& t, rank_t rank, std::uintptr_t addr, std::size_t bytes,
                      const char* call) {
  if (rank < 0 || rank >= t.size()) [[unlikely]] {
    raise(error_class::rank, {.call = call, .target = rank},
          "rank " + std::to_string(rank) + " is not in the world [0, " + std::to_string(t.size()) +
              ")");
  }
  if (bytes == 0) return {rank, addr, nullptr};
  if (void* p = t.reach().local(rank, addr, bytes)) return {rank, addr, static_cast<std::byte*>(p)};
  if (addr + bytes < addr || !t.exposes(rank, addr, bytes)) [[unlikely]] {
    not_exposed(rank, addr, bytes, call);
  }
  return {rank, addr, nullptr};
}

access_target resolve(transport::backend& t, rank_t rank, std::uintptr_t addr, count_t count,
                      const datatype& type, const char* call) {
  ONESIDE_CHECK(count >= 0, error_class::count, {.call = call, .target = rank},
                "the count is negative");
  const oneside::detail::footprint fp = oneside::detail::memory_footprint(type, count);
  const auto span = static_cast<std::size_t>(fp.hi - fp.lo);
  const std::uintptr_t lo = addr + static_cast<std::uintptr_t>(fp.lo);
  access_target at = resolve(t, rank, lo, span, call);
  // The mapping of `addr` itself (the layout's byte offsets are from there).
  at.addr = addr;
  if (at.local != nullptr) at.local -= fp.lo;
  return at;
}

// ---- data movement --------------------------------------------------------------------

bool put(transport::backend& t, const access_target& to, const void* src, std::size_t bytes,
         bool defer) {
  if (bytes == 0) return false;
  if (to.local != nullptr) {
    if (bytes == 8) {
      std::memcpy(to.local, src, 8);  // a word is one store, not a call
    } else {
      oneside::detail::copy_bytes(to.local, src, bytes);
    }
    return false;
  }
  t.put(to.rank, to.addr, std::span(static_cast<const std::byte*>(src), bytes),
        defer ? transport::deferred() : nullptr);
  return true;
}

bool get(transport::backend& t, const access_target& from, void* dst, std::size_t bytes,
         bool defer) {
  if (bytes == 0) return false;
  if (from.local != nullptr) {
    oneside::detail::copy_bytes(dst, from.local, bytes);
    return false;
  }
  t.get(from.rank, from.addr, std::span(static_cast<std::byte*>(dst), bytes),
        defer ? transport::deferred() : nullptr);
  return defer && !t.caps().gets_complete_at_once;
}

bool put_layout(transport::backend& t, const access_target& to, const void* local,
                count_t local_count, const datatype& local_type, count_t remote_count,
                const datatype& remote_type, const char* call, bool defer) {
  check_signatures(local_count, local_type, remote_count, remote_type, to.rank, call);
  if (local_count == 0 || local_type.size() == 0) return false;
  ONESIDE_CHECK(local != nullptr, error_class::arg, {.call = call, .target = to.rank},
                "the source buffer is null");
  return move_layout<true>(t, to, static_cast<std::byte*>(const_cast<void*>(local)), local_count,
                           local_type, remote_count, remote_type, defer);
}

bool get_layout(transport::backend& t, const access_target& from, void* local, count_t local_count,
                const datatype& local_type, count_t remote_count, const datatype& remote_type,
                const char* call, bool defer) {
  check_signatures(local_count, local_type, remote_count, remote_type, from.rank, call);
  if (local_count == 0 || local_type.size() == 0) return false;
  ONESIDE_CHECK(local != nullptr, error_class::arg, {.call = call, .target = from.rank},
                "the destination buffer is null");
  return move_layout<false>(t, from, static_cast<std::byte*>(local), local_count, local_type,
                            remote_count, remote_type, defer);
}

// ---- atomics --------------------------------------------------------------------------

std::uint64_t fetch(transport::backend& t, const access_target& at, const transport::amo_args& a) {
  std::uint64_t old = 0;
  if (at.local != nullptr) {
    transport::detail::check_amo(at.rank, at.addr, a);
    transport::detail::amo_apply(at.local, a, &old);
    return old;
  }
  t.amo(at.rank, at.addr, a, &old);  // returns with the old value in place
  return old;
}

bool update(transport::backend& t, const access_target& at, const transport::amo_args& a) {
  if (at.local != nullptr) {
    transport::detail::check_amo(at.rank, at.addr, a);
    transport::detail::amo_apply(at.local, a, nullptr);
    return false;
  }
  t.amo(at.rank, at.addr, a, nullptr);  // locally complete; applied at the target at a flush
  return true;
}

}  // namespace oneside::rma::detail
