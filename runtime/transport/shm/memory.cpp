// The shm backend's memory: segments (shared-memory objects of this rank), exposures of user
// memory (moved into shared memory in place where they can be), the segment table in this
// rank's page, and each peer's view of it (mapped lazily, replaced when its version changes).
#include <algorithm>
#include <fcntl.h>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include <oneside/runtime/wait.hpp>

#include "runtime/check.hpp"
#include "transport/shm/page_move.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::transport {

using oneside::detail::shm_name;
using oneside::detail::shm_object;
using namespace shm_detail;

namespace {

std::string segment_name(int index, std::uint64_t id) {
  std::string n = "r";
  n.append(std::to_string(index)).append(".s").append(std::to_string(id));
  return n;
}

std::uint64_t load_relaxed(const std::uint64_t& v) noexcept {
  return std::atomic_ref<const std::uint64_t>(v).load(std::memory_order_relaxed);
}
void store_relaxed(std::uint64_t& v, std::uint64_t x) noexcept {
  std::atomic_ref<std::uint64_t>(v).store(x, std::memory_order_relaxed);
}

}  // namespace

segment shm::allocate_segment(std::size_t bytes, const segment_request& how) {
  check_open(how.call);
  if (bytes == 0) return segment(this, nullptr, 0, 0);
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t rounded =
      (bytes + static_cast<std::size_t>(page) - 1) & ~(static_cast<std::size_t>(page) - 1);
  std::lock_guard lock(segments_mutex_);
  ONESIDE_CHECK(segments_.size() + exposures_.size() < max_segments, error_class::intern,
                {.call = "allocate_segment"},
                "this rank has " + std::to_string(max_segments) + " segments already");
  // Random names, tried again when taken: nobody can make the job fail by creating the name
  // of its next segment first.
  shm_object obj;
  const std::uint64_t id = shm_object::create_under_random_name(
      obj, rounded, {.call = how.call, .front = how.reserve_front, .back = how.reserve_back},
      [&] { return new_object_id(); },
      [&](std::uint64_t v) { return shm_name(job_, segment_name(me_, v)); });
  if (count_ == 1) obj.unlink();  // nobody else will map it: leave nothing behind even on a crash
  void* base = obj.data();
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  segments_.emplace(id, published_segment{std::move(obj), address, rounded});
  publish_table();
  return segment(this, base, bytes, id);
}

void shm::reserve(const segment& s, std::size_t offset, std::size_t bytes, std::string_view call) {
  check_open(call);
  std::lock_guard lock(segments_mutex_);
  const auto it = segments_.find(s.id());
  ONESIDE_CHECK(it != segments_.end() && s.base() == it->second.object.data(), error_class::intern,
                {.call = call}, "reserve: not a segment of this rank");
  it->second.object.reserve(offset, bytes, call);
}

std::uint64_t shm::new_object_id() const {
  for (;;) {
    const std::uint64_t id = oneside::detail::random_u64() & ((std::uint64_t{1} << 62) - 1);
    if (id != 0 && segments_.count(id) == 0 && exposures_.count(id) == 0) return id;
  }
}

// Moves the pages [begin, begin + len) into a new shared-memory object in place (page_move.hpp):
// every pointer into them stays valid and node peers map the object and load/store directly.
// Caller holds segments_mutex_.
bool shm::remap_into_shared_memory(std::uint64_t id, std::uintptr_t begin, std::size_t len,
                                   bool fenced) {
  const std::string name = shm_name(job_, segment_name(me_, id));
  shm_object obj;
  try {
    // Reserved whole (the move copies every page into it); where /dev/shm has no room, the
    // pages stay private and peers reach them by cross-memory attach.
    obj = shm_object(name, len, shm_object::mode::create, {.call = "expose"});
  } catch (const error&) {
    return false;
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  bool moved = false;
  if (fd >= 0) {
    const moving_pages guard(*own_.header);
    moved = move_to_shared(fd, begin, len, fenced);
  }
  if (fd >= 0) ::close(fd);
  if (!moved) {
    obj.unlink();
    return false;
  }
  // The object keeps its own second mapping (address space only: the pages are the same).
  segments_.emplace(id, published_segment{std::move(obj), begin, len, true});
  return true;
}

bool shm::expose_range(std::uint64_t& id, exposed_range& e, bool optional) {
  // In a job of several ranks, move anonymous private memory into shared memory so node peers
  // reach it by load/store instead of cross-memory attach and the owner's agent. Every page the
  // range touches when stores can be held off while the pages move (page_move.hpp), so no
  // store of another thread, beside the range or in it, is lost; otherwise only the pages that
  // lie wholly inside the range (a page shared with other data is never touched then), and
  // nothing for an optional exposure (the program may store there meanwhile: attach is a local
  // call). Pages already shared (a segment, or another exposure sharing an edge page) are left
  // as they are. An optional exposure takes at most half of the table, so segments and
  // exposures that must be made always find room.
  const bool fenced = can_fence_writes();
  const bool room = optional ? segments_.size() + exposures_.size() + 2 <= max_segments / 2
                             : segments_.size() + exposures_.size() + 1 < max_segments;
  if (opts_.remap_user_memory && opts_.load_store && count_ > 1 && e.len > 0 && room &&
      (fenced || !optional)) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t address = e.base;
    const std::size_t bytes = e.len;
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
    if (begin < end && !held(begin, end) && anonymous_private(begin, end) &&
        remap_into_shared_memory(id = new_object_id(), begin, end - begin, fenced)) {
      e.remapped = true;
      e.fenced = fenced;
      e.pages_begin = begin;
      e.pages_len = end - begin;
    }
  }
  if (optional && !e.remapped) return false;
  if (id == 0) id = new_object_id();
  exposures_.emplace(id, e);
  publish_table();
  return true;
}

