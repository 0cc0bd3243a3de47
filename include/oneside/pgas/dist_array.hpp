// dist_array<T, N>: an N-d array (N = 1, 2, 3) spread over the ranks of a team by a
// pattern<N> (pattern.hpp: a distribution per dimension and a grid of ranks). Each rank's
// elements are one dense row-major block on the symmetric heap (symmetric_heap.hpp), which
// node peers load and store and every rank reaches through the transport.
//
// - Construction and destruction are collective over the team (every member, the same
//   arguments, one thread per rank); a dist_array is move-only. Over a team of every rank the
//   blocks are on the symmetric heap; over a smaller team (team::split) each member's block is
//   on its own part of the global heap (heap.hpp), reached alike.
// - Element access a[i] / a(i, j, k) gives a global_ref<T> (reads, writes and, for the
//   atomics' types, atomics: global_ref.hpp), a.ptr(idx) a global_ptr<T>; both check the
//   index.
// - Bulk access a.get(r, out) / a.put(r, in) and their future forms rget/rput move a
//   rectangular region r (region.hpp) to or from a dense row-major buffer with one transfer
//   per rank owning part of it: a copy run by run out of a block this process maps, else one
//   strided transfer (the datatype engine: the owner's box of its block against the matching
//   runs of the buffer), never element by element. copy(a, ra, b, rb)
//   copies a region between two arrays of any distributions (collective). Completion and
//   ordering are those of rput/rget (communication.hpp) on each owner; nothing orders two
//   ranks' puts to one element: synchronize (barrier) between writers and readers.
// - a.local() views this rank's block (local_view.hpp) at raw pointer speed;
//   global_index/local_index map between its indices and the global ones.
//   for_each_local/transform_local run over it in parallel on this rank's task arena.
// - Halos (halo.hpp; block and none dimensions only): each rank's block is stored padded by
//   the halo's width on both sides of each dimension, so local() is a padded (strided) view
//   of the owned cells and local_with_halo() a dense view of the whole padded block (owned
//   local index l at l + width). halo_exchange() / halo_exchange_async() (collective) fill
//   every rank's padding, corners included, from its neighbours' owned cells.
// - Files: a.save(path) / a.load(path) (collective) write and read one file in the layout of
//   array_file.hpp (a header, then the elements in global row-major order), so a file saved
//   with one distribution or rank count loads into an array of any other; a.save_async(path)
//   starts the write with a split collective and returns a future.
// - Errors (oneside::error, naming the array, the call, the index or region and the rank; the
//   call changes nothing): arg for an index or a region outside the extents, a buffer whose
//   size is not the region's, arguments that differ between ranks, an invalid pattern; no_mem
//   for a block larger than a rank can hold (the symmetric or global heap's budget, or more
//   bytes than the address space).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/array_file.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/distribution.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/global_ref.hpp>
#include <oneside/pgas/halo.hpp>
#include <oneside/pgas/local_view.hpp>
#include <oneside/pgas/pattern.hpp>
#include <oneside/pgas/region.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/task_arena.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace pgas::detail {

// What the untyped back (pgas/dist_array/) knows of one array.
struct array_desc {
  std::string_view name;
  std::span<const dim_map> dims;
  std::span<const std::uintptr_t> bases;   // team rank → address of its block (world rank's)
  std::span<const rank_t> world_ranks;     // team rank → world rank
  std::size_t element = 0;                 // bytes of one element
  std::span<const std::size_t> halo = {};  // halo width per dimension (empty: none)
  std::size_t control = 0;                 // halos: the offset of the exchange words in a block
};

// The storage of a new array: this rank's block, and every member's.
struct array_storage {
  global_ptr<void> mine;
  std::size_t control = 0;  // see array_desc
  std::vector<std::uintptr_t> bases;
  std::vector<rank_t> world_ranks;
};

// Collective over `t`: checks that every member passed the same `signature` (the extents,
// distributions, grid and element type), that `problem` (pattern::check's verdict) is empty
// and that the largest block (rank 0's, of `dims`) fits, then allocates the blocks on the
// symmetric heap. Raises on every member alike, with nothing allocated. With a halo (a width
// per dimension), each block is padded by it and followed by the words halo exchanges signal.
array_storage create_array(std::string_view name, const team& t,
                           std::span<const std::uint64_t> signature, const std::string& problem,
                           std::span<const dim_map> dims, std::size_t element, std::size_t align,
                           std::span<const std::size_t> halo = {});
