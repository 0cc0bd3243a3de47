// The pgas layer's per-process context (pgas_context.hpp) and the calls of global_ptr.hpp and
// heap.hpp that need it.
#include "context/pgas_context.hpp"

#include <atomic>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/runtime/collectives.hpp>

#include "runtime/check.hpp"
#include "runtime/hex.hpp"
#include "runtime/layers.hpp"
#include "runtime/settings.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::hex;

// The layer's slot in the runtime's context: publishes the pgas context while it lives.
struct context_slot {
  context_slot() { g_current_context.store(&pgas, std::memory_order_release); }
  ~context_slot() { g_current_context.store(nullptr, std::memory_order_release); }
  pgas_context pgas;
};

std::shared_ptr<void> open_pgas() {
  return std::make_shared<context_slot>();
}

// pgas sits on rma: depth 2, opened after and released before rma's state.
[[maybe_unused]] const oneside::detail::layer_key g_layer =
    oneside::detail::register_layer("pgas", 2, &open_pgas);

}  // namespace

pgas_context::pgas_context()
    : transport_(transport::current("runtime open")),
      reach_(transport_.reach()),
      world_(oneside::world()),
      rank_(world_.rank()),
      local_(static_cast<std::size_t>(world_.size()), 0),
      rpc_ff_(local_.size()),
      ops_(world_.size()),
      in_flight_(std::make_unique<std::atomic<std::uint32_t>[]>(local_.size())) {
  bells_.assign(local_.size(), nullptr);
  for (rank_t r : transport_.node_ranks()) {
    local_[static_cast<std::size_t>(r)] = 1;
    if (r != rank_) bells_[static_cast<std::size_t>(r)] = transport_.peer_doorbell(r);
  }
  // Every rank's node, once (what node-routed aggregators need; the runtime's local team knows
  // only this node's ranks).
  node_leader_ = oneside::allgather(world_, transport_.node_ranks().front());
  heap_ = std::make_unique<global_heap>(
      transport_,
      static_cast<std::size_t>(oneside::detail::setting_int("ONESIDE_HEAP_SEGMENT_BYTES")),
      static_cast<std::size_t>(oneside::detail::setting_int("ONESIDE_HEAP_MAX_BYTES")));
  // Where the transport reaches memory made collectively faster (MPI), the heap's first
  // segment is made so, by every rank at once, now.
  if (transport_.caps().group_memory_faster) heap_->add_group_segment(world_.group().world_ranks());
  // The same settings, a budget of its own.
  symmetric_ = std::make_unique<symmetric_heap>(
      transport_, world_,
      static_cast<std::size_t>(oneside::detail::setting_int("ONESIDE_HEAP_SEGMENT_BYTES")),
      static_cast<std::size_t>(oneside::detail::setting_int("ONESIDE_HEAP_MAX_BYTES")));
}

pgas_context::~pgas_context() {
  try {
    // What this rank issued completes before the memory goes (the runtime's close is a
    // barrier after this).
    if (std::uncaught_exceptions() == 0) ops_.complete_all(transport_);
  } catch (...) {
    // A failed peer at close: the runtime reports it.
  }
}

pgas_context& get_context(std::string_view call) {
  pgas_context* s = get_context_if_open();
  if (s == nullptr) [[unlikely]] {
    (void)transport::current(call);  // raises not_open
    oneside::detail::raise(error_class::intern, {.call = call},
                           "the pgas layer was not set up when the runtime opened");
  }
  return *s;
}

bool is_local_rank(rank_t r) noexcept {
  pgas_context* s = get_context_if_open();
  return s != nullptr && s->is_local_rank(r);
}

void* local_address(rank_t r, std::uintptr_t addr, std::size_t bytes) noexcept {
  pgas_context* s = get_context_if_open();
  return s != nullptr ? s->local_address(r, addr, bytes) : nullptr;
}

rank_t my_rank_if_open() noexcept {
  pgas_context* s = get_context_if_open();
  return s != nullptr ? s->rank() : -1;
}

void* local_or_raise(rank_t r, std::uintptr_t addr, std::size_t bytes) {
  if (addr == 0) return nullptr;
  (void)get_context("global_ptr::local");
  if (void* p = local_address(r, addr, bytes)) return p;
  oneside::detail::raise(error_class::arg, {.call = "global_ptr::local", .target = r},
                         "the memory at " + hex(addr) + " of rank " + std::to_string(r) +
                             " is not load/store reachable from this process (is_local() is "
                             "false: use rget/rput)");
}

void different_ranks(rank_t a, rank_t b) {
  oneside::detail::raise(error_class::arg, {.call = "global_ptr::operator-"},
                         "the pointers are into different ranks' memory (" + std::to_string(a) +
                             " and " + std::to_string(b) + ")");
}

rank_t my_rank() {
  return get_context("global_ptr").rank();
}

namespace {
// Another rank's block (heap_deallocate_any): out of line, the future's frame with it.
[[gnu::noinline]] void deallocate_remote(global_ptr<void> p) {
  heap_deallocate_async(p).wait();
}
}  // namespace

global_ptr<void> heap_allocate(std::size_t bytes, std::size_t align) {
  pgas_context& s = get_context("allocate");
  void* p = s.heap().allocate(bytes, align);
  return global_ptr<void>(s.rank(), reinterpret_cast<std::uintptr_t>(p));
}

namespace {
// Out of line, so that own_block inlines without a frame for the message.
[[noreturn, gnu::cold, gnu::noinline]] void not_own_block(global_ptr<void> p,
                                                          std::string_view call) {
  oneside::detail::raise(error_class::rank, {.call = call, .target = p.where()},
                         "the block at " + hex(p.address()) + " belongs to rank " +
                             std::to_string(p.where()) + "'s heap; only its owner frees it");
}

void* own_block(const pgas_context& s, global_ptr<void> p, std::string_view call) {
  if (p.where() != s.rank()) [[unlikely]] {
    not_own_block(p, call);
  }
  return reinterpret_cast<void*>(p.address());
}
}  // namespace

void heap_deallocate(global_ptr<void> p) {
  if (p.is_null()) return;
  pgas_context& s = get_context("deallocate");
  s.heap().deallocate(own_block(s, p, "deallocate"));
}

// Here rather than in remote_heap.cpp: this rank's block, the common case, takes one call.
void heap_deallocate_any(global_ptr<void> p) {
  if (p.is_null()) return;
  // This rank's block: heap_deallocate(p), whose other checks (open, own rank) hold here.
  pgas_context* s = get_context_if_open();
  if (s != nullptr && p.where() == s->rank()) [[likely]] {
    s->heap().deallocate(reinterpret_cast<void*>(p.address()));
    return;
  }
  deallocate_remote(p);
}

void heap_check_block(global_ptr<void> p) {
  pgas_context& s = get_context("deallocate");
  s.heap().check_block(own_block(s, p, "deallocate"));
}

}  // namespace oneside::pgas::detail

namespace oneside {

heap_stats_t heap_stats() {
  return pgas::detail::get_context("heap_stats").heap().stats();
}

}  // namespace oneside
