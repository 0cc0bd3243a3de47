// rpc and rpc_ff (rpc.hpp): the messages, their execution at the target and the replies.
//
// A message is a header (what to run, the caller's pending call) and the serialized
// arguments; one that exceeds an active message leaves its arguments in the sender's global
// heap and carries their place instead (a rendezvous), which the receiver fetches and frees.
// The target's agent (or a poll) only copies the message and queues it on the rank's task
// arena: the body is user code that may wait, which an agent must never do (the peers'
// agents may be waiting for it). The task runs the body and sends the reply, so no agent ever
// sends. The caller's agent takes the reply and readies the future inside a hand-off frame
// (continuations run at the caller's next progress, not on the agent); a reply by rendezvous
// is fetched by a task of the caller's arena.
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
#include <utility>
#include <vector>

#include <oneside/pgas/async.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/wait.hpp>

#include "context/pgas_context.hpp"
#include "future/deferred.hpp"
#include "rpc/code_address.hpp"
#include "rpc/rpc_wire.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::raise;

static_assert(sizeof(rpc_header) == rpc_header_bytes);

constexpr std::uint8_t flag_rendezvous = 1;

// Bytes left in the sender's global heap for the receiver to fetch and free.
struct rendezvous {
  std::uint64_t address;
  std::uint64_t bytes;
  std::int64_t owner;
};

enum class reply_status : std::uint8_t { value = 1, failed = 2 };
struct reply_header {
  std::uint64_t cookie;
  std::uint32_t bytes;
  std::uint8_t status;  // reply_status
  std::uint8_t flags;
  std::uint16_t reserved;
};
constexpr std::size_t reply_header_bytes = sizeof(reply_header);

