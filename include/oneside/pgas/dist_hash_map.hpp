// dist_hash_map<K, V, Hash>: a hash map spread over the members of a team (UPC++'s
// distributed hash table example, Bale's and YGM's maps). Each key lives on one member, its
// owner, chosen by the key's hash; every member holds the entries it owns.
//
//   oneside::dist_hash_map<std::uint64_t, std::string> m;        // collective, over world()
//   m.insert(7, "seven");                                        // blocking
//   oneside::future<std::optional<std::string>> f = m.find_async(7);
//   oneside::aggregator agg;
//   for (std::uint64_t k : keys) m.insert_ff(agg, k, "x");       // buffered per owner
//   agg.flush();                   // (or oneside::quiet()) every insert_ff above is applied
//   oneside::barrier(oneside::world());   // ... on every rank, once all ranks flushed
//   m.for_each_local([](const std::uint64_t& k, std::string& v) { /* this rank's part */ });
//
// Operations and their three forms (the naming follows rpc/rpc_ff, put/rput):
//   blocking              future-returning            fire-and-forget through an aggregator
//   insert(k, v) -> bool  insert_async -> future<bool> insert_ff(agg, k, v)
//   insert_or_assign(k, v) -> bool (true: inserted; false: assigned), _async, _ff
//   erase(k) -> bool (true: there was an entry), _async, _ff
//   update(k, fn, args...) -> R, update_async -> future<R>, update_ff(agg, k, fn, args...)
//   find(k) -> std::optional<V>, find_async -> future<std::optional<V>> (no _ff: it reads)
// insert keeps an existing entry unchanged (std::unordered_map::insert); update runs
// fn(value, args...) at the owner on the key's entry, made first from V{} when the key is
// absent (operator[]), and gives fn's result (void: future<>).
//
// Paths: a key this rank owns is served at the call (a ready future); any other key by one
// rpc to its owner (rpc.hpp: the body runs as a task of the owner's arena), or, for _ff, by one
// record in the aggregator's buffer for the owner, applied there by the aggregator's handler
// in the owner's message progress (aggregator.hpp's send()).
// Completion: the blocking forms return once the owner applied the operation; a future is
// ready once it did. _ff gives none by itself: an _ff operation is applied once the
// aggregator that carried it was flushed (agg.flush(), oneside::quiet(), or its destructor)
// by the rank that issued it. To read the results of every rank's _ff operations: every rank
// calls agg.flush() (or quiet()), then barrier(team); after that barrier every rank sees all of
// them (find, size, for_each_local). A barrier alone ships nothing.
// Ordering: operations from one rank on one key are applied in issue order when each waits
// for the previous one (blocking forms, or waiting the future); _ff operations of one
// aggregator to one owner are applied in issue order. Nothing else is ordered (futures in
// flight together run as concurrent tasks at the owner).
//
// update's fn: a function pointer or a captureless non-generic lambda (rpc's rule: a function
// pointer must lie in the executable or a shared library every rank loaded), taking V& first
// and then parameters that follow rpc's rules (serializable values, references to them,
// std::span<const T>); args are serialized at the call. fn runs at the owner under the lock of
// the entry's shard: it must not wait, nor use this map. update_ff's fn runs in the owner's
// message progress, so it also must not use an aggregator.
//
// Keys and values: K and V serializable (serialization.hpp), V also default-constructible for
// update. Hash must give a key the same hash on every rank (std::hash of integers and strings
// does within one program); equal keys are those operator== says are.
//
// Local part and thread safety: each member holds its entries in `shards` std::unordered_maps,
// each behind its own mutex (chosen over a TBB concurrent map, which a public header cannot
// include (STYLE.md R1); measured against one: bench/micro/hash_map_bench.cpp). Every member
// function may be called from any thread, concurrently with the rpc bodies and records other
// ranks' calls run here.
//
// Errors (oneside::error; a rejected call changes nothing and sends nothing):
// - the runtime closed → not_open; a null team at construction → comm;
// - an _ff record larger than the aggregator's max_message_bytes() → arg (use the blocking or
//   future form, which has no size limit); a throwing serialize() → as thrown;
// - fn throwing at the owner: update's future fails with error(remote) naming the call, the
//   owner and the original what() (wait() / the blocking form rethrow it), also when this rank
//   is the owner; the entry keeps what fn changed before throwing, and a key fn's update
//   created is removed again. An _ff fn that throws prints the message and aborts the job, as
//   a throwing rpc_ff body does.
// - an operation reaching an owner whose map is destroyed already: error(remote) (blocking and
//   future forms), abort (_ff). Destroy a map only after every operation on it completed.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneside/pgas/aggregator.hpp>
#include <oneside/pgas/container/registry.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/pgas/serialization.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace pgas::detail {

