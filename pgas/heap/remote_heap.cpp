// Allocation in another rank's heap and freeing another rank's block (heap.hpp: allocate_on,
// deallocate, deallocate_async), without any collective. The origin sends an active message
// to the owner; the owner's agent serves it from its heap and puts the reply (the block, or
// the error's class and message) into the origin's memory before its handler returns, which
// the transport delivers with the message's completion (shm: a direct or cross-memory write;
// MPI: inside the acknowledgement). The origin's future polls that completion. The agent
// sends no message of its own here, so it never waits for the full queue of a peer whose
// agent might be waiting for ours (many requests in flight both ways).
//
// A request whose block needs a new segment goes to the heap's own thread
// (global_heap::defer): growing asks the transport for a segment, which may wait for the
// network backend (an MPI attach), and an agent
// that waits for peers can deadlock with theirs (under MPI it cannot even progress its own
// acknowledgements). The handler then leaves the reply pending, and the heap's thread sends
// it later as an active message of its own (that thread may wait; the origin's agent, which
// takes the message, does not).
//
// Continuations of these futures run on the thread that polls them (wait, is_ready,
// progress), never on an agent, so one that waits for another remote call cannot stall the
// agent that must serve it.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <oneside/pgas/future.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/wait.hpp>

#include "context/pgas_context.hpp"
#include "runtime/check.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::raise;

enum class request_kind : std::uint32_t { allocate = 1, deallocate = 2 };
enum reply_status : std::uint64_t { reply_pending = 0, reply_done = 1, reply_failed = 2 };
constexpr std::size_t reply_message_max = 1024;  // longer messages are cut

// What the owner writes into the origin's memory (a prefix: the message's bytes only).
struct reply_block {
  std::uint64_t status;  // reply_status; a late reply stores it last (release)
  std::uint64_t address;
  std::uint32_t error_class;
  std::uint32_t message_bytes;
  char message[reply_message_max];

  std::size_t used_bytes() const noexcept { return offsetof(reply_block, message) + message_bytes; }
};

// Origin -> owner.
struct request_message {
  std::uint64_t reply;    // the origin's reply_block
  std::uint64_t address;  // deallocate: the block
  std::uint64_t bytes;    // allocate
  std::uint64_t align;    // allocate
  std::uint32_t kind;     // request_kind
  std::uint32_t reserved;
};

reply_block make_reply(std::uintptr_t address, const oneside::error* failure) noexcept {
  reply_block r{};
  r.status = failure != nullptr ? reply_failed : reply_done;
  r.address = address;
  r.error_class = failure != nullptr ? static_cast<std::uint32_t>(failure->error_class()) : 0;
  r.message_bytes = 0;
  if (failure != nullptr) {
    const std::string_view text = failure->what();
    r.message_bytes = static_cast<std::uint32_t>(std::min(text.size(), reply_message_max));
    std::memcpy(r.message, text.data(), r.message_bytes);
  }
  return r;
}

// Runs `fn`, which returns the address to reply with (nullopt: someone else replies later),
// and makes the reply, of an error it raised too.
template <class Fn>
std::optional<reply_block> reply_of(std::string_view call, Fn&& fn) noexcept {
  try {
    const std::optional<std::uintptr_t> address = fn();
    if (!address) return std::nullopt;
    return make_reply(*address, nullptr);
  } catch (const oneside::error& e) {
    return make_reply(0, &e);
  } catch (const std::exception& e) {
    const error wrapped(error_class::intern, oneside::detail::format_error(
                                                 error_class::intern, {.call = call}, e.what()));
    return make_reply(0, &wrapped);
  }
}

