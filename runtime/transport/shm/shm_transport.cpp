// The shm transport. See shm_transport.hpp for the design and ctl_block.hpp for the layout
// of the memory peers share.
#include "transport/shm/shm_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fcntl.h>
#include <mutex>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <oneside/runtime/copy.hpp>

#include "bootstrap/bootstrap.hpp"
#include "error/check.hpp"
#include "transport/am_registry.hpp"
#include "transport/amo_local.hpp"
#include "transport/iov_match.hpp"
#include "transport/shm/page_move.hpp"

namespace oneside::transport {

using oneside::detail::doorbell;
using oneside::detail::raise;
using oneside::detail::shm_name;
using oneside::detail::shm_object;
using namespace shm_detail;

namespace {

std::string ctl_name(rank_t r) {
  std::string n = "r";
  n.append(std::to_string(r)).append(".ctl");
  return n;
}

std::string segment_name(rank_t r, std::uint64_t id) {
  std::string n = "r";
  n.append(std::to_string(r)).append(".s").append(std::to_string(id));
  return n;
}

std::uint64_t load_relaxed(const std::uint64_t& v) noexcept {
  return std::atomic_ref<const std::uint64_t>(v).load(std::memory_order_relaxed);
}
void store_relaxed(std::uint64_t& v, std::uint64_t x) noexcept {
  std::atomic_ref<std::uint64_t>(v).store(x, std::memory_order_relaxed);
}

// Cross-memory attach of (local, remote) pairs of equal length, in batches of IOV_MAX.
class cma_batch {
 public:
  cma_batch(pid_t pid, bool write, rank_t peer, std::string_view call)
      : pid_(pid), write_(write), peer_(peer), call_(call) {}
  void add(const void* local, std::uintptr_t remote, std::size_t n) {
    local_.push_back(iovec{const_cast<void*>(local), n});
    remote_.push_back(iovec{reinterpret_cast<void*>(remote), n});
    if (local_.size() == IOV_MAX) run();
  }
  void run() {
    std::size_t i = 0;
    while (i < local_.size()) {
      const std::size_t cnt = std::min<std::size_t>(local_.size() - i, IOV_MAX);
      const ssize_t done = write_ ? ::process_vm_writev(pid_, &local_[i], cnt, &remote_[i], cnt, 0)
                                  : ::process_vm_readv(pid_, &local_[i], cnt, &remote_[i], cnt, 0);
      if (done <= 0) fail(done < 0 ? errno : EFAULT, i);
      // Advance past what moved: whole pairs, then part of one.
      auto left = static_cast<std::size_t>(done);
      while (left > 0 && i < local_.size()) {
        if (left >= local_[i].iov_len) {
          left -= local_[i].iov_len;
          ++i;
        } else {
          local_[i].iov_base = static_cast<std::byte*>(local_[i].iov_base) + left;
          remote_[i].iov_base = static_cast<std::byte*>(remote_[i].iov_base) + left;
          local_[i].iov_len -= left;
          remote_[i].iov_len -= left;
          left = 0;
        }
      }
    }
    local_.clear();
    remote_.clear();
  }

 private:
  [[noreturn]] void fail(int err, std::size_t i) {
    std::string what = write_ ? "cannot write " : "cannot read ";
    what.append(std::to_string(remote_[i].iov_len)).append(" bytes at ");
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", remote_[i].iov_base);
    what.append(addr).append(" of rank ").append(std::to_string(peer_)).append(": ");
    what.append(std::strerror(err));
    error_class ec = error_class::intern;
    if (err == EFAULT) {
      ec = error_class::arg;
      what.append(" (the address is not mapped in that process)");
    } else if (err == EPERM) {
      what.append(
          " (cross-memory attach is not permitted between the ranks; check "
          "/proc/sys/kernel/yama/ptrace_scope)");
    } else if (err == ESRCH) {
      what.append(" (that rank's process has exited)");
    }
    raise(ec, {.call = call_, .target = peer_}, what);
  }