void take_message(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_reply(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_query(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_ack(transport::backend& t, rank_t source, std::span<const std::byte> payload);

// Registered when the library loads, on every rank alike (ids are hashes of the names).
const transport::am_handler_id message_handler =
    transport::register_am_handler("oneside.rpc.message", &take_message);
const transport::am_handler_id reply_handler =
    transport::register_am_handler("oneside.rpc.reply", &take_reply);
const transport::am_handler_id query_handler =
    transport::register_am_handler("oneside.rpc.ff_query", &take_query);
const transport::am_handler_id ack_handler =
    transport::register_am_handler("oneside.rpc.ff_ack", &take_ack);

template <class T>
T load(std::span<const std::byte> bytes) {
  T v;
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

// Moves `bytes` to this rank's global heap.
rendezvous park(std::span<const std::byte> bytes) {
  const global_ptr<std::byte> p = allocate<std::byte>(bytes.size(), 16);
  std::memcpy(p.local(), bytes.data(), bytes.size());
  return {p.address(), bytes.size(), p.where()};
}

// Fetches and frees parked bytes (waits: in a task only).
std::vector<std::byte> fetch(const rendezvous& rv) {
  std::vector<std::byte> out(static_cast<std::size_t>(rv.bytes));
  const global_ptr<std::byte> p(static_cast<rank_t>(rv.owner),
                                static_cast<std::uintptr_t>(rv.address));
  rget(global_ptr<const std::byte>(p), std::span<std::byte>(out)).wait();
  deallocate(p);
  return out;
}

// Turns the part of `out` after `head` bytes from `at` into a rendezvous when the whole is
// larger than one active message. Returns the flags to set.
std::uint8_t fit(std::vector<std::byte>& out, std::size_t at, std::size_t head) {
  const std::size_t limit = get_context("rpc").transport().caps().max_am_payload;
  if (out.size() - at <= limit) return 0;
  const rendezvous rv = park(std::span<const std::byte>(out).subspan(at + head));
  out.resize(at + head + sizeof rv);
  std::memcpy(out.data() + at + head, &rv, sizeof rv);
  return flag_rendezvous;
}

// Frees what a message that was not sent parked.
void unpark(std::span<const std::byte> message, std::size_t head, std::uint8_t flags) noexcept {
  if ((flags & flag_rendezvous) == 0) return;
  const auto rv = load<rendezvous>(message.subspan(head));
  try {
    deallocate(global_ptr<std::byte>(static_cast<rank_t>(rv.owner),
                                     static_cast<std::uintptr_t>(rv.address)));
  } catch (...) {
    // The heap is gone with the runtime.
  }
}

// The header of a message, checked.
rpc_header parse(std::span<const std::byte> message, const char* call) {
  if (message.size() < sizeof(rpc_header)) {
    raise(error_class::arg, {.call = call, .bytes = message.size()},
          "shorter than an rpc message's header");
  }
  const auto h = load<rpc_header>(message);
  const bool rendezvous_sized =
      (h.flags & flag_rendezvous) == 0 || message.size() == sizeof(rpc_header) + sizeof(rendezvous);
  if (h.bytes != message.size() || !rendezvous_sized ||
      (h.kind != static_cast<std::uint8_t>(rpc_kind::call) &&
       h.kind != static_cast<std::uint8_t>(rpc_kind::fire_and_forget))) {
    raise(error_class::arg, {.call = call, .bytes = message.size()}, "not an rpc message");
  }
  return h;
}

void send_reply(rank_t to, std::uint64_t cookie, reply_status status,
                std::vector<std::byte>& reply) {
  reply_header h{cookie, 0, static_cast<std::uint8_t>(status), 0, 0};
  h.flags = fit(reply, 0, reply_header_bytes);
  h.bytes = static_cast<std::uint32_t>(reply.size());
  std::memcpy(reply.data(), &h, sizeof h);
  try {
    get_context("rpc").transport().am_send(to, reply_handler, reply);
  } catch (...) {
    unpark(reply, reply_header_bytes, h.flags);
    throw;
  }
}

[[noreturn]] void die(rank_t source, std::string_view call, std::string_view what) {
  pgas_context* s = get_context_if_open();
  std::fprintf(stderr, "oneside: rank %d: %.*s from rank %d threw: %.*s\n",
               s != nullptr ? s->rank() : -1, static_cast<int>(call.size()), call.data(), source,
               static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

// ---- quiet()'s count of rpc_ff -------------------------------------------------------------
//
// The origin counts the calls it issues per target (count_rpc_ff_issued); the target counts
// the calls of each source it ran. quiet() sends each target it has calls outstanding at one
// query carrying the issued count; the target acknowledges (one message carrying its count of
// that source's calls run) as soon as the count reaches what was asked: at once if it did, else
// from the task that runs the call reaching it. Both sides check the other's count after
// writing their own (sequentially consistent), so one of them sees the request satisfied; a
// compare-exchange on the count last acknowledged keeps it to one acknowledgement per query.
// Acknowledgements are sent by tasks (an agent never sends).

// Acknowledges to `source` the calls run here when that satisfies its request.
void ack_if_asked(rank_t source) {
  pgas_context& s = get_context("rpc_ff");
  rpc_ff_ledger& l = s.rpc_ff();
  const auto i = static_cast<std::size_t>(source);
  const std::uint64_t asked = l.requested[i].load();
  const std::uint64_t ran = l.executed[i].load();
  if (ran < asked) return;
  std::uint64_t sent = l.ack_sent[i].load();
  do {
    if (sent >= asked) return;  // acknowledged already (by a concurrent task)
  } while (!l.ack_sent[i].compare_exchange_weak(sent, ran));
  s.transport().am_send(source, ack_handler, std::as_bytes(std::span(&ran, 1)));
}

// After `count` calls of `source` ran (in a task).
void count_run(rank_t source, std::uint64_t count) {
  pgas_context* s = get_context_if_open();
  if (s == nullptr) return;
  rpc_ff_ledger& l = s->rpc_ff();
  const auto i = static_cast<std::size_t>(source);
  const std::uint64_t before = l.executed[i].fetch_add(count);
  const std::uint64_t asked = l.requested[i].load();
  if (asked > before && asked <= before + count) {
    try {
      ack_if_asked(source);
    } catch (const std::exception& e) {
      die(source, "acknowledging rpc_ff", e.what());  // its quiet() would wait forever
    }
  }
}

// The target's agent (or a poll): a source's quiet() asks to hear when `wanted` of its calls ran.
void take_query(transport::backend&, rank_t source, std::span<const std::byte> payload) {
  const auto wanted = load<std::uint64_t>(payload);
  pgas_context& s = get_context("rpc_ff");
  rpc_ff_ledger& l = s.rpc_ff();
  const auto i = static_cast<std::size_t>(source);
  std::uint64_t asked = l.requested[i].load();
  while (asked < wanted && !l.requested[i].compare_exchange_weak(asked, wanted)) {
  }
  if (l.executed[i].load() < wanted) return;  // the task that runs the last one acknowledges
  async_arena().enqueue([source] {
    try {
      ack_if_asked(source);
    } catch (const std::exception& e) {
      die(source, "acknowledging rpc_ff", e.what());
    }
  });
}

// The origin's agent (or a poll): `target` ran this many of our calls.
void take_ack(transport::backend& t, rank_t target, std::span<const std::byte> payload) {
  const auto ran = load<std::uint64_t>(payload);
  rpc_ff_ledger& l = get_context("rpc_ff").rpc_ff();
  std::atomic<std::uint64_t>& acked = l.acked[static_cast<std::size_t>(target)];
  std::uint64_t old = acked.load();
  while (old < ran && !acked.compare_exchange_weak(old, ran)) {
  }
  if (old < ran) l.unacked.fetch_sub(static_cast<std::int64_t>(ran - old));
  oneside::detail::notify(t.local_doorbell());
}

bool same_code(const code_id& a, const code_id& b) noexcept {
  return a.object == b.object && a.offset == b.offset;
}

// Where the code (invoker, fn) is in this process, remembered in `last` (error(arg) when no
// loaded object matches).
void resolve(rpc_ff_code_cache& last, const code_id& invoker, const code_id& fn) {
  if (last.known && same_code(last.invoker, invoker) && same_code(last.fn, fn)) return;
  last.known = false;
  last.invoke = reinterpret_cast<invoker_ptr>(code_address_of(invoker));
  last.address = fn.object != 0 ? code_address_of(fn) : nullptr;
  last.invoker = invoker;
  last.fn = fn;
  last.known = true;
}

// The calls of a run (rpc_wire.hpp), one after another; the code resolved once.
void run_calls(std::uint64_t count, bool sized, std::span<const std::byte> bytes,
               rpc_ff_code_cache& last) {
  if (bytes.size() < rpc_ff_run_head_bytes) {
    raise(error_class::arg, {.call = "rpc_ff", .bytes = bytes.size()}, "a run of calls cut short");
  }
  const auto code = load<rpc_ff_code>(bytes);
  resolve(last, code.invoker, code.fn);
  const invoker_ptr invoke = last.invoke;
  const code_ptr address = last.address;
  const std::span<const std::byte> calls = bytes.subspan(rpc_ff_run_head_bytes);
  if (!sized) {
    if (count == 0 || calls.size() % count != 0) {
      raise(error_class::arg, {.call = "rpc_ff", .bytes = bytes.size()},
            "a run of " + std::to_string(count) + " calls of " + std::to_string(calls.size()) +
                " bytes");
    }
    const auto each = static_cast<std::size_t>(calls.size() / count);
    for (std::uint64_t i = 0; i < count; ++i) {  // by count: calls without arguments take 0
      invoke(address, calls.subspan(static_cast<std::size_t>(i) * each, each), nullptr);
    }
    return;
  }
  std::size_t at = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at > calls.size() || calls.size() - at < rpc_ff_call_length_bytes) {
      raise(error_class::arg, {.call = "rpc_ff", .bytes = bytes.size()}, "a call cut short");
    }
    const auto n = load<std::uint64_t>(calls.subspan(at));
    at += rpc_ff_call_length_bytes;
    if (n > calls.size() - at) {
      raise(error_class::arg, {.call = "rpc_ff", .bytes = bytes.size()}, "a call cut short");
    }
    invoke(address, calls.subspan(at, static_cast<std::size_t>(n)), nullptr);
    at += (static_cast<std::size_t>(n) + 7) & ~std::size_t{7};
  }
}

// One rpc_ff message, in a task of the target's arena; aborts the job when the body throws.
void run_ff(rank_t source, std::span<const std::byte> message, rpc_ff_code_cache& last) {
  try {
    const rpc_header h = parse(message, "rpc_ff");
    std::span<const std::byte> args = message.subspan(sizeof h);
    std::vector<std::byte> fetched;
    if ((h.flags & flag_rendezvous) != 0) [[unlikely]] {
      fetched = fetch(load<rendezvous>(args));
      args = fetched;
    }
    resolve(last, h.invoker, h.fn);
    last.invoke(last.address, args, nullptr);
  } catch (const std::exception& e) {
    die(source, "rpc_ff", e.what());
  } catch (...) {
    die(source, "rpc_ff", "an exception that is not a std::exception");
  }
}

// A task of the target's arena: runs one message.
void run_message(rank_t source, const std::vector<std::byte>& message) {
  const auto h = load<rpc_header>(message);
  const bool is_call = h.kind == static_cast<std::uint8_t>(rpc_kind::call);
  if (!is_call) {
    rpc_ff_code_cache code;
    run_ff(source, message, code);
    return;
  }
  std::optional<std::string> failure;
  std::vector<std::byte> reply(reply_header_bytes);
  try {
    std::span<const std::byte> args = std::span<const std::byte>(message).subspan(sizeof h);
    std::vector<std::byte> fetched;
    if ((h.flags & flag_rendezvous) != 0) {
      fetched = fetch(load<rendezvous>(args));
      args = fetched;
    }
    const auto invoke = reinterpret_cast<invoker_ptr>(code_address_of(h.invoker));
    const code_ptr fn = h.fn.object != 0 ? code_address_of(h.fn) : nullptr;
    invoke(fn, args, &reply);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an exception that is not a std::exception";
  }
  if (!failure) {
    try {
      send_reply(source, h.cookie, reply_status::value, reply);
      return;
    } catch (const oneside::error& e) {
      failure = std::string("its result could not be sent: ") + e.what();  // e.g. no_mem
    }
  }
  try {
    reply.resize(reply_header_bytes);
    reply.insert(reply.end(), reinterpret_cast<const std::byte*>(failure->data()),
                 reinterpret_cast<const std::byte*>(failure->data() + failure->size()));
    send_reply(source, h.cookie, reply_status::failed, reply);
  } catch (const std::exception& e) {
    die(source, "replying to an rpc", e.what());  // the caller would wait forever
  }
}

// Copies a message and queues it on this rank's arena (an agent may call this); a counted
// rpc_ff is counted as run for its source's quiet() once it returned.
void queue_message(rank_t source, std::span<const std::byte> message, bool counted) {
  auto copy = std::make_shared<const std::vector<std::byte>>(message.begin(), message.end());
  async_arena().enqueue([source, copy, counted] {
    run_message(source, *copy);
    if (counted) count_run(source, 1);
  });
}

void take_message(transport::backend&, rank_t source, std::span<const std::byte> payload) {
  try {
    const rpc_header h = parse(payload, "rpc");
    queue_message(source, payload, h.kind == static_cast<std::uint8_t>(rpc_kind::fire_and_forget));
  } catch (const std::exception& e) {
    die(source, "a message of rpc", e.what());
  }
}

void complete(pending_call& call, rank_t target, reply_status status,
              std::span<const std::byte> body) noexcept {
  if (status == reply_status::value) {
    call.deliver(body);
    return;
  }
  const std::string_view what(reinterpret_cast<const char*>(body.data()), body.size());
  call.fail(std::make_exception_ptr(error(
      error_class::remote,
      oneside::detail::format_error(
          error_class::remote, {.call = "rpc", .target = target},
          "the function threw on rank " + std::to_string(target) + ": " + std::string(what)))));
}

// The caller's agent (or a poll): readies the future, or has a task fetch a parked result.
void take_reply(transport::backend&, rank_t source, std::span<const std::byte> payload) {
  const auto h = load<reply_header>(payload);
  std::unique_ptr<pending_call> call(
      reinterpret_cast<pending_call*>(static_cast<std::uintptr_t>(h.cookie)));
  const auto status = static_cast<reply_status>(h.status);
  const std::span<const std::byte> body = payload.subspan(reply_header_bytes);
  if ((h.flags & flag_rendezvous) == 0) {
    const handing_off_frame frame;
    complete(*call, source, status, body);
    return;
  }
  std::shared_ptr<pending_call> shared(std::move(call));
  async_arena().enqueue([shared, source, status, rv = load<rendezvous>(body)] {
    std::vector<std::byte> bytes;
    try {
      bytes = fetch(rv);
    } catch (...) {
      shared->fail(std::current_exception());
      return;
    }
    complete(*shared, source, status, bytes);
  });
}

}  // namespace

void raise_short_buffer(std::size_t at, std::size_t bytes, std::size_t size) {
  raise(error_class::truncate, {.call = "deserialize", .bytes = bytes},
        "reading at byte " + std::to_string(at) + " would pass the end of the " +
            std::to_string(size) + "-byte buffer");
}

void check_rpc_target(rank_t rank, const char* call) {
  const pgas_context& s = get_context(call);
  if (rank < 0 || rank >= s.size()) [[unlikely]] {
    raise(error_class::rank, {.call = call, .target = rank},
          "rank " + std::to_string(rank) + " is not in the world (" + std::to_string(s.size()) +
              " ranks)");
  }
}

void finish_rpc_message(std::vector<std::byte>& out, std::size_t at, rpc_kind kind,
                        std::uint64_t cookie, code_id invoker, code_id fn) {
  const std::uint8_t flags = fit(out, at, sizeof(rpc_header));
  write_rpc_header(out, at, kind, cookie, invoker, fn, flags);
}

void send_rpc(rank_t rank, std::span<const std::byte> message, std::unique_ptr<pending_call> call) {
  pgas_context& s = get_context("rpc");
  const bool ff = call == nullptr;
  if (ff) count_rpc_ff_issued(rank, 1);
  try {
    s.transport().am_send(rank, message_handler, message);
  } catch (...) {
    if (ff) {
      s.rpc_ff().issued[static_cast<std::size_t>(rank)].fetch_sub(1);
      s.rpc_ff().unacked.fetch_sub(1);
    }
    unpark(message, sizeof(rpc_header), load<rpc_header>(message).flags);
    throw;
  }
  (void)call.release();  // the reply's handler owns it now
}

void count_rpc_ff_issued(rank_t target, std::uint64_t count) noexcept {
  rpc_ff_ledger& l = get_context_if_open()->rpc_ff();
  l.unacked.fetch_add(static_cast<std::int64_t>(count));
  l.issued[static_cast<std::size_t>(target)].fetch_add(count);
}

// Counts tell how many calls ran, not which: calls issued concurrently (by bodies running on
// this rank) may run before older ones. So a target is done only when its count of calls run
// reaches the count issued read after it: every call that ran was issued before, so then the
// two sets are the same, and every call issued before quiet() began is among them. While
// issuing goes on, each round asks again for the larger count.
void wait_rpc_ff(pgas_context& s) {
  rpc_ff_ledger& l = s.rpc_ff();
  transport::backend& t = s.transport();
  std::vector<std::pair<rank_t, std::uint64_t>> asked;
  for (rank_t r = 0; r < s.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    const std::uint64_t ran = l.acked[i].load();
    const std::uint64_t issued = l.issued[i].load();
    if (ran >= issued) continue;
    t.am_send(r, query_handler, std::as_bytes(std::span(&issued, 1)));
    asked.emplace_back(r, issued);
  }
  for (auto [r, want] : asked) {
    std::atomic<std::uint64_t>& acked = l.acked[static_cast<std::size_t>(r)];
    for (;;) {
      if (acked.load() < want) {
        const oneside::detail::wait_scope scope("quiet (rpc_ff to run)", r);
        oneside::detail::wait_until(t.local_doorbell(), [&] { return acked.load() >= want; });
      }
      const std::uint64_t ran = acked.load();
      const std::uint64_t issued = l.issued[static_cast<std::size_t>(r)].load();
      if (ran >= issued) break;
      want = issued;
      t.am_send(r, query_handler, std::as_bytes(std::span(&want, 1)));
    }
  }
}

static_assert(rpc_parked_message_bytes == sizeof(rpc_header) + sizeof(rendezvous));

void park_rpc_arguments(std::vector<std::byte>& message) {
  rpc_header h = parse(message, "park_rpc_arguments");
  if ((h.flags & flag_rendezvous) != 0) return;
  const rendezvous rv = park(std::span<const std::byte>(message).subspan(sizeof h));
  message.resize(sizeof h + sizeof rv);
  std::memcpy(message.data() + sizeof h, &rv, sizeof rv);
  h.flags |= flag_rendezvous;
  h.bytes = static_cast<std::uint32_t>(message.size());
  std::memcpy(message.data(), &h, sizeof h);
}

void discard_rpc_message(std::span<const std::byte> message) noexcept {
  if (message.size() < sizeof(rpc_header)) return;
  unpark(message, sizeof(rpc_header), load<rpc_header>(message).flags);
}

void execute_rpc_ff_message(rank_t source, std::span<const std::byte> message) {
  const rpc_header h = parse(message, "execute_rpc_ff_message");
  if (h.kind != static_cast<std::uint8_t>(rpc_kind::fire_and_forget)) {
    raise(error_class::arg, {.call = "execute_rpc_ff_message", .bytes = message.size()},
          "an rpc message that expects a reply is no rpc_ff message");
  }
  queue_message(source, message, false);
}

void run_rpc_ff_here(rank_t source, std::span<const std::byte> message,
                     rpc_ff_code_cache& cache) noexcept {
  run_ff(source, message, cache);
}

void run_rpc_ff_calls(rank_t source, std::uint64_t count, bool sized,
                      std::span<const std::byte> bytes, rpc_ff_code_cache& cache) noexcept {
  try {
    run_calls(count, sized, bytes, cache);
  } catch (const std::exception& e) {
    die(source, "rpc_ff", e.what());
  } catch (...) {
    die(source, "rpc_ff", "an exception that is not a std::exception");
  }
}

void count_rpc_ff_run(rank_t source, std::uint64_t count) {
  count_run(source, count);
}

}  // namespace oneside::pgas::detail