// What is wrong with a halo of `width` on an array of `dims` distributed as `dists` (empty:
// nothing): a cyclic or block-cyclic dimension with a halo, or a width above some rank's
// extent in a distributed dimension.
std::string halo_problem(std::span<const dim_map> dims, std::span<const distribution> dists,
                         std::span<const std::size_t> width);
// What this rank's (`me`, a team rank) halo exchanges move where: worked out once per array
// (error(arg) naming dist_array::halo_exchange for a moved-from array).
struct halo_plan;
std::shared_ptr<const halo_plan> make_halo_plan(const array_desc& a, rank_t me,
                                                std::span<const bool> periodic);
// Collective over the array's team (every member, the same `epoch`, one more than the last
// one's): puts this rank's border cells into its neighbours' halos once each neighbour is
// ready for them, and waits for its own halos. The future is ready when this rank's halos
// hold the neighbours' cells and its own cells have been delivered.
future<> exchange_halo(const std::shared_ptr<const halo_plan>& plan, std::uint64_t epoch);
// Frees the blocks (collective over `t`, the array's team); never throws.
void destroy_array(global_ptr<void> mine, const team& t) noexcept;
// Moves region (lo, extents) of the array from the dense row-major buffer `in` (a put) or to
// `out` (a get; exactly one is non-null) of `buf_elements` elements: one layout transfer per
// owning rank. Validates first (arg: a region outside the extents, a buffer of the wrong size;
// naming `call`).
future<> move_region(const array_desc& a, const std::size_t* lo, const std::size_t* extents,
                     const void* in, void* out, std::size_t buf_elements, const char* call);
// Collective over `t` (to's team): copies region (from_lo, extents) of `from` to region
// (to_lo, extents) of `to`, each rank pulling into its own block one layout get per owner of
// `from`; barriers before and after. Validates first (arg, naming "dist_array copy").
void copy_region(const array_desc& from, const std::size_t* from_lo, const array_desc& to,
                 const std::size_t* to_lo, const std::size_t* extents, const team& t);
// What save and load know of one array (pgas/dist_array/array_file.cpp).
struct array_io {
  std::string_view name;
  const team* t = nullptr;
  bool valid = false;  // false for a moved-from array
  std::span<const dim_map> dims;
  std::span<const distribution> dists;
  std::span<const int> grid;
  std::span<const std::size_t> halo;  // width per dimension (empty: none)
  std::size_t element = 0;
  std::string_view type_name;
  void* block = nullptr;  // this rank's storage (padded by the halo)
  rank_t me = 0;
};
// Collective over a.t: writes the array to `path` (created or replaced) and returns once the
// file is complete and closed on every member.
void save_array(const array_io& a, std::string_view path, const save_options& o);
// Collective over a.t: starts the write (a split collective) and returns; the future is ready
// once this member's part is in the file.
future<> save_array_async(const array_io& a, std::string_view path, const save_options& o);
// Collective over a.t: checks the file's header against the array, then reads it into every
// member's block.
void load_array(const array_io& a, std::string_view path);
// error(arg): index idx (of a.dims.size() entries) is outside the extents.
// error(arg): copy between regions of different extents (N = a.dims.size()).
[[noreturn]] void regions_differ(const array_desc& a, const std::size_t* from_extents,
                                 const std::size_t* to_extents);
[[noreturn]] void index_out_of_range(const array_desc& a, const std::size_t* idx, const char* call);

}  // namespace pgas::detail

