// rpc() and rpc_ff(): run a function on another rank (UPC++'s rpc and rpc_ff).
//
//   oneside::future<int> f = oneside::rpc(1, [](int x) { return x + 1; }, 41);
//   oneside::rpc_ff(2, &log_event, std::string("started"));
//
// `fn` is a function pointer or a captureless lambda (non-generic: its parameter types decide
// how arguments travel). Ranks may load code at different addresses (PIE, ASLR, shared
// libraries): a function is named by the loaded object that holds it and its offset there, so
// it must live in the executable or a shared library every rank loaded from the same path.
//
// Arguments are serialized at the call (serialization.hpp), converted first to the parameter's
// type (an int literal for a long parameter); the caller may reuse them once rpc returns.
// Parameter types and what the body receives:
// - a serializable type, by value or by (const or non-const) reference: a copy made at the
//   target, which lives until the body returns;
// - std::span<const T> (T trivially copyable): the caller passes anything that converts to it
//   (vector, array, span); the body gets a view into the received message, valid until it
//   returns. Take std::vector<T> instead to keep the elements (same bytes on the wire, so a
//   span may be passed for a vector parameter too);
// - dist_object<T>& : the caller passes a dist_object<T>; the body gets the target's own
//   instance of it (UPC++'s dist_object argument).
// The result (fn's return type, decayed; void gives future<>) is serialized back the same way.
//
// Execution: the target's agent (or, with ONESIDE_AGENT=poll, a wait or progress() at the
// target) takes the message and queues the call on the target rank's task arena; the body runs
// there as a task and may block: waits inside it suspend the task (so a body may itself call
// rpc(...).wait(), at any arena size). The reply comes back as a message; the caller's future
// becomes ready from the caller's agent, and continuations attached to it run at the caller's
// next wait or progress() (never on the agent). The result is deserialized on the agent, so a
// user type's deserialize must not block.
// Ordering: none between distinct rpcs, even from one rank to one target (they run as
// concurrent tasks). An rpc issued after another's future is ready starts after that one
// returned.
// Completion of rpc_ff: oneside::quiet() (communication.hpp) returns once every rpc_ff this
// rank issued before it, directly or through an aggregator (quiet() flushes those), has run
// at its target (its body returned), so quiet() then barrier() on every rank makes every
// body's effects visible everywhere. Calls that bodies issue are issued by the rank the body
// runs on: its quiet() covers them, not the original caller's; so one quiet()+barrier() round
// covers the calls issued before it, a second round the calls their bodies issued, and so on
// (a chain of k nested levels takes k rounds). A quiet() also waits for rpc_ff other threads
// of its rank issue while it waits (a count cannot tell older calls from newer ones), so it
// returns only once this rank stopped issuing for a moment. How: the target counts the calls
// it ran per source and acknowledges the count when a source's quiet() asks (one message
// each way per target with calls outstanding); no message is sent for calls no quiet() waits
// for, and quiet() costs one load when nothing is outstanding.
// Size: a message larger than the transport's active-message payload travels by rendezvous
// (the sender keeps the bytes in its global heap and the receiver fetches and frees them), so
// arguments and results of any size are accepted.
// Errors: rank (rank outside the world), raised at the call, nothing sent; a serialize() that
// throws, at the call, nothing sent; fn throwing on the target: the future fails with
// error(remote) whose message names rpc, the target and the original what(); wait() rethrows
// it. rpc_ff whose fn throws: the target prints the message (naming rpc_ff, the source and
// what()) and aborts, which ends the job (a fire-and-forget failure has nobody to report to).
// Wait for every rpc before the runtime closes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/future/future.hpp>
#include <oneside/pgas/future/state.hpp>
#include <oneside/pgas/serialization.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

template <class T>
class dist_object;