// A std::optional<V> as rpc carries it (find's result).
template <class V>
struct maybe_value {
  std::optional<V> value;
  void serialize(serial_writer& w) const {
    w.write(static_cast<std::uint8_t>(value.has_value() ? 1 : 0));
    if (value.has_value()) w.write(*value);
  }
  static maybe_value deserialize(serial_reader& r) {
    maybe_value m;
    if (r.read<std::uint8_t>() != 0) m.value.emplace(r.read<V>());
    return m;
  }
};

// Spreads a hash's bits (splitmix64's finalizer): std::hash of an integer is the integer.
constexpr std::uint64_t mix_hash(std::uint64_t h) noexcept {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

enum class map_record : std::uint8_t { insert = 1, assign = 2, erase = 3, update = 4 };

// What dist_hash_map::update takes as fn with args: a function pointer or captureless lambda
// taking the value and then one parameter per argument.
template <class Fn, class... A>
concept map_update_fn = rpc_function<std::decay_t<Fn>> &&
                        fn_traits<fn_pointer_t<std::decay_t<Fn>>>::arity == sizeof...(A) + 1;

}  // namespace pgas::detail

template <class K, class V, class Hash = std::hash<K>>
class dist_hash_map {
  static_assert(serializable<K> && serializable<V>,
                "dist_hash_map<K, V>: K and V must be serializable (serialization.hpp)");

 public:
  using key_type = K;
  using mapped_type = V;
  using hasher = Hash;

  // Shards of each member's part (each a std::unordered_map behind a mutex).
  static constexpr std::size_t default_shards = 64;

  // Collective over `t` (every member constructs its maps on `t` in the same order). Errors:
  // comm (a null team), not_open.
  explicit dist_hash_map(const oneside::team& t = oneside::world(),
                         std::size_t shards = default_shards)
      : team_(t),
        shard_count_(shards == 0 ? 1 : shards),
        shards_(std::make_unique<shard[]>(shard_count_)) {
    id_ = pgas::detail::register_container(team_, this, &apply_record, "dist_hash_map");
    me_ = team_.rank();
    world_of_.resize(static_cast<std::size_t>(team_.size()));
    for (rank_t r = 0; r < team_.size(); ++r)
      world_of_[static_cast<std::size_t>(r)] = team_.to_world(r);
  }
  dist_hash_map(const dist_hash_map&) = delete;
  dist_hash_map& operator=(const dist_hash_map&) = delete;
  // Collective over the team: a barrier (so that no member's part goes while another may still
  // reach it: complete your operations, and flush aggregators carrying _ff ones, first), then
  // this member's part is freed. Local only when the scope is left by an exception.
  ~dist_hash_map() {
    try {
      if (std::uncaught_exceptions() <= uncaught_) barrier(team_);
    } catch (...) {
      // The runtime closed or a peer failed: nobody can reach this part any more.
    }
    pgas::detail::unregister_container(id_);
  }

