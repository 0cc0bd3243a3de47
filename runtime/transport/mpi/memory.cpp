// The MPI backend's memory: segments carved out of chunks of the node backend's memory, each
// chunk attached once to the job's dynamic window (when the engine lets it), exposures of
// user memory (served by messages), and which ranges of each peer are known to be attached.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/mpi/mpi_backend.hpp"

namespace oneside::transport {

using namespace mpi_detail;

namespace {
// The top page of the main thread's stack: mapped for the process's life and above any memory
// a program can expose (stack arrays lie below it; heaps, mappings and other threads' stacks
// lie lower still). Zero when /proc/self/maps does not name it.
std::uintptr_t stack_top_page() noexcept {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return 0;
  std::uintptr_t top = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::strstr(line, "[stack]") != nullptr && std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
      top = static_cast<std::uintptr_t>(hi) - static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    }
  }
  std::fclose(maps);
  return top;
}
}  // namespace

// Open MPI 4.1.4's osc ucx keeps the attached regions in a sorted array and searches one
// entry past its end when it attaches or detaches: a region attached above every live one
// lands one slot too far (leaving a hole that MPI_Win_free later unmaps: a crash), and
// stale entries past the end confuse later attaches. A first region above anything that can
// ever be attached keeps every later one inside the array (scripts/repro/ shows both).
void mpi::attach_sentinel() {
  const std::uintptr_t top = stack_top_page();
  if (top == 0) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  check(MPI_Win_attach(win_, reinterpret_cast<void*>(top), static_cast<MPI_Aint>(page)), "runtime");
}

// A chunk is attached when the engine lets it: one attachment serves every segment carved
// out of it. Past the engine's limit (or with ONESIDE_MPI_ATTACH=0) the chunk is served by
// messages instead, like memory the runtime did not allocate. Attachments stay until the
// runtime closes: Open MPI 4.1.4's osc ucx mishandles detaching (scripts/repro/), and origins
// remember what they learnt is attached.
bool mpi::attach_chunk(void* base, std::size_t bytes) {
  if (attach_refused_ || !opts_.attach) return false;
  const int rc =
      on_window([&] { return MPI_Win_attach(win_, base, static_cast<MPI_Aint>(bytes)); });
  if (rc != MPI_SUCCESS) {
    attach_refused_ = true;
    return false;
  }
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  attached_.insert({lo, lo + bytes});
  return true;
}

range mpi::attached_range(std::uintptr_t addr, std::size_t len) {
  const std::lock_guard lock(memory_mutex_);
  return attached_.find(addr, len);
}

// First fit over the chunks' free ranges; a new chunk (attached once) when none fits. Chunks
// are reserved only where segments are carved out of them.
std::uintptr_t mpi::carve(std::size_t bytes, const segment_request& how, std::size_t& chunk_index) {
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    auto& free = chunks_[i]->free;
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes) continue;
      const std::uintptr_t at = it->first;
      const std::size_t left = it->second - bytes;
      free.erase(it);
      if (left > 0) free.emplace(at + bytes, left);
      try {
        reserve_carved(*chunks_[i], at, bytes, how);
      } catch (...) {
        give_back(i, at, bytes);
        throw;
      }
      chunk_index = i;
      return at;
    }
  }
  auto c = std::make_unique<chunk>();
  const std::size_t len = std::max(bytes, chunk_bytes);
  c->memory = memory_.allocate_segment(len, {.call = how.call, .reserve_front = 0});
  // Before the chunk is attached or kept: when this fails, it goes again at once.
  reserve_carved(*c, c->memory.address(), bytes, how);
  (void)attach_chunk(c->memory.base(), len);
  const std::uintptr_t at = c->memory.address();
  if (len > bytes) c->free.emplace(at + bytes, len - bytes);
  chunks_.push_back(std::move(c));
  chunk_index = chunks_.size() - 1;
  return at;
}

void mpi::reserve_carved(const chunk& c, std::uintptr_t base, std::size_t bytes,
                         const segment_request& how) {
  const std::size_t offset = base - c.memory.address();
  const std::size_t front = std::min(bytes, how.reserve_front);
  const std::size_t back = std::min(bytes - front, how.reserve_back);
  memory_.reserve(c.memory, offset, front, how.call);
  memory_.reserve(c.memory, offset + bytes - back, back, how.call);
}

void mpi::give_back(std::size_t index, std::uintptr_t base, std::size_t len) noexcept {
  auto& free = chunks_[index]->free;
  auto next = free.lower_bound(base);
  if (next != free.end() && next->first == base + len) {
    len += next->second;
    next = free.erase(next);
  }
  if (next != free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == base) {
      base = prev->first;
      len += prev->second;
      free.erase(prev);
    }
  }
  free.emplace(base, len);
}