exposure shm::expose(void* base, std::size_t bytes) {
  check_open("expose");
  std::lock_guard lock(segments_mutex_);
  std::uint64_t id = 0;
  exposed_range e{reinterpret_cast<std::uintptr_t>(base), bytes, false, false, 0, 0};
  (void)expose_range(id, e, false);
  return exposure(this, base, bytes, id);
}

exposure shm::expose_optional(void* base, std::size_t bytes) {
  check_open("expose_optional");
  std::lock_guard lock(segments_mutex_);
  std::uint64_t id = 0;
  exposed_range e{reinterpret_cast<std::uintptr_t>(base), bytes, false, false, 0, 0};
  if (!expose_range(id, e, true)) return exposure();
  return exposure(this, base, bytes, id);
}

void shm::move_back(const exposed_range& e, const shm_object& object, bool peers_write) noexcept {
  if (!e.remapped) return;
  std::optional<moving_pages> guard;
  if (peers_write) guard.emplace(*own_.header);
  move_to_private(e.pages_begin, e.pages_len, e.fenced, object.name());
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
  // Withdraw the range and its segment first (peers drop them), then give the program
  // private pages back.
  const exposed_range gone = it->second;
  exposures_.erase(it);
  shm_object object;
  if (auto seg = segments_.find(e.id()); seg != segments_.end()) {
    seg->second.object.unlink();
    object = std::move(seg->second.object);
    segments_.erase(seg);
  }
  publish_table();
  move_back(gone, object, true);
}

void shm::release_all() noexcept {
  std::lock_guard lock(segments_mutex_);
  for (auto& [id, e] : exposures_) {
    // Closed (after a barrier no peer writes past) or abandoned (a peer may have died inside
    // a write, its count never going down): no waiting for writers.
    if (auto seg = segments_.find(id); seg != segments_.end()) {
      move_back(e, seg->second.object, false);
    }
  }
  for (auto& [id, seg] : segments_) seg.object.unlink();
  segments_.clear();
  exposures_.clear();
  for (int i = 0; i < count_; ++i) {
    peer& p = peer_at(i);
    std::lock_guard g(p.refresh_mutex);
    p.maps.clear();
  }
}

// Writes the segment table under its sequence lock. Caller holds segments_mutex_.
void shm::publish_table() {
  page_header& h = *own_.header;
  const std::uint64_t v = h.table_version.load(std::memory_order_relaxed);
  h.table_version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::size_t i = 0;
  const auto add = [&](std::uint64_t id, std::uintptr_t base, std::size_t len) {
    if (i == max_segments) return;  // full: the rest is reached by cross-memory attach
    store_relaxed(h.table[i].id, id);
    store_relaxed(h.table[i].base, base);
    store_relaxed(h.table[i].len, len);
    ++i;
  };
  for (const auto& [id, seg] : segments_) add(seg.moved ? id | moved_flag : id, seg.base, seg.len);
  for (const auto& [id, e] : exposures_) {
    if (e.len > 0) add(id | exposure_flag, e.base, e.len);
  }
  h.table_count.store(i, std::memory_order_relaxed);
  h.table_version.store(v + 2, std::memory_order_release);
}