namespace pgas::detail {

// Code as rpc names it between processes: a hash of the loaded object's name (the executable
// is "") and the offset in it. Zero for a lambda, which its invoker names.
struct code_id {
  std::uint64_t object = 0;
  std::uint64_t offset = 0;
};
// What a call runs: its invoker and, for a function pointer, the function (an aggregator's
// run of calls to one function carries it once, rpc_wire.hpp).
struct rpc_ff_code {
  code_id invoker;
  code_id fn;
};
using code_ptr = void (*)();
// The name of `fn` (cached). error(arg) when no loaded object holds it.
code_id code_id_of(code_ptr fn);

// What the target runs: reads the arguments from `args`, calls the function (`fn` for a
// function pointer, the lambda type otherwise), appends the serialized result to *result
// (none for rpc_ff).
using invoker_ptr = void (*)(code_ptr fn, std::span<const std::byte> args,
                             std::vector<std::byte>* result);

inline constexpr std::size_t rpc_header_bytes = 48;  // before the arguments
enum class rpc_kind : std::uint8_t { call = 1, fire_and_forget = 2 };

// What a message begins with (its arguments, or their rendezvous, follow).
struct rpc_header {
  std::uint32_t bytes;  // the whole message, header included
  std::uint8_t kind;    // rpc_kind
  std::uint8_t flags;   // rpc.cpp: 1 = the arguments are parked (a rendezvous follows)
  std::uint16_t reserved;
  std::uint64_t cookie;  // call: the caller's pending_call
  code_id invoker;
  code_id fn;
};

// Writes the header of the message begun at out[at], which ends at out.size().
inline void write_rpc_header(std::vector<std::byte>& out, std::size_t at, rpc_kind kind,
                             std::uint64_t cookie, code_id invoker, code_id fn,
                             std::uint8_t flags) noexcept {
  const rpc_header h{static_cast<std::uint32_t>(out.size() - at),
                     static_cast<std::uint8_t>(kind),
                     flags,
                     0,
                     cookie,
                     invoker,
                     fn};
  std::memcpy(out.data() + at, &h, sizeof h);
}

// A caller's rpc waiting for its reply (owned by the message until the reply arrives).
class pending_call {
 public:
  pending_call() = default;
  pending_call(const pending_call&) = delete;
  pending_call& operator=(const pending_call&) = delete;
  virtual ~pending_call() = default;
  // Readies the future with the serialized result, or its deserialization's exception.
  virtual void deliver(std::span<const std::byte> result) noexcept = 0;
  virtual void fail(std::exception_ptr e) noexcept = 0;
};

template <class R>
class pending_call_of final : public pending_call {
 public:
  explicit pending_call_of(std::shared_ptr<state<R>> s) noexcept : state_(std::move(s)) {}
  void deliver(std::span<const std::byte> result) noexcept override {
    if constexpr (!std::is_void_v<R>) {
      try {
        serial_reader r(result);
        state_->emplace(r.template read<R>());
      } catch (...) {
        state_->store_exception(std::current_exception());
      }
    }
    state_->publish();
  }
  void fail(std::exception_ptr e) noexcept override {
    state_->store_exception(std::move(e));
    state_->publish();
  }