segment mpi::allocate_segment(std::size_t bytes, const segment_request& how) {
  check_rank(rank_, how.call);
  if (bytes == 0) return segment(this, nullptr, 0, 0);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t rounded = (bytes + page - 1) & ~(page - 1);
  std::lock_guard lock(memory_mutex_);
  std::size_t index = 0;
  const std::uintptr_t at = carve(rounded, how, index);
  const std::uint64_t id = next_id_++;
  carved_.emplace(id, carved{index, at, rounded});
  return segment(this, reinterpret_cast<void*>(at), bytes, id);
}

void mpi::reserve(const segment& s, std::size_t offset, std::size_t bytes, std::string_view call) {
  check_rank(rank_, call);
  std::lock_guard lock(memory_mutex_);
  if (auto g = groups_.find(s.id()); g != groups_.end()) {
    memory_.reserve(g->second->memory, offset, bytes, call);
    return;
  }
  const auto it = carved_.find(s.id());
  ONESIDE_CHECK(it != carved_.end() && offset <= it->second.len && bytes <= it->second.len - offset,
                error_class::intern, {.call = call}, "reserve: not a segment of this rank");
  const chunk& c = *chunks_[it->second.chunk];
  memory_.reserve(c.memory, it->second.base - c.memory.address() + offset, bytes, call);
}

exposure mpi::expose(void* base, std::size_t bytes) {
  check_rank(rank_, "expose");
  // Not attached to the window: remote ranks reach it by messages (see put_by_message), so
  // a program may expose as much memory, as often, as it likes, and no attachment outlives
  // the memory (engines that register attached memory would keep stale registrations).
  exposure e = memory_.expose(base, bytes);
  const std::uint64_t id = e.id();
  std::lock_guard lock(memory_mutex_);
  exposures_.emplace(id, std::move(e));
  return exposure(this, base, bytes, id);
}

// Only what the node backend moves into shared memory (its node peers load and store it);
// remote ranks reach such memory by messages whether it is exposed or not.
exposure mpi::expose_optional(void* base, std::size_t bytes) {
  check_rank(rank_, "expose_optional");
  exposure e = memory_.expose_optional(base, bytes);
  if (e.id() == 0) return exposure();
  const std::uint64_t id = e.id();
  std::lock_guard lock(memory_mutex_);
  exposures_.emplace(id, std::move(e));
  return exposure(this, base, bytes, id);
}

void mpi::release(segment& s) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(memory_mutex_);
  if (auto g = groups_.find(s.id()); g != groups_.end()) {
    std::unique_ptr<group_window> group = std::move(g->second);
    groups_.erase(g);
    lock.unlock();
    // Collective, unless this rank is failing (its peers may never free theirs).
    free_group(*group, std::uncaught_exceptions() == 0);
    return;
  }
  auto it = carved_.find(s.id());
  if (it == carved_.end()) return;
  const carved c = it->second;
  carved_.erase(it);
  // Give the pages back (shared memory reads as zeros afterwards: segments start zeroed),
  // then return the range to its chunk, merged with free neighbours.
  ::madvise(reinterpret_cast<void*>(c.base), c.len, MADV_REMOVE);
  give_back(c.chunk, c.base, c.len);
}

void mpi::release(exposure& e) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(memory_mutex_);
  exposures_.erase(e.id());
}

std::optional<mpi_target> mpi::locate(rank_t r, std::uintptr_t addr, std::size_t len) {
  peer_state& p = peer_of(r);
  const std::lock_guard lock(p.reach_mutex);
  for (const auto& g : p.groups) {
    if (addr >= g->span.lo && addr + len <= g->span.hi) {
      return mpi_target{g->win, g->rank, static_cast<MPI_Aint>(addr - g->span.lo), g.get()};
    }
  }
  if (p.reachable.find(addr, len).hi == 0) return std::nullopt;
  return mpi_target{win_, r, static_cast<MPI_Aint>(addr), nullptr};
}

bool mpi::all_reachable(rank_t r, std::span<const remote_iov> remote) {
  peer_state& p = peer_of(r);
  const std::lock_guard lock(p.reach_mutex);
  return std::all_of(remote.begin(), remote.end(), [&](const remote_iov& x) {
    return x.len == 0 || p.reachable.find(x.addr, x.len).hi != 0;
  });
}

std::vector<range> mpi::exposed_ranges() {
  std::vector<range> out;
  const std::lock_guard lock(memory_mutex_);
  for (const auto& [id, c] : carved_) out.push_back({c.base, c.base + c.len});
  for (const auto& [id, g] : groups_) {
    out.push_back({g->memory.address(), g->memory.address() + g->memory.size()});
  }
  for (const auto& [id, e] : exposures_) {
    const auto lo = reinterpret_cast<std::uintptr_t>(e.base());
    if (e.size() > 0) out.push_back({lo, lo + e.size()});
  }
  std::sort(out.begin(), out.end(), [](const range& a, const range& b) { return a.lo < b.lo; });
  return out;
}