  pid_t pid_;
  bool write_;
  rank_t peer_;
  std::string_view call_;
  std::vector<iovec> local_;
  std::vector<iovec> remote_;
};

}  // namespace

// ---- setup and teardown ---------------------------------------------------------------

shm::shm(oneside::detail::bootstrap& boot, const options& opts)
    : boot_(boot), rank_(boot.rank()), size_(boot.size()), job_(boot.job_id()), opts_(opts) {
  ONESIDE_CHECK(opts_.am_slot_bytes >= 2 * am_header_bytes && opts_.am_slots >= 2, error_class::arg,
                {.call = "runtime"},
                "ONESIDE_AM_SLOTS must be at least 2 and ONESIDE_AM_SLOT_BYTES at least 128");
  opts_.am_slot_bytes = (opts_.am_slot_bytes + 63) & ~std::size_t{63};

  // Let sibling ranks use cross-memory attach on this process where Yama restricts ptrace
  // to descendants. Harmless (EINVAL) where Yama is absent.
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  if (opts_.load_store) {
    for (rank_t r = 0; r < size_; ++r) node_ranks_.push_back(r);
  } else {
    node_ranks_.push_back(rank_);
  }
  caps_.atomics_coherent_with_cpu = true;
  for (int o = 0; o < amo_op_count; ++o) {
    for (int t = 0; t < amo_type_count; ++t) {
      const auto op = static_cast<amo_op>(o);
      const auto ty = static_cast<amo_type>(t);
      if (detail::amo_is_defined(op, ty)) caps_.native_amo.add(op, ty);
    }
  }
  caps_.max_inline_put = SIZE_MAX;
  caps_.max_am_payload = opts_.am_slot_bytes - am_header_bytes;

  (void)detail::amo_message_handler();  // registered before any peer may send one

  const ctl_layout layout = ctl_layout::of(size_, opts_.am_slots, opts_.am_slot_bytes);
  own_ctl_object_ =
      shm_object(shm_name(job_, ctl_name(rank_)), layout.total, shm_object::mode::create);
  auto* base = static_cast<std::byte*>(own_ctl_object_.data());
  auto* hdr = new (base) ctl_header{};
  hdr->rank = rank_;
  hdr->pid = static_cast<std::int32_t>(::getpid());
  hdr->am_slots = static_cast<std::uint32_t>(opts_.am_slots);
  hdr->am_slot_bytes = static_cast<std::uint32_t>(opts_.am_slot_bytes);
  hdr->nranks = static_cast<std::uint32_t>(size_);
  own_ = ctl_view{hdr, reinterpret_cast<padded_u64*>(base + layout.applied_offset),
                  base + layout.slots_offset};
  for (int r = 0; r < size_; ++r) new (&own_.applied[r]) padded_u64{};
  for (std::size_t i = 0; i < opts_.am_slots; ++i) {
    auto* s = new (own_.slots + i * opts_.am_slot_bytes) am_slot_header{};
    s->seq.store(i, std::memory_order_relaxed);
  }
  std::atomic_ref<std::uint64_t>(hdr->magic).store(ctl_magic, std::memory_order_release);

  peers_ = std::make_unique<peer[]>(static_cast<std::size_t>(size_));
  boot_.barrier();  // every control block exists
  for (rank_t r = 0; r < size_; ++r) {
    peer& p = peer_of(r);
    if (r == rank_) {
      p.ctl = own_;
      p.pid = ::getpid();
      continue;
    }
    p.ctl_object = shm_object(shm_name(job_, ctl_name(r)), 0, shm_object::mode::open);
    auto* pb = static_cast<std::byte*>(p.ctl_object.data());
    auto* ph = reinterpret_cast<ctl_header*>(pb);
    ONESIDE_CHECK(
        std::atomic_ref<std::uint64_t>(ph->magic).load(std::memory_order_acquire) == ctl_magic &&
            ph->nranks == static_cast<std::uint32_t>(size_),
        error_class::intern, {.call = "runtime"},
        "the control block of rank " + std::to_string(r) + " does not match this job");
    const ctl_layout pl = ctl_layout::of(size_, ph->am_slots, ph->am_slot_bytes);
    p.ctl =
        ctl_view{ph, reinterpret_cast<padded_u64*>(pb + pl.applied_offset), pb + pl.slots_offset};
    p.pid = static_cast<pid_t>(ph->pid);
  }
  boot_.barrier();  // every peer mapped every control block: the names can go
  own_ctl_object_.unlink();

  if (opts_.agent_thread) agent_ = std::thread([this] { agent_main(); });
}

shm::~shm() {
  stop_agent();
  release_all();
  for (int r = 0; r < size_; ++r) {
    peer& p = peer_of(r);
    delete p.current.load(std::memory_order_relaxed);
  }
}

void shm::close() {
  if (closed_.load(std::memory_order_acquire)) return;
  flush_all();
  boot_.barrier();  // nobody sends to this rank any more
  stop_agent();
  drain();  // poll mode: messages that arrived before the barrier
  closed_.store(true, std::memory_order_release);
  release_all();
}

void shm::abandon() noexcept {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  stop_agent();
  release_all();
}

void shm::stop_agent() noexcept {
  if (!agent_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  own_.header->agent_bell.ring();
  agent_.join();
}

void shm::release_all() noexcept {
  std::lock_guard lock(segments_mutex_);
  for (auto& [id, e] : exposures_) {
    if (e.remapped) move_to_private(e.pages_begin, e.pages_len, e.fenced);
  }
  for (auto& [id, seg] : segments_) seg.object.unlink();
  segments_.clear();
  exposures_.clear();
  for (int r = 0; r < size_; ++r) {
    peer& p = peer_of(r);
    std::lock_guard g(p.refresh_mutex);
    p.maps.clear();
  }
}

void shm::check_open(std::string_view call) const {
  if (closed_.load(std::memory_order_relaxed)) [[unlikely]] {
    raise(error_class::not_open, {.call = call}, "the transport of a closed runtime was used");
  }
}

void shm::check_rank(rank_t r, std::string_view call) const {
  if (r < 0 || r >= size_) [[unlikely]] {
    raise(error_class::rank, {.call = call, .target = r},
          "rank " + std::to_string(r) + " is not in [0, " + std::to_string(size_) + ")");
  }
  check_open(call);
}

// ---- memory ---------------------------------------------------------------------------

segment shm::allocate_segment(std::size_t bytes) {
  check_open("allocate_segment");
  if (bytes == 0) return segment(this, nullptr, 0, 0);
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t rounded =
      (bytes + static_cast<std::size_t>(page) - 1) & ~(static_cast<std::size_t>(page) - 1);
  std::lock_guard lock(segments_mutex_);
  ONESIDE_CHECK(segments_.size() < max_segments, error_class::intern, {.call = "allocate_segment"},
                "this rank has " + std::to_string(max_segments) + " segments already");
  const std::uint64_t id = next_segment_id_++;
  shm_object obj(shm_name(job_, segment_name(rank_, id)), rounded, shm_object::mode::create);
  if (size_ == 1) obj.unlink();  // nobody else will map it: leave nothing behind even on a crash
  void* base = obj.data();
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  segments_.emplace(id, published_segment{std::move(obj), address, rounded});
  publish_table();
  return segment(this, base, bytes, id);
}

// Moves the pages [begin, begin + len) into a new shared-memory object in place (page_move.hpp):
// every pointer into them stays valid and node peers map the object and load/store directly.
// Caller holds segments_mutex_.
bool shm::remap_into_shared_memory(std::uint64_t id, std::uintptr_t begin, std::size_t len,
                                   bool fenced) {
  const std::string name = shm_name(job_, segment_name(rank_, id));
  shm_object obj;
  try {
    obj = shm_object(name, len, shm_object::mode::create);
  } catch (const error&) {
    return false;
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  const bool moved = fd >= 0 && move_to_shared(fd, begin, len, fenced);
  if (fd >= 0) ::close(fd);
  if (!moved) {
    obj.unlink();
    return false;
  }
  // The object keeps its own second mapping (address space only: the pages are the same).
  segments_.emplace(id, published_segment{std::move(obj), begin, len});
  return true;
}

exposure shm::expose(void* base, std::size_t bytes) {
  check_open("expose");
  std::lock_guard lock(segments_mutex_);
  const std::uint64_t id = next_segment_id_++;
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  exposed_range e{address, bytes, false, false, 0, 0};
  // In a job of several ranks, move anonymous private memory into shared memory so node peers
  // reach it by load/store instead of cross-memory attach and the owner's agent. Every page the
  // range touches when stores can be held off while the pages move (page_move.hpp), so no
  // store of another thread, beside the range or in it, is lost; otherwise only the pages that
  // lie wholly inside the range (a page shared with other data is never touched then). Pages
  // already shared (a segment, or another exposure sharing an edge page) are left as they are.
  if (opts_.remap_user_memory && opts_.load_store && size_ > 1 && bytes > 0) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const bool fenced = can_fence_writes();
    std::uintptr_t begin = fenced ? address & ~(page - 1) : (address + page - 1) & ~(page - 1);
    std::uintptr_t end =
        fenced ? (address + bytes + page - 1) & ~(page - 1) : (address + bytes) & ~(page - 1);
    const auto held = [&](std::uintptr_t lo, std::uintptr_t hi) {
      for (const auto& [sid, seg] : segments_) {
        if (lo < seg.base + seg.len && seg.base < hi) return true;
      }
      return false;
    };
    // An edge page on this thread's own stack stays put: this thread keeps writing there
    // (its calls' frames), and a fenced store of the mover itself would wait for ever.
    const stack_range own = this_thread_stack();
    const auto on_own_stack = [&](std::uintptr_t lo) { return lo < own.hi && own.lo < lo + page; };
    if (begin < end && (held(begin, begin + page) || (begin < address && on_own_stack(begin)))) {
      begin += page;
    }
    if (begin < end &&
        (held(end - page, end) || (end > address + bytes && on_own_stack(end - page)))) {
      end -= page;
    }
    if (begin < end && !held(begin, end) && segments_.size() < max_segments &&
        anonymous_private(begin, end) && remap_into_shared_memory(id, begin, end - begin, fenced)) {
      e.remapped = true;
      e.fenced = fenced;
      e.pages_begin = begin;
      e.pages_len = end - begin;
      publish_table();
    }
  }
  exposures_.emplace(id, e);
  return exposure(this, base, bytes, id);
}

void shm::release(segment& s) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;  // released with everything at close
  std::lock_guard lock(segments_mutex_);
  auto it = segments_.find(s.id());
  if (it == segments_.end()) return;
  it->second.object.unlink();
  // Withdraw before unmapping: peers see the new table version and drop their mapping.
  shm_object obj = std::move(it->second.object);
  segments_.erase(it);
  publish_table();
}

void shm::release(exposure& e) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(segments_mutex_);
  auto it = exposures_.find(e.id());
  if (it == exposures_.end()) return;
  if (it->second.remapped) {
    // Withdraw the segment first (peers drop it), then give the program private pages back.
    auto seg = segments_.find(e.id());
    if (seg != segments_.end()) {
      seg->second.object.unlink();
      segments_.erase(seg);
      publish_table();
    }
    move_to_private(it->second.pages_begin, it->second.pages_len, it->second.fenced);
  }
  exposures_.erase(it);
}