void shm::refresh_locked(int index) noexcept {
  peer& p = peer_at(index);
  rank_view& sl = view_of(job_ranks_[static_cast<std::size_t>(index)]);
  page_header& h = *p.page.header;
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
  if (table::reader(sl.entries).tag() == version) return;

  std::vector<entry> next;
  next.reserve(entries.size());
  std::map<std::uint64_t, std::shared_ptr<shm_object>> kept;
  // Exposures' ranges by id, to keep a moved object's reach inside its exposure (moved_flag).
  std::map<std::uint64_t, const segment_entry*> ranges;
  for (const segment_entry& e : entries) {
    if ((e.id & exposure_flag) != 0) ranges.emplace(e.id & ~exposure_flag, &e);
  }
  for (const segment_entry& e : entries) {
    auto base = static_cast<std::uintptr_t>(e.base);
    auto len = static_cast<std::size_t>(e.len);
    // This rank's own memory is where it is. Exposures are not mapped, and nothing is
    // without load/store: such entries only say the memory is exposed (inline messages and
    // cross-memory attach reach it).
    if (index == me_) {
      next.push_back(entry{base, len, reinterpret_cast<std::byte*>(base), e.id});
      continue;
    }
    if ((e.id & exposure_flag) != 0 || !opts_.load_store) {
      next.push_back(entry{base, len, nullptr, e.id});
      continue;
    }
    // Moved user pages: only the part inside their exposure's range (none without it).
    std::uintptr_t skip = 0;
    if ((e.id & moved_flag) != 0) {
      const auto range = ranges.find(e.id & ~moved_flag);
      if (range == ranges.end()) continue;
      const segment_entry& x = *range->second;
      const auto lo = std::max<std::uintptr_t>(base, x.base);
      const auto hi = std::min<std::uintptr_t>(base + len, x.base + x.len);
      if (lo >= hi) continue;
      skip = lo - base;
      base = lo;
      len = hi - lo;
    }
    auto it = p.maps.find(e.id);
    if (it == p.maps.end()) {
      try {
        auto obj = std::make_shared<shm_object>(
            shm_name(job_, segment_name(index, e.id & ~moved_flag)), e.len, shm_object::mode::open);
        it = p.maps.emplace(e.id, std::move(obj)).first;
      } catch (const error&) {
        continue;  // withdrawn since we read the table
      }
    }
    next.push_back(entry{base, len, static_cast<std::byte*>(it->second->data()) + skip, e.id});
    kept.emplace(e.id, std::move(it->second));
  }
  std::sort(next.begin(), next.end(),
            [](const entry& a, const entry& b) { return a.base < b.base; });
  sl.entries.assign(next, version);
  // Mappings of withdrawn segments are dropped here (unless pinned), once the table no longer
  // names them.
  p.maps = std::move(kept);
}

std::optional<reach_table::entry> shm::find_current(rank_t r, std::uintptr_t addr,
                                                    std::size_t len) noexcept {
  const int index = index_of(r);
  std::lock_guard lock(peer_at(index).refresh_mutex);
  refresh_locked(index);
  rank_view& sl = view_of(r);
  return look_up(sl, table::reader(sl.entries), addr, len);
}

void* shm::direct_at(int index, std::uintptr_t addr, std::size_t len) noexcept {
  if (index == me_) return reinterpret_cast<void*>(addr);
  if (!opts_.load_store) return nullptr;
  return local(job_ranks_[static_cast<std::size_t>(index)], addr, len);
}

void* shm::direct(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
  const int i = index_of(r);
  return i < 0 ? nullptr : direct_at(i, addr, len);
}

pinned shm::pin(rank_t r, std::uintptr_t addr, std::size_t len) {
  const int i = checked_index(r, "pin");
  if (i == me_) return pinned(reinterpret_cast<void*>(addr), len, nullptr);
  if (!opts_.load_store) return {};
  const std::optional<entry> m = find(r, addr, len);
  if (!m || m->local == nullptr) return {};
  peer& p = peer_at(i);
  std::lock_guard lock(p.refresh_mutex);
  auto it = p.maps.find(m->id);
  if (it == p.maps.end()) return {};
  return pinned(m->local + (addr - m->base), len, it->second);
}

pinned shm::pin_exposure(rank_t r, std::uint64_t exposure_id, std::uintptr_t addr,
                         std::size_t len) {
  const int i = checked_index(r, "pin_exposure");
  if (i == me_) return pinned(reinterpret_cast<void*>(addr), len, nullptr);
  if (!opts_.load_store) return {};
  // The mapped entry of that exposure's moved pages, or (id 0) of a segment.
  const std::uint64_t want = exposure_id == 0 ? 0 : exposure_id | moved_flag;
  // Under the refresh lock the table is current and no write overlaps the read.
  peer& p = peer_at(i);
  std::lock_guard lock(p.refresh_mutex);
  refresh_locked(i);
  const table::reader t(view_of(r).entries);
  for (std::size_t k = 0; k < t.size(); ++k) {
    const entry e = t[k];
    const bool match = exposure_id == 0 ? (e.id & (exposure_flag | moved_flag)) == 0 : e.id == want;
    if (!match || e.local == nullptr || addr < e.base || addr - e.base > e.len ||
        len > e.len - (addr - e.base)) {
      continue;
    }
    auto it = p.maps.find(e.id);
    if (it == p.maps.end()) return {};
    return pinned(e.local + (addr - e.base), len, it->second);
  }
  return {};
}

}  // namespace oneside::transport