 private:
  std::shared_ptr<state<R>> state_;
};

// error(rank) naming `call` for a rank outside the world; error(not_open) without a runtime.
void check_rpc_target(rank_t rank, const char* call);
// Fills the header of the message begun at out[at] (its arguments follow) and, when the
// message exceeds one active message, moves the arguments to this rank's global heap and
// leaves a rendezvous in their place.
void finish_rpc_message(std::vector<std::byte>& out, std::size_t at, rpc_kind kind,
                        std::uint64_t cookie, code_id invoker, code_id fn);
// Sends a finished message; for a call, `call` is owned by the message once sent.
void send_rpc(rank_t rank, std::span<const std::byte> message, std::unique_ptr<pending_call> call);
// The target's dist_object named `id` (dist_object.hpp); error(arg) when there is none.
void* find_dist_object(std::uint64_t id);

template <class T>
struct is_dist_object : std::false_type {};
template <class T>
struct is_dist_object<dist_object<T>> : std::true_type {};

template <class T>
struct const_span_of {};
template <class T>
struct const_span_of<std::span<const T>> {
  using element = T;
};

// Whether an argument of type A travels as a sequence for a std::vector<T> parameter (same
// bytes as the vector, without copying A into one).
template <class V, class A>
struct vector_from_span : std::false_type {};
template <class T, class Alloc, class A>
struct vector_from_span<std::vector<T, Alloc>, A>
    : std::bool_constant<bitwise_serializable<T> &&
                         std::is_convertible_v<A&&, std::span<const T>>> {};

// How a parameter of type P travels: read() makes what the body is given, pass() gives it.
template <class P>
struct param {
  using value = std::remove_cvref_t<P>;
  static_assert(serializable<value>,
                "rpc: a parameter type must be serializable, a std::span<const T> or a "
                "dist_object<T>& (see serialization.hpp)");
  using storage = value;
  // The bytes every argument takes on the wire when that does not depend on its value (a
  // bitwise value), else 0 with `fixed` false.
  static constexpr bool fixed = bitwise_serializable<value>;
  static constexpr std::size_t fixed_bytes = fixed ? sizeof(value) : 0;
  static storage read(serial_reader& r) { return r.read<value>(); }
  static decltype(auto) pass(storage& s) {
    if constexpr (std::is_lvalue_reference_v<P>) {
      return static_cast<P>(s);
    } else {
      return std::move(s);
    }
  }
  template <class A>
  static void write(serial_writer& w, A&& a) {
    if constexpr (std::is_same_v<std::remove_cvref_t<A>, value>) {
      w.write(a);
    } else if constexpr (vector_from_span<value, A>::value) {
      w.write_sequence(std::span<const typename value::value_type>(a));  // no copy
    } else {
      static_assert(std::is_constructible_v<value, A&&>,
                    "rpc: an argument does not convert to its parameter's type");
      w.write(value(std::forward<A>(a)));
    }
  }
  // A fixed-size argument's bytes, as write() gives them, stored at out.
  template <class A>
  static void write_fixed(std::byte* out, A&& a) {
    if constexpr (std::is_same_v<std::remove_cvref_t<A>, value>) {
      std::memcpy(out, &a, sizeof(value));
    } else {
      static_assert(std::is_constructible_v<value, A&&>,
                    "rpc: an argument does not convert to its parameter's type");
      const value v(std::forward<A>(a));
      std::memcpy(out, &v, sizeof(value));
    }
  }
};
template <class T>
struct param<std::span<const T>> {
  static_assert(bitwise_serializable<T> && alignof(T) <= 16,
                "rpc: a span parameter must be a std::span<const T> of trivially copyable T");
  using storage = std::span<const T>;
  static constexpr bool fixed = false;
  static constexpr std::size_t fixed_bytes = 0;
  static storage read(serial_reader& r) { return r.read_view<T>(); }
  static storage pass(storage& s) { return s; }
  template <class A>
  static void write(serial_writer& w, A&& a) {
    static_assert(std::is_convertible_v<A&&, std::span<const T>>,
                  "rpc: an argument does not convert to its std::span<const T> parameter");
    w.write_sequence(std::span<const T>(a));
  }
};
template <class T>
struct param<dist_object<T>&> {
  using storage = dist_object<T>*;
  static constexpr bool fixed = true;
  static constexpr std::size_t fixed_bytes = sizeof(std::uint64_t);
  static storage read(serial_reader& r) {
    return static_cast<dist_object<T>*>(find_dist_object(r.read<std::uint64_t>()));
  }
  static dist_object<T>& pass(storage& s) { return *s; }
  template <class A>
  static void write(serial_writer& w, A&& a) {
    static_assert(std::is_same_v<std::remove_cvref_t<A>, dist_object<T>>,
                  "rpc: a dist_object<T>& parameter takes a dist_object<T> argument");
    w.write(a.id());
  }
  template <class A>
  static void write_fixed(std::byte* out, A&& a) {
    static_assert(std::is_same_v<std::remove_cvref_t<A>, dist_object<T>>,
                  "rpc: a dist_object<T>& parameter takes a dist_object<T> argument");
    const std::uint64_t id = a.id();
    std::memcpy(out, &id, sizeof id);
  }
};

// A function pointer type's parts.
template <class F>
struct fn_traits;
template <class R, class... P>
struct fn_traits<R (*)(P...)> {
  using result = R;
  using params = std::tuple<P...>;
  static constexpr std::size_t arity = sizeof...(P);
};
template <class R, class... P>
struct fn_traits<R (*)(P...) noexcept> : fn_traits<R (*)(P...)> {};

// What rpc takes as fn: a function pointer, or a captureless non-generic lambda.
template <class F>
concept captureless_lambda = std::is_class_v<F> && std::is_empty_v<F> &&
    std::is_default_constructible_v<F> && requires(F& f) {
  requires std::is_pointer_v<decltype(+f)>;
};
template <class F>
concept rpc_function =
    (std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>) || captureless_lambda<F>;
template <class F>
using fn_pointer_t = std::decay_t<decltype(+std::declval<F&>())>;
template <class F>
using rpc_result_t = std::remove_cvref_t<typename fn_traits<fn_pointer_t<F>>::result>;

template <class F, class... A>
concept rpc_callable = rpc_function<F> && fn_traits<fn_pointer_t<F>>::arity == sizeof...(A);

template <class F, class... P>
void invoke_rpc(code_ptr fn, std::span<const std::byte> args, std::vector<std::byte>* result) {
  using Ptr = fn_pointer_t<F>;
  using R = rpc_result_t<F>;
  Ptr f;
  if constexpr (std::is_class_v<F>) {
    f = +F{};
  } else {
    f = reinterpret_cast<Ptr>(fn);
  }
  serial_reader r(args);
  // Braces: the arguments are read left to right.
  std::tuple<typename param<P>::storage...> stored{param<P>::read(r)...};
  std::apply(
      [&](auto&... s) {
        if constexpr (std::is_void_v<R>) {
          f(param<P>::pass(s)...);
        } else {
          const auto& v = f(param<P>::pass(s)...);
          if (result != nullptr) serial_writer(*result).write(static_cast<const R&>(v));
        }
      },
      stored);
}

template <class F, class Tuple>
struct invoker_of;
template <class F, class... P>
struct invoker_of<F, std::tuple<P...>> {
  static constexpr invoker_ptr fn = &invoke_rpc<F, P...>;
  template <class... A>
  static void write(serial_writer& w, A&&... a) {
    (param<P>::write(w, std::forward<A>(a)), ...);
  }
  // Whether every call's arguments take the same bytes (each parameter a bitwise value or a
  // dist_object&), and how many: such arguments are written by write_fixed, back to back as
  // write() would write them.
  static constexpr bool fixed = (param<P>::fixed && ...);
  static constexpr std::size_t fixed_bytes = (std::size_t{0} + ... + param<P>::fixed_bytes);
  template <class... A>
  static void write_fixed(std::byte* out, A&&... a) {
    std::size_t at = 0;
    ((param<P>::write_fixed(out + at, std::forward<A>(a)), at += param<P>::fixed_bytes), ...);
  }
};

// The name of F's invoker, found once per F.
template <class F>
code_id invoker_id() {
  using I = invoker_of<F, typename fn_traits<fn_pointer_t<F>>::params>;
  static const code_id id = code_id_of(reinterpret_cast<code_ptr>(I::fn));
  return id;
}

// The name of function pointer fn, remembered per thread for the last one of its type.
template <class F>
code_id function_id(F fn) {
  thread_local F last = nullptr;
  thread_local code_id id{};
  if (fn != last) {
    id = code_id_of(reinterpret_cast<code_ptr>(fn));
    last = fn;
  }
  return id;
}

// Appends the message that calls fn(args...) at a target to `out` (see rpc_kind); with
// `fit`, one larger than an active message leaves its arguments parked (finish_rpc_message),
// else the caller makes it fit (an aggregator parks what exceeds its buffer).
template <bool fit = true, class Fn, class... A>
void encode_rpc(std::vector<std::byte>& out, rpc_kind kind, std::uint64_t cookie, Fn&& fn,
                A&&... args) {
  using F = std::decay_t<Fn>;
  using I = invoker_of<F, typename fn_traits<fn_pointer_t<F>>::params>;
  static_assert(std::is_void_v<rpc_result_t<F>> || serializable<rpc_result_t<F>>,
                "rpc: the function's result must be void or serializable");
  code_id fn_id{};
  if constexpr (!std::is_class_v<F>) fn_id = function_id(fn);
  const code_id inv = invoker_id<F>();
  const std::size_t at = out.size();
  out.resize(at + rpc_header_bytes);
  try {
    serial_writer w(out);
    I::write(w, std::forward<A>(args)...);
  } catch (...) {
    out.resize(at);
    throw;
  }
  if constexpr (fit) {
    finish_rpc_message(out, at, kind, cookie, inv, fn_id);
  } else {
    write_rpc_header(out, at, kind, cookie, inv, fn_id, 0);
  }
}

// Appends the bytes rpc_ff(rank, fn, args...) sends (for aggregators, which run them at the
// target, rpc_wire.hpp). Arguments beyond one active message leave a rendezvous in this rank's
// global heap, which the execution frees; with fit = false they stay in place, whatever the
// size (the caller parks them, park_rpc_arguments, when they do not fit where it sends them).
template <bool fit = true, class Fn, class... A>
requires rpc_callable<std::decay_t<Fn>, A...>
void encode_rpc_ff(std::vector<std::byte>& out, Fn&& fn, A&&... args) {
  encode_rpc<fit>(out, rpc_kind::fire_and_forget, 0, std::forward<Fn>(fn),
                  std::forward<A>(args)...);
}

}  // namespace pgas::detail