template <class T, std::size_t N>
requires(N >= 1 && N <= 3 && std::is_trivially_copyable_v<T> &&
         !std::is_const_v<T>) class dist_array {
 public:
  using value_type = T;
  using index_type = std::array<std::size_t, N>;
  using region_type = region<N>;
  using pattern_type = oneside::pattern<N>;
  using halo_type = oneside::halo<N>;

  // Collective over `t`: the array of `extents` with distributions `dists` over a grid as
  // square as possible (pattern.hpp); elements uninitialised. `name` names it in errors.
  dist_array(const team& t, const index_type& extents, const std::array<distribution, N>& dists,
             std::string name = "dist_array")
      : dist_array(t, extents, dists, pattern_type::square_grid(dists, t.size()), std::move(name)) {
  }
  // The same over a given grid (product: the team's size; 1 for a dist::none dimension).
  dist_array(const team& t, const index_type& extents, const std::array<distribution, N>& dists,
             const std::array<int, N>& grid, std::string name = "dist_array")
      : dist_array(t, extents, dists, grid, halo_type{}, std::move(name)) {}
  // With a halo `h` (halo.hpp) on a grid as square as possible, or a given one. Errors (arg,
  // on every member, nothing allocated) besides the above: a halo on a cyclic or
  // block-cyclic dimension, or wider than some rank's extent of a dimension spread over
  // more than one rank.
  dist_array(const team& t, const index_type& extents, const std::array<distribution, N>& dists,
             const halo_type& h, std::string name = "dist_array")
      : dist_array(t, extents, dists, pattern_type::square_grid(dists, t.size()), h,
                   std::move(name)) {}
  dist_array(const team& t, const index_type& extents, const std::array<distribution, N>& dists,
             const std::array<int, N>& grid, const halo_type& h, std::string name = "dist_array")
      : name_(std::move(name)), pattern_(make_pattern(t, extents, dists, grid)), halo_(h) {
    std::string problem = pattern_type::check(extents, dists, grid, t.size());
    if (problem.empty() && h.any())
      problem = pgas::detail::halo_problem(pattern_.dims(), dists, h.width);
    pgas::detail::array_storage s = pgas::detail::create_array(
        name_, t, signature(extents, dists, grid, h), problem, pattern_.dims(), sizeof(T),
        alignof(T),
        h.any() ? std::span<const std::size_t>(halo_.width) : std::span<const std::size_t>());
    if (!h.any()) halo_ = halo_type{};
    control_ = s.control;
    mine_ = static_pointer_cast<T>(s.mine);
    bases_ = std::move(s.bases);
    world_ranks_ = std::move(s.world_ranks);
    team_ = t;
    me_ = t.rank();
  }

  dist_array(const dist_array&) = delete;
  dist_array& operator=(const dist_array&) = delete;
  dist_array(dist_array&& o) noexcept
      : name_(std::move(o.name_)),
        pattern_(o.pattern_),
        halo_(o.halo_),
        control_(o.control_),
        exchanges_(o.exchanges_),
        halo_plan_(std::move(o.halo_plan_)),
        team_(o.team_),
        me_(o.me_),
        mine_(std::exchange(o.mine_, nullptr)),
        bases_(std::move(o.bases_)),
        world_ranks_(std::move(o.world_ranks_)) {
    o.bases_.clear();
  }
  dist_array& operator=(dist_array&& o) noexcept {
    if (this != &o) {
      release();
      name_ = std::move(o.name_);
      pattern_ = o.pattern_;
      halo_ = o.halo_;
      control_ = o.control_;
      exchanges_ = o.exchanges_;
      halo_plan_ = std::move(o.halo_plan_);
      team_ = o.team_;
      me_ = o.me_;
      mine_ = std::exchange(o.mine_, nullptr);
      bases_ = std::move(o.bases_);
      o.bases_.clear();
      world_ranks_ = std::move(o.world_ranks_);
    }
    return *this;
  }
  // Collective over the array's team, unless moved from.
  ~dist_array() { release(); }

  const std::string& name() const noexcept { return name_; }
  const pattern_type& pattern() const noexcept { return pattern_; }
  const team& get_team() const noexcept { return team_; }
  const index_type& extents() const noexcept { return pattern_.extents(); }
  std::size_t extent(std::size_t d) const noexcept { return pattern_.extents()[d]; }
  std::size_t size() const noexcept { return pattern_.size(); }
  // The halo it was built with (none: every width 0).
  const halo_type& get_halo() const noexcept { return halo_; }

  // ---- element access ----------------------------------------------------------------------

  // A pointer to element idx; error(arg) when idx is outside the extents.
  global_ptr<T> ptr(const index_type& idx) const {
    if (!pattern_.contains(idx)) [[unlikely]] {
      pgas::detail::index_out_of_range(desc(), idx.data(), "dist_array::ptr");
    }
    const rank_t r = pattern_.owner(idx);
    const std::size_t off = storage_offset(r, pattern_.local_index(idx));
    return global_ptr<T>(world_ranks_[static_cast<std::size_t>(r)],
                         bases_[static_cast<std::size_t>(r)] + off * sizeof(T));
  }
  global_ref<T> operator[](const index_type& idx) const { return global_ref<T>(ptr(idx)); }
  global_ref<T> operator[](std::size_t i) const requires(N == 1) {
    return global_ref<T>(ptr(index_type{i}));
  }
  template <std::integral... I>
  requires(sizeof...(I) == N) global_ref<T>
  operator()(I... i) const {
    return global_ref<T>(ptr(index_type{static_cast<std::size_t>(i)...}));
  }

  // ---- this rank's block -------------------------------------------------------------------

  // This rank's elements (row-major over local_extents(); with a halo, padded: the rows of
  // the last dimension are contiguous, not the whole block).
  local_view<T, N> local() noexcept {
    if (!halo_.any()) return {raw(), pattern_.local_extents(me_)};
    return {raw() + padded_offset(index_type{}), pattern_.local_extents(me_), padded_strides()};
  }
  local_view<const T, N> local() const noexcept {
    if (!halo_.any()) return {raw(), pattern_.local_extents(me_)};
    return {raw() + padded_offset(index_type{}), pattern_.local_extents(me_), padded_strides()};
  }
  // This rank's block with its halo: a dense view of local_extents()[d] + 2 * width[d]
  // elements per dimension, where owned local index l is at l + width (the halo cells at
  // indices below width and from width + local extent on). The same as local() without halo.
  local_view<T, N> local_with_halo() noexcept { return {raw(), padded_extents()}; }
  local_view<const T, N> local_with_halo() const noexcept { return {raw(), padded_extents()}; }
  index_type local_extents() const noexcept { return pattern_.local_extents(me_); }
  // The global index of this rank's local index l, and whether this rank owns global idx.
  index_type global_index(const index_type& l) const noexcept {
    return pattern_.global_index(me_, l);
  }
  bool owns(const index_type& idx) const noexcept {
    return pattern_.contains(idx) && pattern_.owner(idx) == me_;
  }

  // Calls f(element) or f(global index, element) for each of this rank's elements, in
  // parallel on this rank's task arena (f must be safe to call concurrently on different
  // elements). Not collective. Returns when all calls are done.
  template <class F>
  requires std::invocable<F&, T&> || std::invocable<F&, const index_type&, T&>
  void for_each_local(F f) {
    const local_view<T, N> v = local();
    if (!v.contiguous()) {
      for_each_padded(v, f);
      return;
    }
    this_rank_arena().parallel_for(v.size(), [&](std::size_t begin, std::size_t end) {
      if constexpr (std::invocable<F&, const index_type&, T&>) {
        index_type l = v.index_of(begin);
        for (std::size_t o = begin; o < end; ++o) {
          f(static_cast<const index_type&>(pattern_.global_index(me_, l)), v.data()[o]);
          next(l, v.extents());
        }
      } else {
        for (std::size_t o = begin; o < end; ++o) f(v.data()[o]);
      }
    });
  }
  // Replaces each of this rank's elements e by f(e) or f(global index, e), as for_each_local.
  template <class F>
  requires std::is_invocable_r_v<T, F&, const T&> ||
      std::is_invocable_r_v<T, F&, const index_type&, const T&>
  void transform_local(F f) {
    if constexpr (std::is_invocable_r_v<T, F&, const index_type&, const T&>) {
      for_each_local([&f](const index_type& g, T& e) { e = f(g, std::as_const(e)); });
    } else {
      for_each_local([&f](T& e) { e = f(std::as_const(e)); });
    }
  }

  // ---- halos ------------------------------------------------------------------------------

  // Fills this rank's halo cells from its neighbours' owned cells (corners included), across
  // periodic edges too; the halo beyond a non-periodic edge keeps what it held. Collective
  // over the team (every member calls it, the same number of times, each call after the
  // previous one's future is ready). A rank's own writes to its owned cells before the call
  // are what its neighbours receive; between the call and the future's readiness the halo
  // cells must not be accessed, nor the owned cells the exchange sends (those within the halo
  // width of a side with a neighbour) written; the others are free (a stencil's interior). The
  // call returns at once (puts to neighbours ready for them go out); the future is ready
  // when this rank's halos are filled and its cells delivered; waiting on it (or progress())
  // sends the rest. Without a halo: a ready future.
  future<> halo_exchange_async() {
    if (!halo_.any()) return {};
    if (halo_plan_ == nullptr)
      halo_plan_ = pgas::detail::make_halo_plan(desc(), me_, halo_.periodic);
    return pgas::detail::exchange_halo(halo_plan_, ++exchanges_);
  }
  void halo_exchange() { halo_exchange_async().wait(); }

  // ---- files ------------------------------------------------------------------------------

  // Writes the array to `path` (created, or replaced) in the layout of array_file.hpp: a
  // header naming the element type (predefined types by name, others as "bytes"), the extents
  // and this array's distribution, then every element in global row-major order (the halo is
  // not saved). Collective over the team (every member, the same path and options); returns
  // once every member's part is written and the file closed (with o.sync, on the device). The
  // array is only read. Errors (on every member alike): those of file::open (no_such_file for a
  // missing directory, access, …), io and no_space from the writes, arg for a moved-from array
  // or metadata over 1024 bytes. A crash during a save leaves a partial file: write to a
  // temporary name and rename it once save returned (apps/stencil's checkpoints do).
  void save(std::string_view path, const save_options& o = {}) const {
    pgas::detail::save_array(io(), path, o);
  }
  // The same, overlapped: collective over the team; opens the file, writes the header and
  // starts the data with write_at_all_begin (the file's I/O thread writes while the caller
  // computes), then returns. The future is ready when this member's part is in the file and
  // its handle released (write_at_all_end), which happens when the thread that called
  // save_async polls it (wait(), is_ready(), or progress() on that thread: a split
  // collective ends on the thread that began it, IO-12); it never waits for other members (the
  // data goes without collective buffering, whose end is collective). The file is complete once
  // every member's future is ready (e.g. a barrier after the waits). The array must not be written
  // until then (with a halo its cells are packed at the call and may be written at once).
  // o.sync is not available here (arg). Wait for the future before the runtime closes.
  // Errors: as save, from the call or from the future.
  future<> save_async(std::string_view path, const save_options& o = {}) const {
    return pgas::detail::save_array_async(io(), path, o);
  }
  // Reads the array from `path`, a file written by save with any distribution and rank count.
  // Collective over the team. Before anything is read, member 0 reads the header and every
  // member checks it against the array: errors (on every member alike, naming the file and
  // the mismatch; the array unchanged) no_such_file/access/… (opening it), io (not an array
  // file, or shorter than its header says), type (another element type or size), arg (another
  // rank N or other extents, a moved-from array). The halo cells are not touched.
  void load(std::string_view path) { pgas::detail::load_array(io(), path); }

  // ---- bulk access -------------------------------------------------------------------------

  // Reads region r into `out` (r.size() elements, row-major over r.extents). The future is
  // ready when out holds the data; out must stay in place until then.
  future<> rget(const region_type& r, std::span<T> out) const {
    return pgas::detail::move_region(desc(), r.lo.data(), r.extents.data(), nullptr, out.data(),
                                     out.size(), "dist_array::get");
  }
  void get(const region_type& r, std::span<T> out) const { rget(r, out).wait(); }
  // Writes `in` (r.size() elements, row-major over r.extents) to region r. `in` may be reused
  // when the call returns; the future is ready when the data is at every owner.
  future<> rput(const region_type& r, std::span<const T> in) {
    return pgas::detail::move_region(desc(), r.lo.data(), r.extents.data(), in.data(), nullptr,
                                     in.size(), "dist_array::put");
  }
  void put(const region_type& r, std::span<const T> in) { rput(r, in).wait(); }

  // Copies region `from_region` of `from` into region `to_region` of `to` (the same extents;
  // any two distributions: a redistribution). Collective over to's team, which every rank
  // calls with the same arguments; starts with a barrier (earlier writes to `from` are done)
  // and ends with one (the whole region is in place everywhere). Each rank pulls its own
  // part of to_region with one strided get per rank owning some of it in `from`. Errors
  // (arg, nothing copied): regions outside the extents or of different extents, overlapping
  // regions of one array, a moved-from array.
  friend void copy(const dist_array& from, const region_type& from_region, dist_array& to,
                   const region_type& to_region) {
    if (from_region.extents != to_region.extents) {
      pgas::detail::regions_differ(to.desc(), from_region.extents.data(), to_region.extents.data());
    }
    pgas::detail::copy_region(from.desc(), from_region.lo.data(), to.desc(), to_region.lo.data(),
                              to_region.extents.data(), to.team_);
  }

 private:
  static pattern_type make_pattern(const team& t, const index_type& extents,
                                   const std::array<distribution, N>& dists,
                                   const std::array<int, N>& grid) {
    // An invalid pattern is reported by create_array (collectively, naming the array): until
    // then, hold a valid stand-in of one rank.
    if (pattern_type::check(extents, dists, grid, t.size()).empty()) {
      return pattern_type(extents, dists, grid, t.size());
    }
    index_type one{};
    one.fill(1);
    std::array<int, N> g{};
    g.fill(1);
    return pattern_type(one, std::array<distribution, N>{}, g, 1);
  }
  static std::vector<std::uint64_t> signature(const index_type& extents,
                                              const std::array<distribution, N>& dists,
                                              const std::array<int, N>& grid, const halo_type& h) {
    std::vector<std::uint64_t> s{N, sizeof(T), alignof(T)};
    for (std::size_t d = 0; d < N; ++d) {
      s.push_back(extents[d]);
      s.push_back(static_cast<std::uint64_t>(dists[d].how));
      s.push_back(dists[d].block_size);
      s.push_back(static_cast<std::uint64_t>(static_cast<std::int64_t>(grid[d])));
      s.push_back(h.width[d]);
      s.push_back(h.periodic[d] ? 1 : 0);
    }
    return s;
  }
  static std::string_view element_type_name() noexcept {
    if constexpr (predefined_element<T>) {
      return basic_type_name(basic_type_v<T>);
    } else {
      return "bytes";
    }
  }
  pgas::detail::array_io io() const noexcept {
    pgas::detail::array_io a;
    a.name = name_;
    a.t = &team_;
    a.valid = !bases_.empty();
    a.dims = pattern_.dims();
    a.dists = pattern_.distributions();
    a.grid = pattern_.grid();
    if (halo_.any()) a.halo = halo_.width;
    a.element = sizeof(T);
    a.type_name = element_type_name();
    a.block = raw();
    a.me = me_;
    return a;
  }
  pgas::detail::array_desc desc() const noexcept {
    if (!halo_.any()) return {name_, pattern_.dims(), bases_, world_ranks_, sizeof(T)};
    return {name_, pattern_.dims(), bases_, world_ranks_, sizeof(T), halo_.width, control_};
  }
  // Rank r's block with its padding, and the storage offset of its local index l.
  index_type padded_extents(rank_t r) const noexcept {
    index_type e = pattern_.local_extents(r);
    for (std::size_t d = 0; d < N; ++d) e[d] += 2 * halo_.width[d];
    return e;
  }
  index_type padded_extents() const noexcept { return padded_extents(me_); }
  std::size_t storage_offset(rank_t r, index_type l) const noexcept {
    if (!halo_.any()) return pattern_type::offset(l, pattern_.local_extents(r));
    for (std::size_t d = 0; d < N; ++d) l[d] += halo_.width[d];
    return pattern_type::offset(l, padded_extents(r));
  }
  // This rank's offset of owned local index l, and the strides of its padded block.
  std::size_t padded_offset(const index_type& l) const noexcept { return storage_offset(me_, l); }
  index_type padded_strides() const noexcept {
    const index_type e = padded_extents();
    index_type s{};
    std::size_t n = 1;
    for (std::size_t d = N; d-- > 0;) {
      s[d] = n;
      n *= e[d];
    }
    return s;
  }
  // for_each_local over a padded view: in parallel over the rows of the last dimension.
  template <class F>
  void for_each_padded(const local_view<T, N>& v, F& f) {
    const std::size_t row = v.extent(N - 1);
    if (v.size() == 0) return;
    this_rank_arena().parallel_for(v.size() / row, [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) {
        index_type l = v.index_of(r * row);
        T* p = &v[l];
        for (std::size_t i = 0; i < row; ++i, ++l[N - 1]) {
          if constexpr (std::invocable<F&, const index_type&, T&>) {
            f(static_cast<const index_type&>(pattern_.global_index(me_, l)), p[i]);
          } else {
            f(p[i]);
          }
        }
      }
    });
  }
  T* raw() const noexcept {
    return mine_ ? reinterpret_cast<T*>(mine_.address()) : nullptr;  // this rank's own block
  }
  // The next local index in row-major order.
  static void next(index_type& l, const index_type& e) noexcept {
    for (std::size_t d = N; d-- > 0;) {
      if (++l[d] < e[d]) return;
      l[d] = 0;
    }
  }
  void release() noexcept {
    if (!bases_.empty()) pgas::detail::destroy_array(static_pointer_cast<void>(mine_), team_);
    bases_.clear();
    mine_ = nullptr;
    halo_plan_.reset();
  }

  std::string name_;
  pattern_type pattern_;
  halo_type halo_;
  std::size_t control_ = 0;
  std::uint64_t exchanges_ = 0;
  std::shared_ptr<const pgas::detail::halo_plan> halo_plan_;  // made by the first exchange
  team team_;
  rank_t me_ = 0;
  global_ptr<T> mine_;
  std::vector<std::uintptr_t> bases_;
  std::vector<rank_t> world_ranks_;
};

}  // namespace oneside
