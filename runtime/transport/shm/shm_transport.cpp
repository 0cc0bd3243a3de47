// The shm backend's setup and teardown, and its rank checks. See shm_transport.hpp for the
// design and rank_page.hpp for the layout of the memory peers share.
#include "transport/shm/shm_transport.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "runtime/amo_local.hpp"
#include "runtime/check.hpp"
#include "transport/shm/page_move.hpp"
#include "transport/shm/ptracer.hpp"

namespace oneside::transport {

using oneside::detail::raise;
using oneside::detail::shm_name;
using oneside::detail::shm_object;
using namespace shm_detail;

namespace {

// "r<index>.ctl.<nonce>": the nonce is random, so another user cannot create the name first.
std::string page_name(int index, std::uint64_t nonce) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  std::string n = "r";
  n.append(std::to_string(index)).append(".ctl.").append(hex);
  return n;
}

}  // namespace

shm::shm(oneside::detail::bootstrap& boot, const options& opts)
    : boot_(boot),
      liveness_(oneside::detail::job_liveness::join(boot.job_id(), "runtime")),
      rank_(opts.job_ranks.empty() ? boot.rank()
                                   : opts.job_ranks[static_cast<std::size_t>(boot.rank())]),
      size_(opts.job_size > 0 ? opts.job_size : boot.size()),
      me_(boot.rank()),
      count_(boot.size()),
      job_(boot.job_id()),
      opts_(opts),
      front_(opts.front != nullptr ? opts.front : this) {
  ONESIDE_CHECK(opts_.am_slot_bytes >= 2 * am_header_bytes && opts_.am_slots >= 2, error_class::arg,
                {.call = "runtime"},
                "ONESIDE_AM_SLOTS must be at least 2 and ONESIDE_AM_SLOT_BYTES at least 128");
  opts_.am_slot_bytes = (opts_.am_slot_bytes + 63) & ~std::size_t{63};
  opts_.front = nullptr;  // front_ holds it

  // Which job rank each of the bootstrap's ranks is.
  index_of_.assign(static_cast<std::size_t>(size_), -1);
  for (int i = 0; i < count_; ++i) {
    const rank_t r = opts_.job_ranks.empty() ? i : opts_.job_ranks[static_cast<std::size_t>(i)];
    job_ranks_.push_back(r);
    index_of_[static_cast<std::size_t>(r)] = i;
  }

  // Let sibling ranks, and only processes of the job's tree, use cross-memory attach on this
  // process where Yama restricts ptrace to descendants (ptracer.hpp).
  (void)shm_detail::declare_job_ptracer(boot);

  if (opts_.load_store) {
    node_ranks_ = job_ranks_;  // ascending: the bootstrap lists them in job order
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
  caps_.gets_complete_at_once = true;  // load/store, an inline reply or cross-memory attach
  caps_.max_am_payload = opts_.am_slot_bytes - am_header_bytes;

  (void)detail::amo_message_handler();  // registered before any peer may send one

  const page_layout layout = page_layout::of(count_, opts_.am_slots, opts_.am_slot_bytes);
  // Reserved whole: its message slots are all used in turn.
  const std::uint64_t nonce = shm_object::create_under_random_name(
      own_page_object_, layout.total, {.call = "runtime"},
      [] { return oneside::detail::random_u64(); },
      [&](std::uint64_t v) { return shm_name(job_, page_name(me_, v)); });
  auto* base = static_cast<std::byte*>(own_page_object_.data());
  auto* hdr = new (base) page_header{};
  hdr->rank = me_;
  hdr->pid = static_cast<std::int32_t>(::getpid());
  hdr->am_slots = static_cast<std::uint32_t>(opts_.am_slots);
  hdr->am_slot_bytes = static_cast<std::uint32_t>(opts_.am_slot_bytes);
  hdr->nranks = static_cast<std::uint32_t>(count_);
  own_ = page_view{hdr, reinterpret_cast<padded_u64*>(base + layout.applied_offset),
                   reinterpret_cast<reply_slot*>(base + layout.replies_offset),
                   base + layout.slots_offset};
  for (int r = 0; r < count_; ++r) new (&own_.applied[r]) padded_u64{};
  for (std::size_t i = 0; i < opts_.am_slots; ++i) {
    auto* s = new (own_.slots + i * opts_.am_slot_bytes) am_slot_header{};
    s->seq.store(i, std::memory_order_relaxed);
  }
  std::atomic_ref<std::uint64_t>(hdr->magic).store(page_magic, std::memory_order_release);

  peers_ = std::make_unique<peer[]>(static_cast<std::size_t>(count_));
  // Every rank page exists; the names travel with the exchange.
  std::vector<std::uint64_t> nonces(static_cast<std::size_t>(count_));
  boot_.allgather(&nonce, nonces.data(), sizeof nonce);
  for (int i = 0; i < count_; ++i) {
    peer& p = peer_at(i);
    if (i == me_) {
      p.page = own_;
      p.pid = ::getpid();
      continue;
    }
    p.page_object = shm_object(shm_name(job_, page_name(i, nonces[static_cast<std::size_t>(i)])), 0,
                               shm_object::mode::open);
    auto* pb = static_cast<std::byte*>(p.page_object.data());
    auto* ph = reinterpret_cast<page_header*>(pb);
    ONESIDE_CHECK(
        std::atomic_ref<std::uint64_t>(ph->magic).load(std::memory_order_acquire) == page_magic &&
            ph->nranks == static_cast<std::uint32_t>(count_),
        error_class::intern, {.call = "runtime"},
        "the rank page of rank " + std::to_string(job_ranks_[static_cast<std::size_t>(i)]) +
            " does not match this job");
    const page_layout pl = page_layout::of(count_, ph->am_slots, ph->am_slot_bytes);
    p.page = page_view{ph, reinterpret_cast<padded_u64*>(pb + pl.applied_offset),
                       reinterpret_cast<reply_slot*>(pb + pl.replies_offset), pb + pl.slots_offset};
    p.pid = static_cast<pid_t>(ph->pid);
  }
  boot_.barrier();  // every peer mapped every rank page: the names can go
  own_page_object_.unlink();
  // The table of exposed memory: every rank of the node, this one included, by its page's
  // table version.
  init_slots(size_);
  for (int i = 0; i < count_; ++i) {
    view_of(job_ranks_[static_cast<std::size_t>(i)]).version =
        &peer_at(i).page.header->table_version;
  }

  if (opts_.agent_thread) agent_ = std::thread([this] { agent_main(); });
}

shm::~shm() {
  stop_agent();
  release_all();
  liveness_.leave();
}

void shm::close() {
  if (closed_.load(std::memory_order_acquire)) return;
  flush_all();
  boot_.barrier();  // nobody sends to this rank any more
  stop_agent();
  drain();  // poll mode: messages that arrived before the barrier
  closed_.store(true, std::memory_order_release);
  release_all();
  liveness_.leave();
}

void shm::abandon() noexcept {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  stop_agent();
  release_all();
  liveness_.leave();
}

void shm::check_open(std::string_view call) const {
  if (closed_.load(std::memory_order_relaxed)) [[unlikely]] {
    raise(error_class::not_open, {.call = call}, "the transport of a closed runtime was used");
  }
}

int shm::checked_index(rank_t r, std::string_view call) const {
  const int i = index_of(r);
  if (i < 0) [[unlikely]] {
    raise(error_class::rank, {.call = call, .target = r},
          r < 0 || r >= size_
              ? "rank " + std::to_string(r) + " is not in [0, " + std::to_string(size_) + ")"
              : "rank " + std::to_string(r) + " is not on this node");
  }
  check_open(call);
  return i;
}

}  // namespace oneside::transport