  const oneside::team& team() const noexcept { return team_; }
  // The team rank that owns `key`.
  rank_t owner(const K& key) const {
    return static_cast<rank_t>(mixed(key) % static_cast<std::uint64_t>(world_of_.size()));
  }

  // ---- insert: true when the key was absent (then it maps to v); an entry stays unchanged.
  bool insert(const K& key, const V& value) { return insert_async(key, value).wait(); }
  future<bool> insert_async(const K& key, const V& value) {
    const rank_t o = check(key, "dist_hash_map::insert");
    if (o == me_) return make_future(insert_here(key, value));
    return rpc(world_of_[static_cast<std::size_t>(o)], &insert_body, id_, key, value);
  }
  void insert_ff(aggregator& agg, const K& key, const V& value) {
    send_record(agg, key, pgas::detail::map_record::insert, "dist_hash_map::insert_ff",
                [&](serial_writer& w) { w.write(value); });
  }

  // ---- insert_or_assign: true when the key was absent, false when its value was replaced.
  bool insert_or_assign(const K& key, const V& value) {
    return insert_or_assign_async(key, value).wait();
  }
  future<bool> insert_or_assign_async(const K& key, const V& value) {
    const rank_t o = check(key, "dist_hash_map::insert_or_assign");
    if (o == me_) return make_future(assign_here(key, value));
    return rpc(world_of_[static_cast<std::size_t>(o)], &assign_body, id_, key, value);
  }
  void insert_or_assign_ff(aggregator& agg, const K& key, const V& value) {
    send_record(agg, key, pgas::detail::map_record::assign, "dist_hash_map::insert_or_assign_ff",
                [&](serial_writer& w) { w.write(value); });
  }

  // ---- erase: true when there was an entry.
  bool erase(const K& key) { return erase_async(key).wait(); }
  future<bool> erase_async(const K& key) {
    const rank_t o = check(key, "dist_hash_map::erase");
    if (o == me_) return make_future(erase_here(key));
    return rpc(world_of_[static_cast<std::size_t>(o)], &erase_body, id_, key);
  }
  void erase_ff(aggregator& agg, const K& key) {
    send_record(agg, key, pgas::detail::map_record::erase, "dist_hash_map::erase_ff",
                [](serial_writer&) {});
  }

  // ---- find: a copy of the key's value, or nothing.
  std::optional<V> find(const K& key) const {
    const rank_t o = check(key, "dist_hash_map::find");
    if (o == me_) return find_here(key);
    return find_async(key).wait();
  }
  future<std::optional<V>> find_async(const K& key) const {
    const rank_t o = check(key, "dist_hash_map::find");
    if (o == me_) return make_future(find_here(key));
    return rpc(world_of_[static_cast<std::size_t>(o)], &find_body, id_, key)
        .then([](const pgas::detail::maybe_value<V>& m) { return m.value; });
  }

  // ---- update: fn(value, args...) at the owner (see the file comment); fn's result.
  template <class Fn, class... A>
  requires pgas::detail::map_update_fn<Fn, A...>
  auto update(const K& key, Fn&& fn, A&&... args) {
    return update_async(key, std::forward<Fn>(fn), std::forward<A>(args)...).wait();
  }
  template <class Fn, class... A>
  requires pgas::detail::map_update_fn<Fn, A...>
  auto update_async(const K& key, Fn&& fn, A&&... args) {
    using F = std::decay_t<Fn>;
    using U = updater<F, typename pgas::detail::fn_traits<pgas::detail::fn_pointer_t<F>>::params>;
    using R = typename U::result;
    constexpr const char* call = "dist_hash_map::update";
    const rank_t o = check(key, call);
    if (o == me_) {
      try {
        if constexpr (std::is_void_v<R>) {
          update_here(key, as_pointer(fn), std::forward<A>(args)...);
          return make_future();
        } else {
          return make_future(update_here(key, as_pointer(fn), std::forward<A>(args)...));
        }
      } catch (const std::exception& e) {
        return failed<R>(call, e.what());
      } catch (...) {
        return failed<R>(call, "an exception that is no std::exception");
      }
    }
    return rpc(world_of_[static_cast<std::size_t>(o)], &U::body, id_, key, code_of(fn),
               std::forward<A>(args)...);
  }
  template <class Fn, class... A>
  requires pgas::detail::map_update_fn<Fn, A...>
  void update_ff(aggregator& agg, const K& key, Fn&& fn, A&&... args) {
    using F = std::decay_t<Fn>;
    using U = updater<F, typename pgas::detail::fn_traits<pgas::detail::fn_pointer_t<F>>::params>;
    const pgas::detail::code_id run =
        pgas::detail::code_id_of(reinterpret_cast<pgas::detail::code_ptr>(&U::run_record));
    const pgas::detail::code_id user = code_of(fn);
    send_record(agg, key, pgas::detail::map_record::update, "dist_hash_map::update_ff",
                [&](serial_writer& w) {
                  w.write(run);
                  w.write(user);
                  U::write_args(w, std::forward<A>(args)...);
                });
  }

