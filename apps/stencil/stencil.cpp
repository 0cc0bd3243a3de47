// The stencil mini-app: the Parallel Research Kernels' Stencil (a star stencil of radius R on
// an n x n grid, ../../shared/reference/prk-stencil.md) over a 2-D grid of ranks, with the
// halos of `in` moved through rma::window in one of three synchronization modes:
//   fence    fence(noprecede), put, [interior], fence(noput|nosucceed), [edge]
//   pscw     post/start over the neighbours, put, [interior], complete, wait, [edge]
//   passive  lock_all for the run; put, flush, then an iteration counter the neighbour polls;
//            the neighbour acknowledges once it has read its ghost zone, and a sender waits
//            for that acknowledgement before overwriting the zone again.
//   tasks    request-based puts (rput, joined with when_all) into receive areas kept twice, by
//            the parity of the iteration, so no acknowledgement is needed: a neighbour writes
//            areas of parity p again only after it saw this rank's signal of the next
//            iteration, sent once this rank had unpacked them. After the puts' flush each
//            neighbour's signal word is set by an accumulate that nobody waits for (the next
//            flush completes it); the interior is swept on the rank's TBB arena meanwhile, and
//            the edge once the signals came. --only compute or --only comm runs one half alone
//            (unverified), for the overlap efficiency.
//   dist_array  `in` is a 2-D dist_array with a halo of R (run_dist_array): halo_exchange_async,
//            [interior], wait, [edge]; the PGAS layer moves the halos (corners too, unused).
// Rows of halo are contiguous and go straight into the neighbour's ghost rows; columns are
// packed and put into a receive buffer (--halo pack) or put with a vector datatype straight
// into the ghost columns (--halo datatype). The kernel and its phases are in stencil_kernel.hpp,
// what moves where in stencil_halo.hpp.
//
// Checkpoints (--checkpoint-every K --checkpoint PATH, --restart PATH, --save-final PATH) save
// the owned cells of `in` and `out` as one dist_array file (stencil_checkpoint.hpp); a run
// restarted from one ends with the same grids, bit for bit, as an uninterrupted run.
//
//   oneside-run -n 4 stencil --n 4000 --radius 2 --iterations 100 --variant fence
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "common/app_main.hpp"
#include "stencil_checkpoint.hpp"
#include "stencil_cli.hpp"
#include "stencil_decomposition.hpp"
#include "stencil_halo.hpp"
#include "stencil_kernel.hpp"
#include "stencil_verify.hpp"

namespace {

namespace st = oneside::apps::stencil;
using oneside::rma::mode;
using st::index_t;

// Where things live in a rank's window (units of 8 bytes): the `in` array with its ghost
// frame, the receive areas of packed columns (st::receive_areas: from the left and from the
// right neighbour, R x h each, row-major), then the signal words (4, by the side the data came
// from), the acknowledgement words (4, by the side of the neighbour that acknowledges), then
// the tasks variant's receive areas: by parity, then by side, R x w (top, bottom) or R x h
// (left, right) doubles, row-major.
struct layout {
  st::receive_areas columns;
  index_t signal;
  index_t ack;
  index_t area[2][st::side_count];
  index_t total;
};
layout layout_of(const st::block& b) {
  layout l{};
  l.columns = st::receive_areas_of(b);
  l.signal = l.columns.end;
  l.ack = l.signal + st::side_count;
  index_t at = l.ack + st::side_count;
  for (auto& parity : l.area) {
    for (int d = 0; d < st::side_count; ++d) {
      parity[d] = at;
      at += b.r * (d == st::top || d == st::bottom ? b.w : b.h);
    }
  }
  l.total = at;
  return l;
}

// The halo exchange of one rank: what it sends where, and the unpacking of what it got.
class halo {
 public:
  halo(const st::block& b, double* in, oneside::rma::window& win, st::halo_kind kind)
      : b_(b), in_(in), win_(win), kind_(kind), mine_(layout_of(b)) {
    for (int d = 0; d < st::side_count; ++d) {
      const int q = b.neighbour[d];
      if (q == st::no_neighbour) continue;
      nb_[d] = st::make_block(b.n, b.r, b.px, b.py, q);
      nb_layout_[d] = layout_of(nb_[d]);
      neighbours_.push_back(q);
      if (d == st::left || d == st::right) {
        send_buf_[d].resize(static_cast<std::size_t>(b.r * b.h));
        if (kind == st::halo_kind::datatype) {
          // h rows of R cells, with each side's own row stride (the widths may differ).
          col_type_mine_ =
              oneside::datatype::vector(b.h, b.r, b.stride(), oneside::datatype::of<double>());
          col_type_nb_[d] =
              oneside::datatype::vector(b.h, b.r, nb_[d].stride(), oneside::datatype::of<double>());
        }
      }
    }
  }