void serve_request(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_late_reply(transport::backend& t, rank_t source, std::span<const std::byte> payload);

// Registered when the library loads, on every rank alike (ids are hashes of the names).
const transport::am_handler_id request_handler =
    transport::register_am_handler("oneside.heap.request", &serve_request);
const transport::am_handler_id late_reply_handler =
    transport::register_am_handler("oneside.heap.late_reply", &take_late_reply);

// A job of the owner's heap thread: allocates, growing the heap, and sends the reply.
void allocate_late(pgas_context& s, rank_t origin, const request_message& m) noexcept {
  std::optional<reply_block> r = reply_of("allocate_on", [&] {
    return std::optional<std::uintptr_t>(
        reinterpret_cast<std::uintptr_t>(s.heap().allocate(m.bytes, m.align, "allocate_on")));
  });
  // The message cut to what one active message carries (ONESIDE_AM_SLOT_BYTES may be small).
  const std::size_t room = s.transport().caps().max_am_payload - sizeof m.reply;
  if (r->used_bytes() > room) {
    r->message_bytes = static_cast<std::uint32_t>(room - offsetof(reply_block, message));
  }
  std::vector<std::byte> bytes(sizeof m.reply + r->used_bytes());
  std::memcpy(bytes.data(), &m.reply, sizeof m.reply);
  std::memcpy(bytes.data() + sizeof m.reply, &*r, r->used_bytes());
  try {
    s.transport().am_send(origin, late_reply_handler, bytes);
  } catch (const std::exception& e) {
    // The transport is broken, as an agent whose handler failed would find it.
    std::fprintf(stderr, "oneside: rank %d: replying to allocate_on of rank %d failed: %s\n",
                 s.rank(), origin, e.what());
    std::abort();
  }
}

// The owner's agent (or, with ONESIDE_AGENT=poll, a wait of the owner's). Replies to every
// error rather than raising it, and waits for nothing but the heap's lock.
void serve_request(transport::backend& t, rank_t source, std::span<const std::byte> payload) {
  request_message m;
  std::memcpy(&m, payload.data(), sizeof m);
  const bool freeing = static_cast<request_kind>(m.kind) == request_kind::deallocate;
  const std::string_view call = freeing ? "deallocate" : "allocate_on";
  pgas_context* s = get_context_if_open();
  const std::optional<reply_block> r = reply_of(call, [&]() -> std::optional<std::uintptr_t> {
    if (s == nullptr) {
      // Only before the pgas layer is set up or after it is gone, when no origin may ask.
      raise(error_class::not_open, {.call = call}, "the owner's pgas layer is not open");
    }
    if (freeing) {
      s->heap().deallocate(reinterpret_cast<void*>(static_cast<std::uintptr_t>(m.address)));
      return 0;
    }
    if (void* p = s->heap().try_allocate(m.bytes, m.align)) {
      return reinterpret_cast<std::uintptr_t>(p);
    }
    // The heap must grow: not on the agent. The heap's thread replies.
    s->heap().defer([s, source, m] { allocate_late(*s, source, m); });
    return std::nullopt;
  });
  if (r) {
    t.put(source, static_cast<std::uintptr_t>(m.reply),
          std::as_bytes(std::span(&*r, 1)).first(r->used_bytes()));
  }
}

// The origin's agent: a late reply lands in its reply block, the status last.
void take_late_reply(transport::backend& t, rank_t, std::span<const std::byte> payload) {
  std::uint64_t where = 0;
  std::memcpy(&where, payload.data(), sizeof where);
  auto* reply = reinterpret_cast<reply_block*>(static_cast<std::uintptr_t>(where));
  const std::span<const std::byte> body = payload.subspan(sizeof where);
  std::uint64_t status = reply_pending;
  std::memcpy(&status, body.data(), sizeof status);
  std::memcpy(reinterpret_cast<std::byte*>(reply) + sizeof status, body.data() + sizeof status,
              body.size() - sizeof status);
  // The last touch: the poller may free the block as soon as it sees the status.
  std::atomic_ref<std::uint64_t>(reply->status).store(status, std::memory_order_release);
  oneside::detail::notify(t.local_doorbell());
}

[[noreturn]] void raise_bad_rank(rank_t r, int ranks, std::string_view call) {
  raise(error_class::rank, {.call = call, .target = r},
        "rank " + std::to_string(r) + " is not in the world (" + std::to_string(ranks) + " ranks)");
}

bool valid_alignment(std::size_t align) noexcept {
  return align != 0 && (align & (align - 1)) == 0 && align <= 4096;
}

}  // namespace