  // ---- sizes.
  // Collective over the team: the number of entries of every member (a sum, read at some
  // moment by each member; exact once no operation is in flight).
  std::size_t size() const {
    return static_cast<std::size_t>(
        allreduce(team_, static_cast<std::uint64_t>(local_size()), op::sum));
  }
  // The number of entries this member owns.
  std::size_t local_size() const noexcept { return local_size_.load(std::memory_order_relaxed); }

  // ---- local iteration: fn(const K&, V&) on every entry this member owns, shard by shard,
  // each shard under its lock (entries other calls insert or erase meanwhile in another shard
  // may be seen or not). fn must not use this map, nor wait (with ONESIDE_AGENT=poll a wait
  // applies incoming records, which take the shard's lock).
  template <class Fn>
  requires std::invocable<Fn&, const K&, V&>
  void for_each_local(Fn&& fn) {
    for (std::size_t s = 0; s < shard_count_; ++s) {
      const std::lock_guard lock(shards_[s].mutex);
      for (auto& [k, v] : shards_[s].map) fn(k, v);
    }
  }
  template <class Fn>
  requires std::invocable<Fn&, const K&, const V&>
  void for_each_local(Fn&& fn) const {
    for (std::size_t s = 0; s < shard_count_; ++s) {
      const std::lock_guard lock(shards_[s].mutex);
      for (const auto& [k, v] : shards_[s].map) fn(k, v);
    }
  }

 private:
  struct alignas(64) shard {
    mutable std::mutex mutex;
    std::unordered_map<K, V, Hash> map;
  };