// Writes the segment table under its sequence lock. Caller holds segments_mutex_.
void shm::publish_table() {
  ctl_header& h = *own_.header;
  const std::uint64_t v = h.table_version.load(std::memory_order_relaxed);
  h.table_version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::size_t i = 0;
  for (const auto& [id, seg] : segments_) {
    store_relaxed(h.table[i].id, id);
    store_relaxed(h.table[i].base, seg.base);
    store_relaxed(h.table[i].len, seg.len);
    ++i;
  }
  h.table_count.store(i, std::memory_order_relaxed);
  h.table_version.store(v + 2, std::memory_order_release);
}

const shm::snapshot* shm::refresh(rank_t r) noexcept {
  peer& p = peer_of(r);
  std::lock_guard lock(p.refresh_mutex);
  ctl_header& h = *p.ctl.header;
  std::vector<segment_entry> entries;
  std::uint64_t version = 0;
  for (;;) {
    // The owner is changing its table (briefly, unless it was descheduled meanwhile).
    oneside::detail::wait_until(own_.header->main_bell, [&] {
      version = h.table_version.load(std::memory_order_acquire);
      return (version & 1U) == 0;
    });
    const std::uint64_t n =
        std::min<std::uint64_t>(h.table_count.load(std::memory_order_relaxed), max_segments);
    entries.resize(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      entries[i] = segment_entry{load_relaxed(h.table[i].id), load_relaxed(h.table[i].base),
                                 load_relaxed(h.table[i].len)};
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (h.table_version.load(std::memory_order_relaxed) == version) break;
  }
  const snapshot* old = p.current.load(std::memory_order_relaxed);
  if (old != nullptr && old->version == version) return old;

  auto next = std::make_unique<snapshot>();
  next->version = version;
  std::map<std::uint64_t, std::shared_ptr<shm_object>> kept;
  for (const segment_entry& e : entries) {
    auto it = p.maps.find(e.id);
    if (it == p.maps.end()) {
      try {
        auto obj = std::make_shared<shm_object>(shm_name(job_, segment_name(r, e.id)), e.len,
                                                shm_object::mode::open);
        it = p.maps.emplace(e.id, std::move(obj)).first;
      } catch (const error&) {
        continue;  // withdrawn since we read the table
      }
    }
    next->segments.push_back(mapped_segment{e.id, static_cast<std::uintptr_t>(e.base),
                                            static_cast<std::size_t>(e.len),
                                            static_cast<std::byte*>(it->second->data())});
    kept.emplace(e.id, std::move(it->second));
  }
  // Mappings of withdrawn segments are dropped here (unless pinned).
  p.maps = std::move(kept);
  std::sort(next->segments.begin(), next->segments.end(),
            [](const mapped_segment& a, const mapped_segment& b) { return a.base < b.base; });
  const snapshot* published = next.get();
  p.current.store(next.release(), std::memory_order_release);
  if (old != nullptr) p.retired.emplace_back(const_cast<snapshot*>(old));
  return published;
}

const shm::mapped_segment* shm::find(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
  peer& p = peer_of(r);
  const snapshot* s = p.current.load(std::memory_order_acquire);
  // A changed table means segments came or went (an address may even have been reused).
  if (s == nullptr || s->version != p.ctl.header->table_version.load(std::memory_order_acquire)) {
    s = refresh(r);
  }
  for (const mapped_segment& m : s->segments) {
    if (addr >= m.base && addr - m.base <= m.len && len <= m.len - (addr - m.base)) return &m;
  }
  return nullptr;
}

void* shm::direct(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
  if (r == rank_) return reinterpret_cast<void*>(addr);
  if (r < 0 || r >= size_ || !opts_.load_store) return nullptr;
  const mapped_segment* m = find(r, addr, len);
  return m != nullptr ? m->local + (addr - m->base) : nullptr;
}

pinned shm::pin(rank_t r, std::uintptr_t addr, std::size_t len) {
  check_rank(r, "pin");
  if (r == rank_) return pinned(reinterpret_cast<void*>(addr), len, nullptr);
  if (!opts_.load_store) return {};
  const mapped_segment* m = find(r, addr, len);
  if (m == nullptr) return {};
  peer& p = peer_of(r);
  std::lock_guard lock(p.refresh_mutex);
  auto it = p.maps.find(m->id);
  if (it == p.maps.end()) return {};
  return pinned(m->local + (addr - m->base), len, it->second);
}

// ---- data movement --------------------------------------------------------------------

template <bool Write, class Iov>
void shm::transfer(rank_t target, std::span<const Iov> local, std::span<const remote_iov> remote,
                   std::string_view call) {
  check_rank(target, call);
  ONESIDE_CHECK(detail::stream_bytes(local) == detail::stream_bytes(remote), error_class::arg,
                {.call = call, .target = target}, "local and remote byte counts differ");
  cma_batch b(peer_of(target).pid, Write, target, call);
  detail::match_streams(local, remote, [&](auto* l, std::uintptr_t r, std::size_t n) {
    if (void* p = direct(target, r, n)) {
      if constexpr (Write) {
        oneside::detail::copy_bytes(p, l, n);
      } else {
        oneside::detail::copy_bytes(l, p, n);
      }
    } else {
      b.add(l, r, n);
    }
  });
  b.run();
}

void shm::put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src, completion*) {
  if (dst >= 0 && dst < size_ && !src.empty() && !closed_.load(std::memory_order_relaxed)) {
    if (void* p = direct(dst, addr, src.size())) {  // the load/store fast path
      oneside::detail::copy_bytes(p, src.data(), src.size());
      return;
    }
  }
  const const_iov l{src.data(), src.size()};
  const remote_iov r{addr, src.size()};
  transfer<true>(dst, std::span(&l, 1), std::span(&r, 1), "put");
}