// A request in flight at the origin. The future's poller owns it, so it lives until its reply
// is complete (the registry of pending futures keeps the poller of a dropped future too).
struct heap_request {
  reply_block reply{};
  transport::completion sent;  // the request; complete once its handler returned
  bool handled = false;  // `sent` is complete, or there was no message (only the poller looks)
  rank_t owner = 0;

  // The owner's address once the reply is complete, its error (same class, same message)
  // raised then; nullopt before.
  std::optional<std::uintptr_t> poll() {
    if (!handled) {
      pgas_context* s = get_context_if_open();
      if (s == nullptr) {
        raise(error_class::not_open, {.call = "allocate_on"},
              "the runtime closed before the owner replied");
      }
      if (!s->transport().test(sent)) return std::nullopt;
      handled = true;
    }
    const std::uint64_t status =
        std::atomic_ref<std::uint64_t>(reply.status).load(std::memory_order_acquire);
    if (status == reply_pending) return std::nullopt;  // a late reply is on its way
    if (status == reply_failed) {
      throw error(static_cast<oneside::error_class>(reply.error_class),
                  std::string(reply.message,
                              std::min<std::size_t>(reply.message_bytes, reply_message_max)));
    }
    return static_cast<std::uintptr_t>(reply.address);
  }
};

namespace {

// Sends `m` for `req`, whose poller keeps it alive until its reply is complete.
void send_request(pgas_context& s, rank_t owner, request_message m, heap_request& req) {
  m.reply = reinterpret_cast<std::uintptr_t>(&req.reply);
  s.transport().am_send(owner, request_handler, std::as_bytes(std::span(&m, 1)), &req.sent);
}

// A request answered here and now: no message.
std::shared_ptr<heap_request> settled(rank_t owner, std::uintptr_t address,
                                      const oneside::error* failure) {
  auto req = std::make_shared<heap_request>();
  req->reply = make_reply(address, failure);
  req->handled = true;
  req->owner = owner;
  return req;
}

}  // namespace

std::optional<global_ptr<void>> heap_reply::poll() const {
  const std::optional<std::uintptr_t> at = request_->poll();
  if (!at) return std::nullopt;
  return global_ptr<void>(request_->owner, *at);
}

heap_reply heap_allocate_on(rank_t owner, std::size_t bytes, std::size_t align) {
  pgas_context& s = get_context("allocate_on");
  if (owner < 0 || owner >= s.size()) raise_bad_rank(owner, s.size(), "allocate_on");
  if (!valid_alignment(align)) {
    const error bad(
        error_class::arg,
        oneside::detail::format_error(
            error_class::arg, {.call = "allocate_on", .target = owner, .bytes = bytes},
            "alignment " + std::to_string(align) + " is not a power of two from 1 to 4096"));
    return heap_reply(settled(owner, 0, &bad));
  }
  if (owner == s.rank()) {
    try {
      void* p = s.heap().allocate(bytes, align, "allocate_on");
      return heap_reply(settled(owner, reinterpret_cast<std::uintptr_t>(p), nullptr));
    } catch (const oneside::error& e) {
      return heap_reply(settled(owner, 0, &e));
    }
  }
  auto req = std::make_shared<heap_request>();
  req->owner = owner;
  send_request(
      s, owner,
      request_message{0, 0, bytes, align, static_cast<std::uint32_t>(request_kind::allocate), 0},
      *req);
  return heap_reply(std::move(req));
}

future<> heap_deallocate_async(global_ptr<void> p) {
  if (p.is_null()) return make_future();
  pgas_context& s = get_context("deallocate");
  const rank_t owner = p.where();
  if (owner < 0 || owner >= s.size()) raise_bad_rank(owner, s.size(), "deallocate");
  if (owner == s.rank()) {
    try {
      s.heap().deallocate(reinterpret_cast<void*>(p.address()));
    } catch (const oneside::error&) {
      return make_exception_future<>(std::current_exception());
    }
    return make_future();
  }
  auto req = std::make_shared<heap_request>();
  req->owner = owner;
  send_request(s, owner,
               request_message{0, p.address(), 0, 0,
                               static_cast<std::uint32_t>(request_kind::deallocate), 0},
               *req);
  return make_pending_future([req]() -> bool { return req->poll().has_value(); });
}

}  // namespace oneside::pgas::detail
