// Window creation in its four flavours, free, attributes, hints, shared_query and the
// attached regions of dynamic windows (WIN-*).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/runtime.hpp>
#include <oneside/runtime/wait.hpp>

#include "context/rma_context.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"
#include "runtime/team_copy.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma {

using detail::window_ctl;
using detail::window_impl;

namespace detail {

void window_impl::fail(error_class ec, const error_context& ctx, std::string_view what) const {
  if (policy == errors::fatal) {
    const std::string message = oneside::detail::format_error(ec, ctx, what);
    std::fprintf(stderr, "%s\n(the window's error handler is errors::fatal: aborting)\n",
                 message.c_str());
    std::fflush(stderr);
    std::abort();
  }
  oneside::detail::raise(ec, ctx, what);
}

direct_part pin_direct_part(transport::backend& tp, rank_t world, std::uint64_t exposure,
                            std::uintptr_t base, std::size_t len) {
  direct_part d;
  if (len == 0) return d;
  d.pin = tp.pin_exposure(world, exposure, base, len);
  if (d.pin) {
    d.at_base = static_cast<std::byte*>(d.pin.get());
    d.hi = len;
    return d;
  }
  // Only the whole pages inside the range moved (its edge pages are held by other memory, or
  // hold the owner's stack frames, or could not be fenced): those alone.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t lo = (base + page - 1) & ~(page - 1);
  const std::uintptr_t hi = (base + len) & ~(page - 1);
  if (lo < hi && lo >= base) d.pin = tp.pin_exposure(world, exposure, lo, hi - lo);
  if (d.pin) {
    d.at_base = static_cast<std::byte*>(d.pin.get()) - (lo - base);
    d.lo = lo - base;
    d.hi = hi - base;
  }
  return d;
}

}  // namespace detail