// Runs fn(args...) on `rank` (see the file comment) and returns a future of its result.
template <class Fn, class... A>
requires pgas::detail::rpc_callable<std::decay_t<Fn>, A...>
    future<pgas::detail::rpc_result_t<std::decay_t<Fn>>> rpc(rank_t rank, Fn&& fn, A&&... args) {
  using R = pgas::detail::rpc_result_t<std::decay_t<Fn>>;
  pgas::detail::check_rpc_target(rank, "rpc");
  auto s = std::make_shared<pgas::detail::state<R>>();
  auto call = std::make_unique<pgas::detail::pending_call_of<R>>(s);
  std::vector<std::byte> message;
  pgas::detail::encode_rpc(
      message, pgas::detail::rpc_kind::call,
      reinterpret_cast<std::uintptr_t>(static_cast<pgas::detail::pending_call*>(call.get())),
      std::forward<Fn>(fn), std::forward<A>(args)...);
  pgas::detail::send_rpc(rank, message, std::move(call));
  return pgas::detail::future_access::make<R>(std::move(s));
}

// Runs fn(args...) on `rank` without a reply (see the file comment).
template <class Fn, class... A>
requires pgas::detail::rpc_callable<std::decay_t<Fn>, A...>
void rpc_ff(rank_t rank, Fn&& fn, A&&... args) {
  pgas::detail::check_rpc_target(rank, "rpc_ff");
  std::vector<std::byte> message;
  pgas::detail::encode_rpc_ff(message, std::forward<Fn>(fn), std::forward<A>(args)...);
  pgas::detail::send_rpc(rank, message, nullptr);
}

}  // namespace oneside