void shm::get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion*) {
  if (src >= 0 && src < size_ && !dst.empty() && !closed_.load(std::memory_order_relaxed)) {
    if (const void* p = direct(src, addr, dst.size())) {
      oneside::detail::copy_bytes(dst.data(), p, dst.size());
      return;
    }
  }
  const mutable_iov l{dst.data(), dst.size()};
  const remote_iov r{addr, dst.size()};
  transfer<false>(src, std::span(&l, 1), std::span(&r, 1), "get");
}

void shm::putv(rank_t dst, std::span<const const_iov> local, std::span<const remote_iov> remote,
               completion*) {
  transfer<true>(dst, local, remote, "putv");
}

void shm::getv(rank_t src, std::span<const mutable_iov> local, std::span<const remote_iov> remote,
               completion*) {
  transfer<false>(src, local, remote, "getv");
}

void shm::amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result, completion* c) {
  check_rank(dst, "amo");
  detail::check_amo(dst, addr, args);
  if (void* p = direct(dst, addr, amo_type_size(args.type))) {
    detail::amo_apply(p, args, result);
    return;
  }
  detail::send_amo(*this, dst, addr, args, result, c);  // run by the owner's agent
}

// ---- completion -----------------------------------------------------------------------

bool shm::is_applied(rank_t target, std::uint64_t ticket) const noexcept {
  return own_.applied[target].value.load(std::memory_order_acquire) >= ticket;
}