namespace {

// What every member tells the others about its part of a window.
struct member_record {
  std::uint64_t base;
  std::uint64_t size;
  std::int64_t disp_unit;
  std::uint64_t ctl;
  std::uint64_t stripes;
  std::uint64_t shared_segment;  // allocate_shared: address of the segment holding the memory
  std::uint64_t shared_offset;   // … and where this member's part starts in it
  std::uint64_t shared_bytes;    // … and that segment's length
  std::uint64_t exposure;        // create: the transport's id of the exposure of the memory
};

bool is_true(const info& hints, std::string_view key) {
  const auto v = hints.get(key);
  return v && (*v == "true" || *v == "1" || *v == "yes");
}

// accumulate_ordering: "none" or a comma-separated subset of rar, raw, war, waw. Anything else
// is ignored like any hint oneside does not understand (WIN-21).
bool valid_ordering(std::string_view v) {
  if (v == "none") return true;
  if (v.empty()) return false;
  while (!v.empty()) {
    const auto comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    if (item != "rar" && item != "raw" && item != "war" && item != "waw") return false;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return true;
}

void apply_hints(window_impl& w, const info& hints, bool at_creation) {
  if (at_creation) w.no_locks = is_true(hints, "no_locks");
  if (auto v = hints.get("accumulate_ordering"); v && valid_ordering(*v)) {
    w.accumulate_ordering = *v;
    w.ordered = *v != "none";
  }
  if (auto v = hints.get("accumulate_ops"); v && (*v == "same_op" || *v == "same_op_no_op")) {
    w.same_op_only = *v == "same_op";
  }
  for (std::string_view key :
       {"same_size", "same_disp_unit", "alloc_shared_noncontig", "mpi_accumulate_granularity"}) {
    if (auto v = hints.get(key)) w.hints.set(key, *v);
  }
}

// Runs `make`, which makes this member's shared memory of a window, on every member of `t`:
// when it raises no_mem on any member (shared memory is reserved as it is made, and /dev/shm
// may have no room), every member raises, the one that failed its own error and the others
// one naming it, so that nobody waits for it in the window's next collective.
template <class Make>
void make_on_every_member(const team& t, std::string_view call, std::size_t bytes, Make&& make) {
  std::exception_ptr failed;
  try {
    make();
  } catch (const error& e) {
    if (e.error_class() != error_class::no_mem) throw;
    failed = std::current_exception();
  }
  const rank_t first = allreduce(t, failed ? t.rank() : t.size(), op::min);
  if (first == t.size()) return;
  if (failed) std::rethrow_exception(failed);
  oneside::detail::raise(error_class::no_mem, {.call = call, .bytes = bytes},
                         "member " + std::to_string(first) +
                             " could not reserve shared memory for its part, so no member made "
                             "the window");
}

// Builds a window of any flavour. Collective over `t`.
std::unique_ptr<window_impl> build(rma::flavor fl, const team& t, void* user_base,
                                   std::size_t bytes, std::ptrdiff_t disp_unit, const info& hints,
                                   std::string_view call) {
  transport::backend& tp = transport::current(call);
  ONESIDE_CHECK(t.is_valid(), error_class::comm, {.call = call, .rule = "WIN-1"},
                "the team is null");
  ONESIDE_CHECK(disp_unit > 0, error_class::disp, {.call = call, .rule = "WIN-4"},
                "disp_unit " + std::to_string(disp_unit) + " is not positive");
  ONESIDE_CHECK(fl != rma::flavor::create || bytes == 0 || user_base != nullptr, error_class::base,
                {.call = call, .rule = "WIN-4"},
                "the base of a window of " + std::to_string(bytes) + " bytes is null");
  ONESIDE_CHECK(bytes <= (std::size_t{1} << 62), error_class::size, {.call = call, .rule = "WIN-4"},
                "size " + std::to_string(bytes) + " is not a valid window size");
  detail::rma_context& state = detail::rma_context::get(call);

  auto w = std::make_unique<window_impl>();
  w->id = state.next_window_serial();
  w->registry = state.windows();
  w->registry->add(w.get());
  w->transport = &tp;
  w->flavor = fl;
  w->disp_unit = fl == rma::flavor::dynamic ? 1 : disp_unit;
  w->bytes = fl == rma::flavor::dynamic ? 0 : bytes;
  apply_hints(*w, hints, true);
  if (fl == rma::flavor::allocate_shared) {
    // Every member must share this node's memory (WIN-8, ERR-14): checked before anything is
    // made, the same way on every member.
    const team& local = oneside::local_team();
    bool all_local = true;
    for (rank_t member : t.group().world_ranks()) {
      all_local = all_local && local.from_world(member) != no_rank;
    }
    ONESIDE_CHECK(all_local, error_class::rma_shared, {.call = call, .rule = "WIN-8"},
                  "the team spans ranks that do not share memory with this one");
  }
  w->team = oneside::detail::duplicate_team(t, 4096, 2);
  w->rank = w->team.rank();
  w->size = w->team.size();

  // This member's control block, followed by its memory for allocate windows: a group the
  // transport may serve faster (on MPI, a window of its own; transport::allocate_group).
  const bool memory_in_segment = fl == rma::flavor::allocate;
  make_on_every_member(w->team, call, bytes, [&] {
    w->segment = memory_in_segment ? tp.allocate_group(w->team.group().world_ranks(),
                                                       w->ctl_size() + bytes, {.call = call})
                                   : tp.allocate_segment(w->ctl_size(), {.call = call});
  });
  w->own_ctl = new (w->segment.base()) window_ctl{};
  for (int r = 0; r < 3 * w->size; ++r) {
    new (detail::pscw_posted(w->own_ctl) + r) std::atomic<std::uint64_t>{0};
  }
  const auto members = static_cast<std::size_t>(w->size);
  w->epoch.access.assign(members, detail::epoch_state::not_accessed);
  w->epoch.access_epochs.assign(members, 0);
  w->epoch.exposure_epochs.assign(members, 0);
  w->epoch.locks.reserve(members);
  w->epoch.lock_asserts.reserve(members);
  w->epoch.untouched_locks.reserve(members);
  if (memory_in_segment && bytes > 0) {
    w->base = static_cast<std::byte*>(w->segment.base()) + w->ctl_size();
  } else if (fl == rma::flavor::create) {
    w->base = bytes > 0 ? user_base : nullptr;
    if (bytes > 0) w->exposure = tp.expose(user_base, bytes);
  }

  member_record mine{reinterpret_cast<std::uintptr_t>(w->base),
                     w->bytes,
                     static_cast<std::int64_t>(w->disp_unit),
                     w->segment.address(),
                     state.stripes_address(),
                     0,
                     0,
                     0,
                     w->exposure.id()};
  if (fl == rma::flavor::allocate_shared) {
    const bool noncontig = is_true(hints, "alloc_shared_noncontig");
    w->hints.set("alloc_shared_noncontig", noncontig ? "true" : "false");
    const std::vector<std::uint64_t> sizes = allgather(w->team, std::uint64_t{bytes});
    if (noncontig) {
      // Each member's part in a segment of its own, placed where the member likes (WIN-10).
      make_on_every_member(w->team, call, bytes,
                           [&] { w->shared_memory = tp.allocate_segment(bytes, {.call = call}); });
      mine.shared_segment = w->shared_memory.address();
      mine.shared_bytes = bytes;
    } else {
      // One segment, made by the first member, holds every member's part in rank order with
      // nothing between them (WIN-9).
      std::uint64_t total = 0;
      for (std::uint64_t s : sizes) total += s;
      for (rank_t r = 0; r < w->rank; ++r) mine.shared_offset += sizes[static_cast<std::size_t>(r)];
      make_on_every_member(w->team, call, bytes, [&] {
        if (w->rank == 0 && total > 0) {
          w->shared_memory = tp.allocate_segment(total, {.call = call});
        }
      });
      mine.shared_segment = broadcast(w->team, std::uint64_t{w->shared_memory.address()}, 0);
      mine.shared_bytes = total;
    }
    // Map the shared memory, then every member knows where its own part is here.
    std::vector<member_record> pre(static_cast<std::size_t>(w->size));
    allgather(w->team, &mine, static_cast<count_t>(sizeof mine), datatype::of<std::byte>(),
              pre.data());
    w->shared.resize(static_cast<std::size_t>(w->size));
    w->shared_pins.resize(static_cast<std::size_t>(w->size));
    for (rank_t r = 0; r < w->size; ++r) {
      const member_record& m = pre[static_cast<std::size_t>(r)];
      const std::size_t pin_index = noncontig ? static_cast<std::size_t>(r) : 0;
      transport::pinned& pin = w->shared_pins[pin_index];
      if (!pin && m.shared_segment != 0 && m.shared_bytes > 0) {
        const rank_t owner = w->team.to_world(noncontig ? r : 0);
        pin = tp.pin(owner, static_cast<std::uintptr_t>(m.shared_segment), m.shared_bytes);
        ONESIDE_CHECK(static_cast<bool>(pin), error_class::rma_shared,
                      {.call = call, .rule = "WIN-8"},
                      "the shared memory of member " + std::to_string(r) + " is not reachable");
      }
      std::byte* p = pin ? static_cast<std::byte*>(pin.get()) + m.shared_offset : nullptr;
      w->shared[static_cast<std::size_t>(r)] = shared_segment{
          m.size > 0 ? p : nullptr, m.size, static_cast<std::ptrdiff_t>(m.disp_unit)};
    }
    w->base = w->shared[static_cast<std::size_t>(w->rank)].base;
    mine.base = reinterpret_cast<std::uintptr_t>(w->base);
  }
  std::vector<member_record> all(static_cast<std::size_t>(w->size));
  allgather(w->team, &mine, static_cast<count_t>(sizeof mine), datatype::of<std::byte>(),
            all.data());

  w->member_worlds.assign(w->team.group().world_ranks().begin(),
                          w->team.group().world_ranks().end());
  // Lock words are changed with CPU atomics by the members that reach them and with the
  // transport's atomics by the others; the two agree when the transport's atomics are CPU
  // atomics at the owner, or when nobody needs the transport (every member on this node: the
  // node's ranks see the same set, so they all decide alike).
  const std::span<const rank_t> node = tp.node_ranks();
  bool all_on_node = true;
  for (rank_t world : w->member_worlds) {
    all_on_node = all_on_node && std::binary_search(node.begin(), node.end(), world);
  }
  const bool cpu_locks = tp.caps().atomics_coherent_with_cpu || all_on_node;
  w->targets = std::make_unique<detail::target_view[]>(static_cast<std::size_t>(w->size));
  for (rank_t r = 0; r < w->size; ++r) {
    const member_record& m = all[static_cast<std::size_t>(r)];
    detail::target_view& tv = w->target(r);
    tv.world = w->team.to_world(r);
    tv.base = static_cast<std::uintptr_t>(m.base);
    tv.size = static_cast<std::size_t>(m.size);
    tv.disp_unit = static_cast<std::ptrdiff_t>(m.disp_unit);
    // The control block and the stripe table are reached by load/store where the transport
    // allows (node peers), otherwise through the transport (ctl null: sync/, resolve.cpp).
    tv.ctl_address = static_cast<std::uintptr_t>(m.ctl);
    tv.ctl_pin = tp.pin(tv.world, tv.ctl_address, w->ctl_size());
    tv.stripes_pin =
        tp.pin(tv.world, static_cast<std::uintptr_t>(m.stripes), sizeof(detail::stripe_table));
    tv.ctl = static_cast<window_ctl*>(tv.ctl_pin.get());
    tv.regions_version =
        tv.ctl != nullptr ? &tv.ctl->regions_version
                          : &detail::regions_seen(w->own_ctl, w->size)[static_cast<std::size_t>(r)];
    tv.locks_direct = tv.ctl != nullptr && cpu_locks;
    tv.stripes = static_cast<detail::stripe_table*>(tv.stripes_pin.get());
    tv.stripes_address = static_cast<std::uintptr_t>(m.stripes);
    // The target's memory is used directly only with its control block and accumulate locks
    // (direct accumulates take the stripes; dynamic windows read the region table).
    const bool reachable = tv.ctl != nullptr && tv.stripes != nullptr;
    if (fl == rma::flavor::allocate_shared) {
      ONESIDE_CHECK(reachable, error_class::intern, {.call = call, .target = r},
                    "the control block of member " + std::to_string(r) +
                        " is not reachable (windows across nodes arrive with the MPI transport)");
    }
    if (!reachable) continue;
    switch (fl) {
      case rma::flavor::allocate:
        if (tv.size > 0) {
          tv.memory_pin = tp.pin(tv.world, tv.base, tv.size);
          tv.direct_base = static_cast<std::byte*>(tv.memory_pin.get());
          tv.direct_hi = tv.size;
        }
        break;
      case rma::flavor::allocate_shared:
        tv.direct_base = static_cast<std::byte*>(w->shared[static_cast<std::size_t>(r)].base);
        tv.direct_hi = tv.size;
        break;
      case rma::flavor::create: {
        // Our own memory is reachable. A peer's is where the transport moved it into shared
        // memory (shm, ONESIDE_SHM_REMAP: every page it touches, or only the whole pages inside
        // it); the rest is reached with cross-memory attach and the owner's agent.
        detail::direct_part d = detail::pin_direct_part(tp, tv.world, m.exposure, tv.base, tv.size);
        tv.memory_pin = std::move(d.pin);
        tv.direct_base = d.at_base;
        tv.direct_lo = d.lo;
        tv.direct_hi = d.hi;
        break;
      }
      case rma::flavor::dynamic:
        break;
    }
  }
  barrier(w->team);  // every member has mapped what it needs before anyone uses the window
  return w;
}

}  // namespace

window::window(std::unique_ptr<detail::window_impl> impl) noexcept : impl_(std::move(impl)) {}
window::window() noexcept = default;
window::window(window&&) noexcept = default;
window& window::operator=(window&& o) noexcept {
  if (this != &o) {
    if (impl_) {
      try {
        free();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::abort();
      }
    }
    impl_ = std::move(o.impl_);
  }
  return *this;
}

window::~window() {
  if (!impl_) return;
  if (std::uncaught_exceptions() > 0 || !oneside::is_open()) {
    impl_.reset();  // local release: this rank is failing, or the runtime is gone
    return;
  }
  try {
    free();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n(a window was destroyed without a valid free: aborting)\n", e.what());
    std::abort();
  }
}

window window::create(const oneside::team& t, void* base, std::size_t bytes,
                      std::ptrdiff_t disp_unit, const info& hints) {
  return window(build(rma::flavor::create, t, base, bytes, disp_unit, hints, "window::create"));
}

window window::allocate(const oneside::team& t, std::size_t bytes, std::ptrdiff_t disp_unit,
                        const info& hints) {
  return window(
      build(rma::flavor::allocate, t, nullptr, bytes, disp_unit, hints, "window::allocate"));
}

window window::allocate_shared(const oneside::team& t, std::size_t bytes, std::ptrdiff_t disp_unit,
                               const info& hints) {
  return window(build(rma::flavor::allocate_shared, t, nullptr, bytes, disp_unit, hints,
                      "window::allocate_shared"));
}

window window::create_dynamic(const oneside::team& t, const info& hints) {
  return window(build(rma::flavor::dynamic, t, nullptr, 0, 1, hints, "window::create_dynamic"));
}

detail::window_impl& window::impl() const {
  return checked("window");
}

void window::null_window(std::string_view call) {
  oneside::detail::raise(error_class::win, {.call = call, .rule = "ERR-4"},
                         "the window is null (freed, moved from, or never created)");
}

void window::free() {
  window_impl& w = checked("window::free");
  const auto waiting = detail::window_scope("window::free", w);
  if (w.epoch.passive()) {
    w.fail(error_class::rma_sync, w.where("window::free", "WIN-17"),
           "the window still has a passive-target epoch open (unlock or unlock_all first)");
  }
  if (w.epoch.started || w.epoch.posted) {
    w.fail(error_class::rma_sync, w.where("window::free", "WIN-17"),
           w.epoch.started ? "the window still has a start epoch open (complete first)"
                           : "the window still has a post epoch open (wait or test first)");
  }
  transport::current().flush_all();
  barrier(w.team);  // nobody may still reach this window (WIN-18)
  impl_.reset();
}

void* window::base() const {
  return checked("window::base").base;
}
std::size_t window::size() const {
  return checked("window::size").bytes;
}
std::ptrdiff_t window::disp_unit() const {
  return checked("window::disp_unit").disp_unit;
}
rma::flavor window::flavor() const {
  return checked("window::flavor").flavor;
}
memory_model window::model() const {
  // Unified when the transport keeps one copy of exposed memory (shm: node memory is
  // coherent, RMA and load/store see one copy); separate otherwise (MEM-1, MEM-5).
  return checked("window::model").transport->caps().unified_memory ? memory_model::unified
                                                                   : memory_model::separate;
}
oneside::group window::group() const {
  return checked("window::group").team.group();
}
const oneside::team& window::team() const {
  return checked("window::team").team;
}
std::uint64_t window::id() const {
  return checked("window::id").id;
}
void window::set_error_handler(errors e) {
  checked("window::set_error_handler").policy = e;
}
errors window::error_handler() const {
  return checked("window::error_handler").policy;
}

info window::get_info() const {
  const window_impl& w = checked("window::get_info");
  info i = w.hints;
  i.set("no_locks", w.no_locks ? "true" : "false");
  i.set("accumulate_ordering", w.accumulate_ordering);
  i.set("accumulate_ops", w.same_op_only ? "same_op" : "same_op_no_op");
  if (!i.contains("same_size")) i.set("same_size", "false");
  if (!i.contains("same_disp_unit")) i.set("same_disp_unit", "false");
  if (!i.contains("mpi_accumulate_granularity")) i.set("mpi_accumulate_granularity", "0");
  return i;
}

void window::set_info(const info& hints) {
  window_impl& w = checked("window::set_info");
  apply_hints(w, hints, false);
  barrier(w.team);  // collective (WIN-22)
}

shared_segment window::shared_query(rank_t r) const {
  const window_impl& w = checked("window::shared_query");
  if (w.flavor != rma::flavor::allocate_shared) {
    w.fail(error_class::rma_flavor, w.where("window::shared_query", "WIN-11", r),
           "shared_query needs a window made by allocate_shared");
  }
  if (r == proc_null) {
    // The lowest member with memory; with none, a zero-size segment (WIN-11).
    for (const shared_segment& s : w.shared) {
      if (s.size > 0) return s;
    }
    return shared_segment{nullptr, 0, w.shared.empty() ? 1 : w.shared.front().disp_unit};
  }
  if (r < 0 || r >= w.size) {
    w.fail(error_class::rank, w.where("window::shared_query", "WIN-11", r),
           "rank " + std::to_string(r) + " is not in the window's group");
  }
  return w.shared[static_cast<std::size_t>(r)];
}

namespace {

// Writes the attached regions into the control block under its sequence lock.
void publish_regions(window_impl& w) {
  window_ctl& c = *w.own_ctl;
  const std::uint64_t v = c.regions_version.load(std::memory_order_relaxed);
  c.regions_version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (std::size_t i = 0; i < w.attached.size(); ++i) {
    const detail::region_entry& e = w.attached[i].entry;
    std::atomic_ref<std::uint64_t>(c.regions[i].base).store(e.base, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(c.regions[i].len).store(e.len, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(c.regions[i].exposure)
        .store(e.exposure, std::memory_order_relaxed);
  }
  c.region_count.store(w.attached.size(), std::memory_order_relaxed);
  c.regions_version.store(v + 2, std::memory_order_release);
  // Members that cannot read this control block learn the new version from their own, before
  // this returns: a detach completes only once no origin can still use the old regions.
  bool told = false;
  for (rank_t m = 0; m < w.size; ++m) {
    const detail::target_view& tv = w.target(m);
    if (m == w.rank || tv.ctl != nullptr) continue;
    detail::ctl_update(w, tv, detail::regions_seen_offset(w.rank, w.size), transport::amo_op::store,
                       transport::amo_type::u64, v + 2);
    told = true;
  }
  if (told) w.transport->flush_all();
}

std::size_t page_bytes() noexcept {
  static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Whether the page holding `address` is mapped in this process (mincore fails with ENOMEM on
// an unmapped page).
bool page_is_mapped(std::uintptr_t address) noexcept {
  const std::uintptr_t page = page_bytes();
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &resident) == 0;
}

}  // namespace

void window::attach(void* base, std::size_t bytes) {
  window_impl& w = checked("window::attach");
  if (w.flavor != rma::flavor::dynamic) {
    w.fail(error_class::rma_flavor, w.where("window::attach", "WIN-14"),
           "attach needs a window made by create_dynamic");
  }
  if (base == nullptr && bytes > 0) {
    w.fail(error_class::base, w.where("window::attach", "ERR-5"), "the base is null");
  }
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  // Only accessible memory may be attached (WIN-14): a region that wraps around the address
  // space, or whose first or last page is not mapped here (a size far past the object), would
  // let origins write past it into whatever lies there.
  if (bytes > std::numeric_limits<std::uintptr_t>::max() - b) {
    w.fail(error_class::size, w.where("window::attach", "ERR-6", no_rank, {}, bytes),
           "the region of " + std::to_string(bytes) + " bytes at " + oneside::detail::hex(b) +
               " wraps around the address space");
  }
  if (bytes > 0 && (!page_is_mapped(b) || !page_is_mapped(b + bytes - 1))) {
    w.fail(error_class::rma_attach, w.where("window::attach", "ERR-13", no_rank, {}, bytes),
           "[" + oneside::detail::hex(b) + ", " + oneside::detail::hex(b + bytes) +
               ") is not memory of this process (its first or last page is not mapped; only "
               "accessible memory may be attached, WIN-14)");
  }
  std::lock_guard lock(w.attach_mutex);
  for (const window_impl::attached_region& a : w.attached) {
    const detail::region_entry& r = a.entry;
    if (b < r.base + r.len && r.base < b + bytes) {
      w.fail(error_class::rma_attach, w.where("window::attach", "WIN-14", no_rank, {}, bytes),
             "the region overlaps a region attached earlier");
    }
  }
  if (w.attached.size() == detail::max_regions) {
    w.fail(error_class::rma_attach, w.where("window::attach", "ERR-13"),
           "this window has " + std::to_string(detail::max_regions) + " regions attached already");
  }
  // Node peers load and store a region of a page or more where the transport can move it
  // into shared memory safely (docs/semantics.md, "dynamic"); smaller regions (the elements of
  // a linked structure, attached and detached often and used a few times each: moving costs
  // more than it saves) and everything else go through cross-memory attach and this member's
  // agent, as any memory does.
  transport::exposure shared =
      bytes >= page_bytes() ? w.transport->expose_optional(base, bytes) : transport::exposure();
  const std::uint64_t id = shared.id();
  w.attached.push_back(window_impl::attached_region{{b, bytes, id}, std::move(shared)});
  publish_regions(w);
}

void window::detach(const void* base) {
  window_impl& w = checked("window::detach");
  if (w.flavor != rma::flavor::dynamic) {
    w.fail(error_class::rma_flavor, w.where("window::detach", "WIN-16"),
           "detach needs a window made by create_dynamic");
  }
  std::lock_guard lock(w.attach_mutex);
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  auto it = std::find_if(w.attached.begin(), w.attached.end(),
                         [&](const window_impl::attached_region& r) { return r.entry.base == b; });
  if (it == w.attached.end()) {
    w.fail(error_class::base, w.where("window::detach", "WIN-16"),
           "no region attached to this window starts at that address");
  }
  // Out of the table first (origins drop it before this returns), then its pages become
  // private again when `shared` goes, at the end of this call.
  transport::exposure shared = std::move(it->exposure);
  w.attached.erase(it);
  publish_regions(w);
}

}  // namespace oneside::rma