bool mpi::exposes(rank_t r, std::uintptr_t addr, std::size_t len) {
  check_rank(r, "exposes");
  peer_state& p = peer_of(r);
  {
    const std::lock_guard lock(p.reach_mutex);
    if (p.exposed.find(addr, len).hi != 0) return true;
  }
  if (r == rank_) {
    std::vector<range> mine = exposed_ranges();
    const std::lock_guard lock(p.reach_mutex);
    p.exposed.assign(std::move(mine));
    return p.exposed.find(addr, len).hi != 0;
  }
  // Not among the ranges `r` told us of (or never asked): ask again, once.
  std::vector<range> theirs(256);
  for (;;) {
    std::uint64_t count = 0;
    const table_request req{reinterpret_cast<std::uintptr_t>(theirs.data()),
                            reinterpret_cast<std::uintptr_t>(&count), theirs.size()};
    auto buf = std::make_unique<std::byte[]>(sizeof(am_header) + sizeof req);
    std::memcpy(buf.get() + sizeof(am_header), &req, sizeof req);
    const std::uint64_t ticket =
        send_numbered(r, 0, kind_table, std::move(buf), sizeof(am_header) + sizeof req);
    await_ticket(r, ticket, in_handler());
    if (count <= theirs.size()) {
      theirs.resize(count);
      break;
    }
    theirs.resize(count + 64);  // it exposed more meanwhile: room for all, and ask again
  }
  const std::lock_guard lock(p.reach_mutex);
  p.exposed.assign(std::move(theirs));
  return p.exposed.find(addr, len).hi != 0;
}

// ---- group windows --------------------------------------------------------------------
//
// The memory of an rma window of flavour allocate, made collectively by its members: a
// segment of the node backend's memory per member (node peers keep loading and storing it)
// with an MPI window of its own over the members' segments (MPI_Win_create: a static window,
// which osc ucx reaches without fetching a region table per operation, unlike the job's
// dynamic window). Made and freed by all members together, in the same order.

segment mpi::allocate_group(std::span<const rank_t> members, std::size_t bytes,
                            const segment_request& how) {
  check_rank(rank_, how.call);
  auto g = std::make_unique<group_window>();
  g->members.assign(members.begin(), members.end());
  // Collective over the members only: a communicator of theirs, then the window over it.
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(win_comm_, &world);
  check(MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group),
        "allocate_group");
  const int rc = MPI_Comm_create_group(win_comm_, group, 0, &g->comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  check(rc, "allocate_group");
  MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
  // The memory, which may fail on some member: all members agree before the window is made,
  // and all raise alike otherwise (none waits in MPI_Win_create for one that raised).
  std::exception_ptr failed;
  try {
    g->memory = memory_.allocate_segment(std::max<std::size_t>(bytes, 1), how);
  } catch (const std::exception&) {
    failed = std::current_exception();
  }
  int ok = failed ? 0 : 1;
  int all_ok = 0;
  check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm), "allocate_group");
  if (all_ok == 0) {
    MPI_Comm_free(&g->comm);
    if (failed) std::rethrow_exception(failed);
    oneside::detail::raise(error_class::no_mem, {.call = how.call, .bytes = bytes},
                           "another member could not reserve its memory");
  }
  check(MPI_Win_create(g->memory.base(), static_cast<MPI_Aint>(g->memory.size()), 1, MPI_INFO_NULL,
                       g->comm, &g->win),
        "allocate_group");
  MPI_Win_set_errhandler(g->win, MPI_ERRORS_RETURN);
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, g->win), "allocate_group");
  // Where every member's part is.
  const range mine{g->memory.address(), g->memory.address() + g->memory.size()};
  std::vector<range> spans(members.size());
  check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, spans.data(), sizeof mine, MPI_BYTE, g->comm),
        "allocate_group");
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == rank_) continue;
    auto t = std::make_unique<group_target>();
    t->span = spans[i];
    t->win = g->win;
    t->rank = static_cast<int>(i);
    peer_state& p = peer_of(members[i]);
    const std::lock_guard lock(p.reach_mutex);
    p.groups.push_back(std::move(t));
  }
  void* base = g->memory.base();
  const std::lock_guard lock(memory_mutex_);
  const std::uint64_t id = next_id_++;
  groups_.emplace(id, std::move(g));
  return segment(this, base, bytes, id);
}

void mpi::free_group(group_window& g, bool collective) noexcept {
  for (rank_t m : g.members) {
    if (m == rank_) continue;
    peer_state& p = peer_of(m);
    const std::lock_guard lock(p.reach_mutex);
    std::erase_if(p.groups, [&](const auto& t) { return t->win == g.win; });
  }
  if (!collective) return;  // a failing rank: MPI may not be called collectively any more
  MPI_Win_unlock_all(g.win);
  MPI_Win_free(&g.win);
  MPI_Comm_free(&g.comm);
}

}  // namespace oneside::transport