void shm::flush(rank_t target) {
  if (target < 0 || target >= size_ || closed_.load(std::memory_order_relaxed)) [[unlikely]] {
    check_rank(target, "flush");
  }
  const std::uint64_t issued = peer_of(target).issued.load(std::memory_order_acquire);
  // Only active messages can be outstanding: nothing to wait for unless some were sent.
  if (issued != 0 && !is_applied(target, issued)) {
    oneside::detail::wait_until(own_.header->main_bell, [&] { return is_applied(target, issued); });
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_sync();
}

void shm::flush_all() {
  check_open("flush_all");
  const std::uint64_t sent = am_sent_.load(std::memory_order_acquire);
  if (sent != am_flushed_.load(std::memory_order_relaxed)) {
    for (rank_t r = 0; r < size_; ++r) {
      const std::uint64_t issued = peer_of(r).issued.load(std::memory_order_acquire);
      if (!is_applied(r, issued)) {
        oneside::detail::wait_until(own_.header->main_bell, [&] { return is_applied(r, issued); });
      }
    }
    // Everything sent before `sent` was read is applied now (never lower the mark).
    std::uint64_t seen = am_flushed_.load(std::memory_order_relaxed);
    while (seen < sent &&
           !am_flushed_.compare_exchange_weak(seen, sent, std::memory_order_relaxed)) {
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_sync();
}

// Everything shm does is locally complete when the call returns (payloads are copied).
void shm::flush_local(rank_t target) {
  check_rank(target, "flush_local");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void shm::flush_local_all() {
  check_open("flush_local_all");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool shm::test(completion& c) {
  auto& e = c.entries();
  std::erase_if(e, [&](const completion::pending& p) { return is_applied(p.target, p.ticket); });
  if (e.empty()) {
    std::atomic_thread_fence(std::memory_order_acquire);
    oneside::detail::cross_process_acquire();
  }
  return e.empty();
}

void shm::wait(completion& c) {
  if (test(c)) return;
  oneside::detail::wait_until(own_.header->main_bell, [&] { return test(c); });
}

// ---- active messages ------------------------------------------------------------------

void shm::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                  completion* c) {
  check_rank(dst, "am_send");
  detail::check_am_send(dst, handler, payload.size(), caps_.max_am_payload);
  peer& p = peer_of(dst);
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(p.send_mutex);
    ticket = p.issued.load(std::memory_order_relaxed) + 1;
    enqueue(dst, handler, payload, ticket);
    p.issued.store(ticket, std::memory_order_release);
  }
  am_sent_.fetch_add(1, std::memory_order_release);
  // The agent sleeps on its own bell; in poll mode the rank's waits do the work.
  oneside::detail::notify(opts_.agent_thread ? p.ctl.header->agent_bell : p.ctl.header->main_bell);
  if (opts_.agent_thread && dst != rank_) {
    // nothing more: the target's agent applies it
  }
  if (c != nullptr) c->entries().push_back({dst, ticket});
}

void shm::enqueue(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                  std::uint64_t ticket) {
  const ctl_view& q = peer_of(dst).ctl;
  ctl_header& h = *q.header;
  for (;;) {
    std::uint64_t pos = h.am_enqueue.load(std::memory_order_relaxed);
    am_slot_header* s = nullptr;
    for (;;) {
      s = &q.slot(pos);
      const std::uint64_t seq = s->seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::int64_t>(seq - pos);
      if (diff == 0) {
        if (h.am_enqueue.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        s = nullptr;  // full
        break;
      } else {
        pos = h.am_enqueue.load(std::memory_order_relaxed);
      }
    }
    if (s != nullptr) {
      s->handler = handler;
      s->len = static_cast<std::uint32_t>(payload.size());
      s->source = rank_;
      s->ticket = ticket;
      if (!payload.empty()) std::memcpy(q.payload(*s), payload.data(), payload.size());
      oneside::detail::cross_process_release();
      s->seq.store(pos + 1, std::memory_order_release);
      return;
    }
    // Full: wait until the owner frees a slot. Make progress ourselves meanwhile in case
    // the queue is our own and nobody else drains it.
    const std::uint64_t seen = h.am_dequeue.load(std::memory_order_acquire);
    if (dst == rank_ && !opts_.agent_thread) drain();
    oneside::detail::wait_until(
        h.space_bell, [&] { return h.am_dequeue.load(std::memory_order_acquire) != seen; });
  }
}

bool shm::has_message() const noexcept {
  const std::uint64_t pos = own_.header->am_dequeue.load(std::memory_order_relaxed);
  return own_.slot(pos).seq.load(std::memory_order_acquire) == pos + 1;
}

void shm::apply_message(am_slot_header& s) noexcept {
  const am_handler fn = detail::find_am_handler(s.handler);
  if (fn == nullptr) {
    std::fprintf(stderr,
                 "oneside: rank %d: active message from rank %d names handler %08x, which this "
                 "rank has not registered; aborting\n",
                 rank_, s.source, s.handler);
    std::abort();
  }
  try {
    const std::span<const std::byte> payload(own_.payload(s), s.len);
    if (opts_.outer != nullptr) {
      fn(*opts_.outer, opts_.world_ranks[static_cast<std::size_t>(s.source)], payload);
    } else {
      fn(*this, s.source, payload);
    }
  } catch (const std::exception& e) {
    // Origins check arguments before sending, so a failing handler is a broken invariant.
    std::fprintf(stderr, "oneside: rank %d: active message from rank %d failed: %s; aborting\n",
                 rank_, s.source, e.what());
    std::abort();
  }
}

std::size_t shm::drain() noexcept {
  if (consumer_busy_.test_and_set(std::memory_order_acquire)) return 0;
  ctl_header& h = *own_.header;
  std::size_t n = 0;
  for (;;) {
    const std::uint64_t pos = h.am_dequeue.load(std::memory_order_relaxed);
    am_slot_header& s = own_.slot(pos);
    if (s.seq.load(std::memory_order_acquire) != pos + 1) break;
    oneside::detail::cross_process_acquire();
    apply_message(s);
    const rank_t source = s.source;
    const std::uint64_t ticket = s.ticket;
    s.seq.store(pos + h.am_slots, std::memory_order_release);
    h.am_dequeue.store(pos + 1, std::memory_order_release);
    // Applied: tell the origin (its flush or completion may be waiting).
    peer& origin = peer_of(source);
    origin.ctl.applied[rank_].value.store(ticket, std::memory_order_release);
    oneside::detail::notify(origin.ctl.header->main_bell);
    ++n;
  }
  consumer_busy_.clear(std::memory_order_release);
  if (n > 0) oneside::detail::notify(h.space_bell);
  return n;
}

void shm::agent_main() noexcept {
  ::pthread_setname_np(::pthread_self(), "oneside-agent");
  oneside::detail::mark_runtime_thread();
  // After a message the agent polls a while (another one often follows), then sleeps on its
  // own doorbell until a sender rings it; it never yields to the rank's threads in between.
  const oneside::detail::wait_policy policy{opts_.agent_spin_ns, 0, 200'000'000};
  while (!stop_.load(std::memory_order_acquire)) {
    if (drain() > 0) continue;
    oneside::detail::wait_until(own_.header->agent_bell, policy, [&] {
      return has_message() || stop_.load(std::memory_order_acquire);
    });
  }
  drain();
}

void shm::progress() {
  if (!opts_.agent_thread) drain();
}

void shm::wake(rank_t r) noexcept {
  if (r < 0 || r >= size_) return;
  oneside::detail::notify(peer_of(r).ctl.header->main_bell);
}

void shm::wake(std::span<const rank_t> ranks) noexcept {
  oneside::detail::cross_process_release();
  oneside::detail::waker_fence();
  for (rank_t r : ranks) {
    if (r < 0 || r >= size_) continue;
    oneside::detail::doorbell& bell = peer_of(r).ctl.header->main_bell;
    if (bell.has_sleepers()) bell.ring();
  }
}

doorbell& shm::local_doorbell() noexcept {
  return own_.header->main_bell;
}

doorbell* shm::peer_doorbell(rank_t r) noexcept {
  if (r < 0 || r >= size_) return nullptr;
  return &peer_of(r).ctl.header->main_bell;
}

std::int64_t shm::agent_cpu_ns() const noexcept {
  if (!agent_.joinable()) return -1;
  clockid_t cid{};
  if (::pthread_getcpuclockid(const_cast<std::thread&>(agent_).native_handle(), &cid) != 0) {
    return -1;
  }
  timespec ts{};
  ::clock_gettime(cid, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace oneside::transport