  // The updater of a fn whose parameters are (V&, P...).
  template <class F, class Params>
  struct updater;
  template <class F, class First, class... P>
  struct updater<F, std::tuple<First, P...>> {
    static_assert(std::is_same_v<First, V&>,
                  "dist_hash_map::update: fn's first parameter must be V& (the entry's value)");
    using result = pgas::detail::rpc_result_t<F>;
    using ptr = pgas::detail::fn_pointer_t<F>;
    // rpc's body at the owner.
    // Names the call in what the caller's error(remote) carries.
    static result body(std::uint64_t id, const K& key, pgas::detail::code_id fn, P... args) {
      constexpr const char* call = "dist_hash_map::update";
      dist_hash_map& m = self(id, call);
      try {
        return m.update_here(key, resolve(fn), std::forward<P>(args)...);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string(call) + ": " + e.what());
      }
    }
    template <class... A>
    static void write_args(serial_writer& w, A&&... a) {
      static_assert(sizeof...(A) == sizeof...(P), "dist_hash_map::update_ff: wrong argument count");
      (pgas::detail::param<P>::write(w, std::forward<A>(a)), ...);
    }
    // An update_ff record at the owner (after its code names).
    static void run_record(dist_hash_map& m, const K& key, pgas::detail::code_id fn,
                           serial_reader& r) {
      std::tuple<typename pgas::detail::param<P>::storage...> stored{
          pgas::detail::param<P>::read(r)...};
      std::apply(
          [&](auto&... s) { m.update_here(key, resolve(fn), pgas::detail::param<P>::pass(s)...); },
          stored);
    }
    static ptr resolve(pgas::detail::code_id fn) {
      if constexpr (std::is_class_v<F>) {
        return +F{};
      } else {
        return reinterpret_cast<ptr>(pgas::detail::container_code_address(fn));
      }
    }
  };
  using record_runner = void (*)(dist_hash_map&, const K&, pgas::detail::code_id, serial_reader&);

 private:
  static std::uint64_t mixed(const K& key) {
    return pgas::detail::mix_hash(static_cast<std::uint64_t>(Hash{}(key)));
  }
  shard& shard_of(const K& key) const { return shards_[(mixed(key) >> 32) % shard_count_]; }
  // Validates a call (the runtime open) and gives the key's owner.
  rank_t check(const K& key, const char* call) const {
    const rank_t o = owner(key);
    pgas::detail::check_rpc_target(world_of_[static_cast<std::size_t>(o)], call);
    return o;
  }
  static dist_hash_map& self(std::uint64_t id, const char* call) {
    return *static_cast<dist_hash_map*>(pgas::detail::find_container(id, call));
  }
  template <class F>
  static auto as_pointer(const F& fn) {
    if constexpr (std::is_class_v<F>) {
      return +F{};
    } else {
      return fn;
    }
  }
  template <class F>
  static pgas::detail::code_id code_of(const F& fn) {
    if constexpr (std::is_class_v<F>) {
      return {};
    } else {
      return pgas::detail::code_id_of(reinterpret_cast<pgas::detail::code_ptr>(fn));
    }
  }
  // A future failed as update's rpc fails when fn throws at the owner (here).
  template <class R>
  static future<R> failed(const char* call, std::string_view what) {
    const rank_t here = oneside::world().rank();
    return make_exception_future<R>(std::make_exception_ptr(error(
        error_class::remote,
        oneside::detail::format_error(
            error_class::remote, {.call = call, .target = here},
            "the function threw on rank " + std::to_string(here) + ": " + std::string(what)))));
  }

  // ---- the operations at the owner.
  bool insert_here(const K& key, const V& value) {
    shard& s = shard_of(key);
    const std::lock_guard lock(s.mutex);
    const bool inserted = s.map.emplace(key, value).second;
    if (inserted) local_size_.fetch_add(1, std::memory_order_relaxed);
    return inserted;
  }
  bool assign_here(const K& key, const V& value) {
    shard& s = shard_of(key);
    const std::lock_guard lock(s.mutex);
    const bool inserted = s.map.insert_or_assign(key, value).second;
    if (inserted) local_size_.fetch_add(1, std::memory_order_relaxed);
    return inserted;
  }
  bool erase_here(const K& key) {
    shard& s = shard_of(key);
    const std::lock_guard lock(s.mutex);
    const bool erased = s.map.erase(key) != 0;
    if (erased) local_size_.fetch_sub(1, std::memory_order_relaxed);
    return erased;
  }
  std::optional<V> find_here(const K& key) const {
    shard& s = shard_of(key);
    const std::lock_guard lock(s.mutex);
    const auto it = s.map.find(key);
    if (it == s.map.end()) return std::nullopt;
    return it->second;
  }
  template <class Ptr, class... A>
  auto update_here(const K& key, Ptr fn, A&&... args) {
    shard& s = shard_of(key);
    const std::lock_guard lock(s.mutex);
    const auto [it, inserted] = s.map.try_emplace(key);
    try {
      if constexpr (std::is_void_v<decltype(fn(it->second, std::forward<A>(args)...))>) {
        fn(it->second, std::forward<A>(args)...);
        if (inserted) local_size_.fetch_add(1, std::memory_order_relaxed);
      } else {
        auto r = fn(it->second, std::forward<A>(args)...);
        if (inserted) local_size_.fetch_add(1, std::memory_order_relaxed);
        return r;
      }
    } catch (...) {
      if (inserted) s.map.erase(it);
      throw;
    }
  }

  // ---- rpc bodies at the owner.
  static bool insert_body(std::uint64_t id, const K& key, const V& value) {
    return self(id, "dist_hash_map::insert").insert_here(key, value);
  }
  static bool assign_body(std::uint64_t id, const K& key, const V& value) {
    return self(id, "dist_hash_map::insert_or_assign").assign_here(key, value);
  }
  static bool erase_body(std::uint64_t id, const K& key) {
    return self(id, "dist_hash_map::erase").erase_here(key);
  }
  static pgas::detail::maybe_value<V> find_body(std::uint64_t id, const K& key) {
    return {self(id, "dist_hash_map::find").find_here(key)};
  }

  // ---- _ff records: [map name][kind][key][what `more` writes], to the handler of containers.
  template <class More>
  void send_record(aggregator& agg, const K& key, pgas::detail::map_record kind, const char* call,
                   More&& more) {
    const rank_t o = check(key, call);
    // One buffer per thread, reused: no allocation per record (aggregator::send copies it).
    thread_local std::vector<std::byte> rec;
    rec.resize(sizeof id_);
    std::memcpy(rec.data(), &id_, sizeof id_);
    serial_writer w(rec);  // alignment counts from here, as the reader's at the owner
    w.write(static_cast<std::uint8_t>(kind));
    w.write(key);
    more(w);
    if (rec.size() > agg.max_message_bytes()) [[unlikely]] {
      oneside::detail::raise(
          error_class::arg,
          {.call = call, .target = world_of_[static_cast<std::size_t>(o)], .bytes = rec.size()},
          "the record takes " + std::to_string(rec.size()) + " bytes, more than the aggregator's " +
              std::to_string(agg.max_message_bytes()) +
              " bytes a message (use the blocking or future form)");
    }
    agg.send(world_of_[static_cast<std::size_t>(o)], pgas::detail::container_handler(), rec);
  }
  // The handler's side (container_apply).
  static void apply_record(void* container, rank_t, std::span<const std::byte> bytes) {
    auto& m = *static_cast<dist_hash_map*>(container);
    serial_reader r(bytes);
    const auto kind = static_cast<pgas::detail::map_record>(r.read<std::uint8_t>());
    const K key = r.read<K>();
    switch (kind) {
      case pgas::detail::map_record::insert:
        m.insert_here(key, r.read<V>());
        return;
      case pgas::detail::map_record::assign:
        m.assign_here(key, r.read<V>());
        return;
      case pgas::detail::map_record::erase:
        m.erase_here(key);
        return;
      case pgas::detail::map_record::update: {
        const auto run = reinterpret_cast<record_runner>(
            pgas::detail::container_code_address(r.read<pgas::detail::code_id>()));
        const auto user = r.read<pgas::detail::code_id>();
        try {
          run(m, key, user, r);
        } catch (const std::exception& e) {
          // The job ends with this message (pgas::detail::abort_record).
          throw std::runtime_error(std::string("dist_hash_map::update_ff: ") + e.what());
        }
        return;
      }
    }
    oneside::detail::raise(error_class::arg, {.call = "dist_hash_map record"},
                           "a record of unknown kind " + std::to_string(static_cast<int>(kind)));
  }

  oneside::team team_;
  std::size_t shard_count_;
  std::unique_ptr<shard[]> shards_;
  std::atomic<std::size_t> local_size_{0};
  std::uint64_t id_ = 0;
  rank_t me_ = 0;
  std::vector<rank_t> world_of_;  // by team rank
  int uncaught_ = std::uncaught_exceptions();
};

}  // namespace oneside
