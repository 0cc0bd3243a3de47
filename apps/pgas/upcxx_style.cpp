// A UPC++-style program: asynchronous operations chained with futures.
//
// 1. Every rank allocates a block in its right neighbour's heap with allocate_on (no
//    collective), and — in the continuation of that future — rputs its data there; the
//    pointer is published in a dist_object. The neighbour fetches it, reads the block in
//    place (it is its own memory) and checks it.
// 2. A reduction built from futures: rget one element of every rank's block (fetched through
//    the dist_object, then read with rget in a continuation), summed with when_all/then.
// 3. Overlap: a computation runs on the rank's task arena with async() while rputs are in
//    flight; both are joined with when_all.
// 4. Each rank frees the block it allocated on its neighbour: a remote deallocate.
//
//   oneside-run -n 4 upcxx_style [--n N]
//
// Prints "Solution validates" on success; exits non-zero with a message on any mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <oneside/oneside.hpp>

namespace {

double value_at(int rank, std::size_t i) {
  return static_cast<double>(rank) * 1000.0 + static_cast<double>(i % 997);
}

}  // namespace

int main(int argc, char** argv) {
  oneside::runtime rt(argc, argv);
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int n = world.size();
  long count = 100000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) {
      count = std::strtol(argv[++i], nullptr, 10);
    } else {
      if (me == 0)
        std::fprintf(stderr, "upcxx_style: unknown argument '%s' (use --n N)\n", argv[i]);
      return 2;
    }
  }
  if (count < 10) {
    if (me == 0) std::fprintf(stderr, "upcxx_style: --n must be at least 10\n");
    return 2;
  }
  const auto len = static_cast<std::size_t>(count);
  const int right = (me + 1) % n;
  const int left = (me + n - 1) % n;
  long errors = 0;

  // ---- 1. allocate_on + rput in a continuation -------------------------------------------
  std::vector<double> data(len);
  for (std::size_t i = 0; i < len; ++i) data[i] = value_at(me, i);
  oneside::future<oneside::global_ptr<double>> placed =
      oneside::allocate_on<double>(right, len).then([&data](oneside::global_ptr<double> block) {
        return oneside::rput(std::span<const double>(data), block).then([block] { return block; });
      });
  const oneside::global_ptr<double> mine_on_right = placed.wait();
  oneside::dist_object<oneside::global_ptr<double>> mailbox(mine_on_right);

  // The block the left neighbour placed here: this rank's own memory.
  const oneside::global_ptr<double> from_left = mailbox.fetch(left).wait();
  if (from_left.where() != me) {
    std::fprintf(stderr, "upcxx_style: rank %d: the left neighbour's block is on rank %d\n", me,
                 from_left.where());
    ++errors;
  } else {
    const double* at = from_left.local();
    for (std::size_t i = 0; i < len; ++i) {
      if (at[i] != value_at(left, i) && errors++ < 5) {
        std::fprintf(stderr, "upcxx_style: rank %d element %zu is %g, expected %g\n", me, i, at[i],
                     value_at(left, i));
      }
    }
  }

  // ---- 2. a reduction of futures --------------------------------------------------------
  const std::size_t probe = len / 2;
  oneside::future<double> sum = oneside::make_future(0.0);
  for (int r = 0; r < n; ++r) {
    oneside::future<double> element = mailbox.fetch(r).then([probe](oneside::global_ptr<double> b) {
      return oneside::rget(b + static_cast<std::ptrdiff_t>(probe));
    });
    sum = oneside::when_all(sum, element).then([](const std::tuple<double, double>& ab) {
      return std::get<0>(ab) + std::get<1>(ab);
    });
  }
  double expect = 0.0;
  for (int r = 0; r < n; ++r) expect += value_at(r, probe);
  const double got = sum.wait();
  if (got != expect) {
    std::fprintf(stderr, "upcxx_style: rank %d: the reduction gave %g, expected %g\n", me, got,
                 expect);
    ++errors;
  }

  // ---- 3. computation overlapping communication -------------------------------------------
  oneside::barrier(world);  // every rank has checked its block and read the others'
  std::vector<double> squares(len);
  for (std::size_t i = 0; i < len; ++i) squares[i] = value_at(me, i) * 2.0;
  oneside::future<> sent = oneside::rput(std::span<const double>(squares), mine_on_right);
  oneside::future<double> norm = oneside::async([&data] {
    double s = 0.0;
    for (double x : data) s += x * x;
    return std::sqrt(s);
  });
  const double computed = oneside::when_all(sent, norm).wait();
  double reference = 0.0;
  for (double x : data) reference += x * x;
  if (std::abs(computed - std::sqrt(reference)) > 1e-9 * std::sqrt(reference)) {
    std::fprintf(stderr, "upcxx_style: rank %d: the norm is %g, expected %g\n", me, computed,
                 std::sqrt(reference));
    ++errors;
  }
  oneside::barrier(world);  // every neighbour's rput has completed
  if (from_left.where() == me) {
    const double* at = from_left.local();
    for (std::size_t i = 0; i < len; ++i) {
      if (at[i] != value_at(left, i) * 2.0 && errors++ < 5) {
        std::fprintf(stderr, "upcxx_style: rank %d element %zu is %g after the second put\n", me, i,
                     at[i]);
      }
    }
  }
  oneside::barrier(world);  // nobody reads the blocks any more

  // ---- 4. remote deallocation ------------------------------------------------------------
  oneside::deallocate(mine_on_right);
  oneside::barrier(world);
  if (oneside::heap_stats().live_blocks != 1) {  // the dist_object's value is still there
    std::fprintf(stderr, "upcxx_style: rank %d: %zu live blocks after the frees, expected 1\n", me,
                 oneside::heap_stats().live_blocks);
    ++errors;
  }

  const long total_errors = oneside::allreduce(world, errors, oneside::op::sum);
  if (me == 0) {
    if (total_errors == 0) {
      std::printf("upcxx_style: %d ranks, %zu doubles per block\n", n, len);
      std::printf("Solution validates\n");
    } else {
      std::printf("ERROR: %ld mismatches: the solution does not validate\n", total_errors);
    }
  }
  return total_errors == 0 ? 0 : 1;
}