  const std::vector<oneside::rank_t>& neighbours() const noexcept { return neighbours_; }

  // Puts this rank's halos into its neighbours' windows (inside an access epoch).
  void send() {
    st::for_each_halo_put(
        b_, nb_, kind_, in_, send_buf_,
        [&](int, index_t, int q, const double* src, index_t count, index_t dst) {
          win_.put(std::span<const double>(src, static_cast<std::size_t>(count)), q, dst);
        },
        [&](int d, int q, const double* src, index_t dst) {
          win_.put(src, 1, col_type_mine_, q, dst, 1, col_type_nb_[d]);
        },
        [&](int d, int q, const std::vector<double>& buf) {
          win_.put(std::span<const double>(buf), q, nb_layout_[d].columns.recv[st::opposite(d)]);
        });
  }

  // The tasks variant's puts of iteration parity `parity`: the same pieces as send(), all into
  // the neighbours' receive areas of that parity (R rows of w, or R x h packed columns).
  std::vector<oneside::rma::request> send_to_areas(int parity) {
    std::vector<oneside::rma::request> sent;
    const auto area = [&](int d) { return nb_layout_[d].area[parity][st::opposite(d)]; };
    st::for_each_halo_put(
        b_, nb_, kind_, in_, send_buf_,
        [&](int d, index_t c, int q, const double* src, index_t count, index_t) {
          sent.push_back(win_.rput(std::span<const double>(src, static_cast<std::size_t>(count)), q,
                                   area(d) + c * count));
        },
        [&](int d, int q, const double* src, index_t) {
          sent.push_back(win_.rput(src, 1, col_type_mine_, q, area(d), b_.r * b_.h,
                                   oneside::datatype::of<double>()));
        },
        [&](int d, int q, const std::vector<double>& buf) {
          sent.push_back(win_.rput(std::span<const double>(buf), q, area(d)));
        });
    return sent;
  }

  // Copies this rank's receive areas of `parity` into the ghost frame.
  void unpack_areas(int parity) {
    const index_t r = b_.r;
    for (int d : {st::top, st::bottom}) {
      if (b_.neighbour[d] == st::no_neighbour) continue;
      const double* area = in_ + mine_.area[parity][d];
      const index_t y0 = d == st::top ? -r : b_.h;
      for (index_t c = 0; c < r; ++c) std::copy_n(area + c * b_.w, b_.w, in_ + b_.at(0, y0 + c));
    }
    const st::receive_areas columns{{mine_.area[parity][st::left], mine_.area[parity][st::right]},
                                    mine_.area[parity][st::right] + r * b_.h};
    st::unpack_columns(b_, in_, columns);
  }

  // Sets every neighbour's signal word to `value` without waiting for it: the accumulate is
  // complete at the next flush; the neighbour's agent (shm) or progress (MPI) applies it and
  // wakes its waiters.
  void signal_all(std::uint64_t value) {
    for (int d = 0; d < st::side_count; ++d) {
      const int q = b_.neighbour[d];
      if (q == st::no_neighbour) continue;
      win_.accumulate(std::span<const std::uint64_t>(&value, 1), q,
                      nb_layout_[d].signal + st::opposite(d), oneside::op::replace);
    }
    oneside::wake(neighbours_);
  }

  // Copies packed columns from the receive buffers into the ghost columns (after the epoch).
  void unpack() {
    if (kind_ == st::halo_kind::pack) st::unpack_columns(b_, in_, mine_.columns);
  }

  // Passive mode: sets word `which` (signal or ack base + side) of every neighbour to `value`
  // and wakes them. The side is the one this rank is on, seen from the neighbour.
  void notify_all(bool ack, std::uint64_t value) {
    for (int d = 0; d < st::side_count; ++d) {
      const int q = b_.neighbour[d];
      if (q == st::no_neighbour) continue;
      const index_t base = ack ? nb_layout_[d].ack : nb_layout_[d].signal;
      win_.accumulate(std::span<const std::uint64_t>(&value, 1), q, base + st::opposite(d),
                      oneside::op::replace);
    }
    win_.flush_all();
    oneside::wake(neighbours_);
  }

  // Passive mode: waits until this rank's word (signal or ack) of every neighbour reaches
  // `value`.
  void await_all(bool ack, std::uint64_t value) {
    auto* words = reinterpret_cast<std::uint64_t*>(in_ + (ack ? mine_.ack : mine_.signal));
    for (int d = 0; d < st::side_count; ++d) {
      if (b_.neighbour[d] == st::no_neighbour) continue;
      std::atomic_ref<std::uint64_t> word(words[d]);
      oneside::wait_until([&] { return word.load(std::memory_order_acquire) >= value; });
    }
  }

 private:
  const st::block& b_;
  double* in_;
  oneside::rma::window& win_;
  st::halo_kind kind_;
  layout mine_;
  st::block nb_[st::side_count];
  layout nb_layout_[st::side_count]{};
  std::vector<oneside::rank_t> neighbours_;
  std::vector<double> send_buf_[st::side_count];
  oneside::datatype col_type_mine_ = oneside::datatype::of<double>();
  oneside::datatype col_type_nb_[st::side_count] = {
      oneside::datatype::of<double>(), oneside::datatype::of<double>(),
      oneside::datatype::of<double>(), oneside::datatype::of<double>()};
};

void phase_interior(const st::grid& g, const st::phases& p) {
  st::sweep(g, p.interior, p.fused);
}
void phase_edge(const st::grid& g, const st::phases& p) {
  for (const st::rect& e : p.edge) st::sweep(g, e, {});
}
void phase_rest(const st::grid& g, const st::phases& p) {
  for (const st::rect& e : p.rest) st::increment(g, e);
}

// Verifies and reports a finished run (every variant): returns the exit code.
int finish(const st::grid& g, std::vector<double>& out, const st::options& o, double seconds) {
  const oneside::team& world = oneside::world();
  const st::block& b = *g.b;
  if (o.inject_error && world.rank() == world.size() - 1) {
    const st::rect a = b.active();
    if (!a.empty()) out[static_cast<std::size_t>(a.y0 * b.w + a.x0)] += st::injected_error(o);
  }
  const double norm = oneside::allreduce(world, st::local_norm(g), oneside::op::sum);
  const double max_seconds = oneside::allreduce(world, seconds, oneside::op::max);
  const st::verdict v = st::verify(norm, o);
  if (world.rank() == 0 &&
      (o.checkpoint_every > 0 || !o.restart.empty() || !o.save_final.empty())) {
    std::printf("Solution norm          = %.17g\n", v.norm);  // compared across restarts
    std::fflush(stdout);
  }
  const int code = st::report(v, max_seconds, o, world.rank() == 0);
  if (code != 0 && world.rank() != 0) {
    std::fprintf(stderr, "stencil: rank %d: verification failed\n", world.rank());
  }
  return code;
}

// The dist_array variant: `in` is an n x n dist_array (rows, columns) over the py x px tiles,
// block-distributed with a halo of R, so its padded block is exactly the ghost-framed block
// the kernel sweeps (row stride w + 2R).
int run_dist_array(const st::options& o, int px, int py) {
  const auto n = static_cast<std::size_t>(o.n);
  const auto r = static_cast<std::size_t>(o.radius);
  oneside::dist_array<double, 2> in(oneside::world(), {n, n},
                                    {oneside::dist::block, oneside::dist::block}, {py, px},
                                    oneside::halo<2>({r, r}), "stencil in");
  st::block b = st::make_block(o.n, o.radius, px, py, oneside::world().rank());
  const std::array<std::size_t, 2> g0 = in.global_index({0, 0});
  const std::array<std::size_t, 2> e = in.local_extents();
  b.gy = static_cast<st::index_t>(g0[0]);
  b.gx = static_cast<st::index_t>(g0[1]);
  b.h = static_cast<st::index_t>(e[0]);
  b.w = static_cast<st::index_t>(e[1]);
  std::vector<double> out(e[0] * e[1]);
  const st::grid g{&b, in.local_with_halo().data(), out.data()};
  st::initialize(g);
  const st::phases p = st::plan(b, o.kernel);
  st::checkpointer ckpt(o, px, py);
  const int first = ckpt.restore(g);
  oneside::barrier(oneside::world());
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  for (int it = first; it <= o.iterations; ++it) {
    if (it == std::max(first, 1)) {  // iteration 0 is the warm-up
      oneside::barrier(oneside::world());
      start = std::chrono::steady_clock::now();
    }
    // The interior reads no halo and writes no cell the exchange sends.
    const oneside::future<> halos = in.halo_exchange_async();
    phase_interior(g, p);
    halos.wait();
    phase_edge(g, p);
    phase_rest(g, p);
    ckpt.after_iteration(g, it);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ckpt.finish(g);
  return finish(g, out, o, seconds);
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int ranks = world.size();
  const bool root = me == 0;

  st::options o;
  int px = 1, py = 1;
  const st::program_info program{"stencil",
                                 "oneside",
                                 {"fence", "pscw", "passive", "tasks", "dist_array"},
                                 st::kernel_kind::fused,
                                 true};
  if (const int code = st::start(program, argc, argv, ranks, root, o, px, py); code >= 0) {
    return code;
  }
  if (o.variant == "dist_array") return run_dist_array(o, px, py);

  const st::block b = st::make_block(o.n, o.radius, px, py, me);
  const layout mine = layout_of(b);
  oneside::rma::window win = oneside::rma::window::allocate(
      world, static_cast<std::size_t>(mine.total) * sizeof(double), sizeof(double));
  auto* in = static_cast<double*>(win.base());
  std::vector<double> out(static_cast<std::size_t>(b.w * b.h));
  const st::grid g{&b, in, out.data()};
  st::initialize(g);
  const st::phases p = st::plan(b, o.kernel);
  halo ex(b, in, win, o.halo);
  const oneside::group neighbours(ex.neighbours());
  // Stores into the exposed window during the epoch (phase A's increments) rule out nostore.
  const mode close_assert = o.kernel == st::kernel_kind::prk
                                ? mode::noput | mode::nosucceed | mode::nostore
                                : mode::noput | mode::nosucceed;
  const bool passive = o.variant == "passive" || o.variant == "tasks";
  st::checkpointer ckpt(o, px, py);
  const int first = ckpt.restore(g);
  const oneside::task_arena_ref arena = oneside::this_rank_arena();
  if (passive) win.lock_all(mode::nocheck);  // nobody takes exclusive locks
  oneside::barrier(world);

  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  for (int it = first; it <= o.iterations; ++it) {
    if (it == std::max(first, 1)) {  // iteration 0 is the warm-up
      oneside::barrier(world);
      start = std::chrono::steady_clock::now();
    }
    // The passive protocol's counters count this run's iterations (a restart starts at 0).
    const auto iter = static_cast<std::uint64_t>(it - first);
    if (o.variant == "fence") {
      win.fence(mode::noprecede);
      ex.send();
      phase_interior(g, p);
      win.fence(close_assert);
      ex.unpack();
      phase_edge(g, p);
      phase_rest(g, p);
    } else if (o.variant == "pscw") {
      win.post(neighbours);
      win.start(neighbours);
      ex.send();
      phase_interior(g, p);
      win.complete();
      win.wait();
      ex.unpack();
      phase_edge(g, p);
      phase_rest(g, p);
    } else if (o.variant == "tasks") {
      // Areas of parity `parity`: the neighbours last wrote them in iteration it - 2, and write
      // them again only after my signal of iteration it + 1, sent once I unpacked them below.
      const int parity = static_cast<int>(iter & 1);
      if (o.only != "compute") {
        std::vector<oneside::rma::request> sent = ex.send_to_areas(parity);
        oneside::when_all(std::span<oneside::rma::request>(sent)).wait();
        win.flush_all();  // the halos are at the neighbours (and my last signals too)
        ex.signal_all(iter + 1);
      }
      // The interior reads no ghost cell and writes no cell a halo carries: the arena sweeps it
      // while the signals travel and the neighbours' halos land.
      if (o.only != "comm") arena.execute([&g, &p] { phase_interior(g, p); });
      if (o.only != "compute") {
        ex.await_all(false, iter + 1);
        ex.unpack_areas(parity);
      }
      if (o.only != "comm") {
        phase_edge(g, p);
        phase_rest(g, p);
      }
    } else {                     // passive
      ex.await_all(true, iter);  // the neighbours have read what I sent in iteration it - 1
      ex.send();
      win.flush_all();
      ex.notify_all(false, iter + 1);
      phase_interior(g, p);
      ex.await_all(false, iter + 1);
      ex.unpack();
      phase_edge(g, p);
      ex.notify_all(true, iter + 1);  // my ghost zone and receive buffers may be reused
      phase_rest(g, p);
    }
    ckpt.after_iteration(g, it);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (passive) win.unlock_all();
  ckpt.finish(g);

  if (!o.only.empty()) {  // half of the work: nothing to verify
    const double max_seconds = oneside::allreduce(world, seconds, oneside::op::max);
    if (root) {
      std::printf("Only %s (not verified): Avg time (s): %.9f\n", o.only.c_str(),
                  max_seconds / o.iterations);
    }
    win.free();
    return 0;
  }
  const int code = finish(g, out, o, seconds);
  win.free();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("stencil", argc, argv, run);
}
