// Every collective against a serial computation, on the world team and on sub-teams, at
// every team size the suite runs (1, 2, 3, 4, 8 ranks): every predefined type with every op
// the spec allows for it (COM-13), the errors of ops it does not allow, sizes that cross the
// pipelined staging slots, in-place forms and bad arguments (which must change nothing).
#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "reference_ops.hpp"

namespace oneside::test {
namespace {

using all_types =
    std::tuple<bool, char, wchar_t, char8_t, char16_t, char32_t, signed char, unsigned char, short,
               unsigned short, int, unsigned, long, unsigned long, long long, unsigned long long,
               float, double, long double, std::complex<float>, std::complex<double>,
               std::complex<long double>, std::byte, value_index<float>, value_index<double>,
               value_index<long>, value_index<int>, value_index<short>, value_index<long double>>;

constexpr op all_ops[] = {op::sum,    op::prod,   op::min,     op::max,  op::land,
                          op::lor,    op::lxor,   op::band,    op::bor,  op::bxor,
                          op::minloc, op::maxloc, op::replace, op::no_op};

template <class T>
test_array<T> contribution(int r, std::size_t count) {
  test_array<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = test_value<T>(r, i);
  return v;
}

// Fold of members [0, last] of `t` in rank order (the world ranks of t's members give the
// values).
template <class T>
test_array<T> expected_fold(const team& t, op o, std::size_t count, rank_t last) {
  test_array<T> acc = contribution<T>(t.to_world(0), count);
  for (rank_t q = 1; q <= last; ++q) {
    const test_array<T> x = contribution<T>(t.to_world(q), count);
    for (std::size_t i = 0; i < count; ++i) acc[i] = reference_apply(o, acc[i], x[i]);
  }
  return acc;
}

template <class T>
int count_mismatches(const test_array<T>& got, const test_array<T>& want) {
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += same(got[i], want[i]) ? 0 : 1;
  return bad;
}

template <class T>
T sentinel() {
  if constexpr (std::is_same_v<T, std::byte>) {
    return std::byte{0x5a};
  } else if constexpr (is_value_index<T>::value) {
    return T{decltype(T::value)(99), -7};
  } else if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else {
    return T(static_cast<signed char>(99));
  }
}

// Every reduction collective with every op for type T on team t.
template <class T>
void check_reductions(const team& t, std::size_t count) {
  const datatype& dt = datatype::of<T>();
  const test_array<T> in = contribution<T>(world().rank(), count);
  for (op o : all_ops) {
    const std::string what =
        std::string(dt.name()) + " " + std::string(op_name(o)) + " count " + std::to_string(count);
    if (!op_is_valid(o, dt.basic(), op_use::collective)) {
      // Rejected before anything moves: out keeps its sentinel.
      test_array<T> out(std::max<std::size_t>(count, 1), sentinel<T>());
      try {
        allreduce(t, in.data(), out.data(), static_cast<count_t>(count), dt, o);
        ADD_FAILURE() << what << ": allreduce accepted an op the spec does not define";
      } catch (const error& e) {
        EXPECT_EQ(e.error_class(), error_class::op) << what << ": " << e.what();
      }
      EXPECT_EQ(count_mismatches(out, test_array<T>(out.size(), sentinel<T>())), 0) << what;
      continue;
    }
    test_array<T> out(count, sentinel<T>());
    allreduce(t, in.data(), out.data(), static_cast<count_t>(count), dt, o);
    EXPECT_EQ(count_mismatches(out, expected_fold<T>(t, o, count, t.size() - 1)), 0)
        << what << ": allreduce";

    const rank_t root = t.size() - 1;
    test_array<T> rout(count, sentinel<T>());
    reduce(t, in.data(), rout.data(), static_cast<count_t>(count), dt, o, root);
    if (t.rank() == root) {
      EXPECT_EQ(count_mismatches(rout, expected_fold<T>(t, o, count, root)), 0)
          << what << ": reduce";
    } else {
      EXPECT_EQ(count_mismatches(rout, test_array<T>(count, sentinel<T>())), 0)
          << what << ": reduce wrote a non-root's output";
    }

    test_array<T> sout(count, sentinel<T>());
    scan(t, in.data(), sout.data(), static_cast<count_t>(count), dt, o);
    EXPECT_EQ(count_mismatches(sout, expected_fold<T>(t, o, count, t.rank())), 0)
        << what << ": scan";

    test_array<T> xout(count, sentinel<T>());
    exscan(t, in.data(), xout.data(), static_cast<count_t>(count), dt, o);
    if (t.rank() == 0) {
      EXPECT_EQ(count_mismatches(xout, test_array<T>(count, sentinel<T>())), 0)
          << what << ": exscan touched rank 0's output";
    } else {
      EXPECT_EQ(count_mismatches(xout, expected_fold<T>(t, o, count, t.rank() - 1)), 0)
          << what << ": exscan";
    }
  }
}

template <class Tuple, std::size_t... I>
void check_all_types(const team& t, std::size_t count, std::index_sequence<I...>) {
  (check_reductions<std::tuple_element_t<I, Tuple>>(t, count), ...);
}

void check_every_type_and_op(const team& t, std::size_t count) {
  check_all_types<all_types>(t, count, std::make_index_sequence<std::tuple_size_v<all_types>>());
}

class Collectives : public RankTest {};

TEST_F(Collectives, BarrierSeparatesPhases) {
  // Every rank bumps a counter in rank 0's memory... without RMA yet, through allreduce:
  // after a barrier, everyone has left the previous phase; checked by the values each phase
  // sees.
  for (int phase = 0; phase < 50; ++phase) {
    barrier(world());
    const int seen = allreduce(world(), phase, op::min);
    EXPECT_EQ(seen, phase);
  }
}

TEST_F(Collectives, EveryTypeAndOpOnWorld) {
  covers("COM-13");
  for (std::size_t count : {std::size_t{1}, std::size_t{13}, std::size_t{5000}}) {
    check_every_type_and_op(world(), count);
  }
}

TEST_F(Collectives, EveryTypeAndOpOnSubTeams) {
  covers("COM-13");
  // Odd/even halves, members ordered by descending world rank.
  const team half = world().split(rank() % 2, -rank());
  ASSERT_TRUE(half.is_valid());
  check_every_type_and_op(half, 7);
}

TEST_F(Collectives, ZeroCountIsANoOp) {
  std::vector<int> out{42};
  allreduce(world(), static_cast<const void*>(nullptr), out.data(), 0, datatype::of<int>(),
            op::sum);
  EXPECT_EQ(out[0], 42);
  broadcast(world(), nullptr, 0, datatype::of<double>(), 0);
  gather(world(), nullptr, 0, datatype::of<double>(), nullptr, 0);
}

TEST_F(Collectives, LargeReductionsCrossTheStagingSlots) {
  // 70000 doubles = 560 KB and value_index<double> = 1.1 MB: several pipelined steps,
  // and the block-parallel path when there are more than two members.
  constexpr std::size_t n = 70000;
  std::vector<double> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = (rank() + 1) * static_cast<double>(i % 97);
  allreduce(world(), in, out, op::sum);
  const double ranks_sum = size() * (size() + 1) / 2.0;
  int bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    bad += out[i] == ranks_sum * static_cast<double>(i % 97) ? 0 : 1;
  EXPECT_EQ(bad, 0);

  std::vector<value_index<double>> vin(n), vout(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t r = static_cast<std::size_t>(rank());
    vin[i] = {static_cast<double>((r + i) % static_cast<std::size_t>(size())), rank()};
  }
  allreduce(world(), vin, vout, op::maxloc);
  bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // The largest value is size-1, held by the rank r with (r + i) % size == size - 1.
    const int holder = static_cast<int>(
        (static_cast<std::size_t>(2 * size()) - 1 - i % static_cast<std::size_t>(size())) %
        static_cast<std::size_t>(size()));
    bad += (vout[i].value == size() - 1 && vout[i].index == holder) ? 0 : 1;
  }
  EXPECT_EQ(bad, 0);

  std::vector<double> sc(n);
  scan(world(), in, sc, op::sum);
  const double prefix = (rank() + 1) * (rank() + 2) / 2.0;
  bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += sc[i] == prefix * static_cast<double>(i % 97) ? 0 : 1;
  EXPECT_EQ(bad, 0);
}

TEST_F(Collectives, InPlaceReductions) {
  std::vector<long> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = rank() + static_cast<long>(i);
  allreduce(world(), v, v, op::sum);
  const long base = static_cast<long>(size()) * (size() - 1) / 2;
  int bad = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    bad += v[i] == base + size() * static_cast<long>(i) ? 0 : 1;
  EXPECT_EQ(bad, 0);

  std::vector<int> s(10, rank() + 1);
  scan(world(), s, s, op::sum);
  EXPECT_EQ(s[9], (rank() + 1) * (rank() + 2) / 2);
}

TEST_F(Collectives, ScalarForms) {
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
  EXPECT_EQ(allreduce(world(), rank(), op::max), size() - 1);
  EXPECT_EQ(scan(world(), 1, op::sum), rank() + 1);
  EXPECT_EQ(exscan(world(), 1, op::sum), rank());  // rank 0: value-initialized
  EXPECT_EQ(broadcast(world(), rank() * 10, size() - 1), (size() - 1) * 10);
  const int r = reduce(world(), rank() + 1, op::prod, 0);
  if (rank() == 0) {
    int f = 1;
    for (int k = 1; k <= size(); ++k) f *= k;
    EXPECT_EQ(r, f);
  }
  const std::vector<int> all = allgather(world(), rank() * 3);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(size()));
  for (int q = 0; q < size(); ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)], q * 3);
  const std::vector<int> g = gather(world(), rank() + 5, 0);
  if (rank() == 0) {
    ASSERT_EQ(g.size(), static_cast<std::size_t>(size()));
    for (int q = 0; q < size(); ++q) EXPECT_EQ(g[static_cast<std::size_t>(q)], q + 5);
  } else {
    EXPECT_TRUE(g.empty());
  }
}

// Bytes that identify (source rank, destination rank, position).
std::byte pattern(int src, int dst, std::size_t i) {
  return static_cast<std::byte>((src * 31 + dst * 7 + static_cast<int>(i)) & 0xff);
}

TEST_F(Collectives, BroadcastFromEveryRootAtEverySize) {
  for (std::size_t bytes :
       {std::size_t{1}, std::size_t{100}, std::size_t{1} << 20, (std::size_t{1} << 20) + 3}) {
    for (rank_t root = 0; root < size(); ++root) {
      std::vector<std::byte> buf(bytes);
      for (std::size_t i = 0; i < bytes; ++i)
        buf[i] = rank() == root ? pattern(root, 0, i) : std::byte{0};
      broadcast(world(), buf, root);
      int bad = 0;
      for (std::size_t i = 0; i < bytes; ++i) bad += buf[i] == pattern(root, 0, i) ? 0 : 1;
      EXPECT_EQ(bad, 0) << bytes << " bytes from root " << root;
    }
  }
}

TEST_F(Collectives, TeamsDroppedRightAfterRootedCollectives) {
  // The root of a broadcast, or a non-root of a gather, may return before the others have
  // read its data; dropping the team at once must not disturb them (nor later teams, which
  // may reuse the memory). With unreachable peers, readers report to the producer after it
  // returned: its area must outlive those reports.
  constexpr std::size_t bytes = (std::size_t{1} << 17) + 5;
  for (int i = 0; i < 8; ++i) {
    const rank_t root = i % size();
    int bad = 0;
    {
      const team t = world().split(0, rank());
      std::vector<std::byte> buf(bytes);
      for (std::size_t k = 0; k < bytes; ++k)
        buf[k] = rank() == root ? pattern(root, i, k) : std::byte{0};
      broadcast(t, buf, root);
      for (std::size_t k = 0; k < bytes; ++k) bad += buf[k] == pattern(root, i, k) ? 0 : 1;
    }
    {
      const team t = world().split(0, rank());
      std::vector<std::byte> in(bytes / 8);
      for (std::size_t k = 0; k < in.size(); ++k) in[k] = pattern(rank(), i, k);
      std::vector<std::byte> out(rank() == root ? in.size() * static_cast<std::size_t>(size()) : 0);
      gather(t, in, out, root);
      if (rank() == root) {
        for (int q = 0; q < size(); ++q) {
          for (std::size_t k = 0; k < in.size(); ++k)
            bad += out[static_cast<std::size_t>(q) * in.size() + k] == pattern(q, i, k) ? 0 : 1;
        }
      }
    }
    EXPECT_EQ(bad, 0) << "round " << i << ", root " << root;
  }
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
}

TEST_F(Collectives, GatherAndAllgather) {
  for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{100000}}) {
    std::vector<std::byte> in(count);
    for (std::size_t i = 0; i < count; ++i) in[i] = pattern(rank(), 0, i);
    for (rank_t root : {0, size() - 1}) {
      std::vector<std::byte> out(rank() == root ? count * static_cast<std::size_t>(size()) : 0);
      gather(world(), in, out, root);
      if (rank() == root) {
        int bad = 0;
        for (int q = 0; q < size(); ++q) {
          for (std::size_t i = 0; i < count; ++i)
            bad += out[static_cast<std::size_t>(q) * count + i] == pattern(q, 0, i) ? 0 : 1;
        }
        EXPECT_EQ(bad, 0) << "gather of " << count << " to " << root;
      }
    }
    std::vector<std::byte> all(count * static_cast<std::size_t>(size()));
    allgather(world(), in, all);
    int bad = 0;
    for (int q = 0; q < size(); ++q) {
      for (std::size_t i = 0; i < count; ++i)
        bad += all[static_cast<std::size_t>(q) * count + i] == pattern(q, 0, i) ? 0 : 1;
    }
    EXPECT_EQ(bad, 0) << "allgather of " << count;
    // In place: the contribution already sits at this rank's place.
    std::vector<std::byte> inplace(count * static_cast<std::size_t>(size()), std::byte{0});
    std::copy(
        in.begin(), in.end(),
        inplace.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank()) * count));
    allgather(world(), inplace.data() + static_cast<std::size_t>(rank()) * count,
              static_cast<count_t>(count), datatype::of<std::byte>(), inplace.data());
    EXPECT_EQ(inplace, all) << "in-place allgather of " << count;
  }
}

// Rank q contributes (q * 37) % 50001 + q elements: irregular, some larger than a slot.
count_t irregular_count(int q) {
  return (q * 37) % 50001 + q + (q == 1 ? 300000 : 0);
}

TEST_F(Collectives, GathervAndAllgathervWithIrregularCounts) {
  std::vector<count_t> counts(static_cast<std::size_t>(size())), displs(counts.size());
  count_t total = 0;
  for (int q = 0; q < size(); ++q) {
    counts[static_cast<std::size_t>(q)] = irregular_count(q);
    displs[static_cast<std::size_t>(q)] = total + 5;  // gaps between blocks stay untouched
    total += irregular_count(q) + 5;
  }
  std::vector<int> in(static_cast<std::size_t>(irregular_count(rank())));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = rank() * 1000003 + static_cast<int>(i);
  auto check = [&](const std::vector<int>& out, const char* what) {
    int bad = 0;
    for (int q = 0; q < size(); ++q) {
      const auto d = static_cast<std::size_t>(displs[static_cast<std::size_t>(q)]);
      for (std::size_t g = d - 5; g < d; ++g) bad += out[g] == -1 ? 0 : 1;
      for (std::size_t i = 0; i < static_cast<std::size_t>(counts[static_cast<std::size_t>(q)]);
           ++i) {
        bad += out[d + i] == q * 1000003 + static_cast<int>(i) ? 0 : 1;
      }
    }
    EXPECT_EQ(bad, 0) << what;
  };
  for (rank_t root : {0, size() - 1}) {
    std::vector<int> out(rank() == root ? static_cast<std::size_t>(total) : 0, -1);
    gatherv(world(), in, out,
            rank() == root ? std::span<const count_t>(counts) : std::span<const count_t>(),
            rank() == root ? std::span<const count_t>(displs) : std::span<const count_t>(), root);
    if (rank() == root) check(out, "gatherv");
  }
  std::vector<int> out(static_cast<std::size_t>(total), -1);
  allgatherv(world(), in, out, counts, displs);
  check(out, "allgatherv");
}

TEST_F(Collectives, AlltoallAtSeveralSizes) {
  for (std::size_t block : {std::size_t{1}, std::size_t{333}, std::size_t{70000}}) {
    const auto n = static_cast<std::size_t>(size());
    std::vector<std::byte> in(block * n), out(block * n);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t i = 0; i < block; ++i)
        in[j * block + i] = pattern(rank(), static_cast<int>(j), i);
    }
    alltoall(world(), in, out);
    int bad = 0;
    for (std::size_t q = 0; q < n; ++q) {
      for (std::size_t i = 0; i < block; ++i)
        bad += out[q * block + i] == pattern(static_cast<int>(q), rank(), i) ? 0 : 1;
    }
    EXPECT_EQ(bad, 0) << "alltoall block " << block;
    alltoall(world(), in, in);  // in place
    EXPECT_EQ(in, out) << "in-place alltoall block " << block;
  }
}

TEST_F(Collectives, AlltoallvWithIrregularCounts) {
  const auto n = static_cast<std::size_t>(size());
  // Rank s sends (s + 2*d) * 997 % 40000 elements to rank d (some blocks empty).
  auto amount = [](int s, int d) -> count_t {
    return ((s + 2 * d) * 997) % 40000 + (s == d ? 3 : 0);
  };
  std::vector<count_t> sc(n), sd(n), rc(n), rd(n);
  count_t stotal = 0, rtotal = 0;
  for (std::size_t j = 0; j < n; ++j) {
    sc[j] = amount(rank(), static_cast<int>(j));
    sd[j] = stotal;
    stotal += sc[j];
    rc[j] = amount(static_cast<int>(j), rank());
    rd[j] = rtotal;
    rtotal += rc[j] + 1;
  }
  std::vector<double> in(static_cast<std::size_t>(stotal)),
      out(static_cast<std::size_t>(rtotal), -1.0);
  for (std::size_t j = 0; j < n; ++j) {
    for (count_t i = 0; i < sc[j]; ++i)
      in[static_cast<std::size_t>(sd[j] + i)] =
          rank() * 1e6 + static_cast<double>(j) * 1e3 + static_cast<double>(i % 1000);
  }
  alltoallv(world(), in, sc, sd, out, rc, rd);
  int bad = 0;
  for (std::size_t q = 0; q < n; ++q) {
    for (count_t i = 0; i < rc[q]; ++i) {
      bad += out[static_cast<std::size_t>(rd[q] + i)] ==
                     static_cast<double>(q) * 1e6 + rank() * 1e3 + static_cast<double>(i % 1000)
                 ? 0
                 : 1;
    }
    bad += out[static_cast<std::size_t>(rd[q] + rc[q])] == -1.0 ? 0 : 1;  // gap untouched
  }
  EXPECT_EQ(bad, 0);
}

// Everyone else sends to rank 0 only: the others receive nothing and pass a null output buffer,
// rank 0 sends nothing and passes a null input buffer.
TEST_F(Collectives, AlltoallvTakesNullBuffersForSidesWithoutData) {
  const auto n = static_cast<std::size_t>(size());
  std::vector<count_t> sc(n, 0), sd(n, 0), rc(n, 0), rd(n, 0);
  const bool sends = rank() != 0 || size() == 1;
  if (sends) sc[0] = 2;
  std::vector<int> in;
  if (sends) in = {rank(), 10 * rank()};
  std::vector<int> out;
  if (rank() == 0) {
    for (std::size_t j = 0; j < n; ++j) {
      rc[j] = j != 0 || size() == 1 ? 2 : 0;
      rd[j] = static_cast<count_t>(2 * j);
    }
    out.assign(2 * n, -1);
  }
  alltoallv(world(), in.data(), sc, sd, out.data(), rc, rd, datatype::of<int>());
  if (rank() == 0) {
    for (std::size_t j = size() == 1 ? 0 : 1; j < n; ++j) {
      EXPECT_EQ(out[2 * j], static_cast<int>(j));
      EXPECT_EQ(out[2 * j + 1], 10 * static_cast<int>(j));
    }
  }
}

TEST_F(Collectives, BadArgumentsAreRejectedBeforeAnythingMoves) {
  covers("ERR-16");
  std::vector<int> buf(4, 7);
  auto expect_class = [&](auto&& call, error_class ec, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": accepted";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), ec) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(world().rank())),
                std::string::npos)
          << "the message names the rank: " << e.what();
    }
    EXPECT_EQ(buf, std::vector<int>(4, 7)) << what << " changed the buffer";
  };
  expect_class([&] { broadcast(world(), buf, size()); }, error_class::rank, "root == size");
  expect_class([&] { broadcast(world(), buf, -1); }, error_class::rank, "root < 0");
  expect_class([&] { broadcast(world(), buf.data(), -1, datatype::of<int>(), 0); },
               error_class::count, "negative count");
  expect_class(
      [&] { allreduce(world(), buf.data(), buf.data(), 4, datatype::of<int>(), op::replace); },
      error_class::op, "replace in a collective (COM-14)");
  expect_class(
      [&] { allreduce(world(), buf.data(), buf.data(), 4, datatype::of<int>(), op::no_op); },
      error_class::op, "no_op in a collective");
  expect_class(
      [&] { allreduce(world(), buf.data(), buf.data(), 4, datatype::of<int>(), op::minloc); },
      error_class::op, "minloc on int");
  expect_class(
      [&] { reduce(world(), buf.data(), buf.data(), 4, datatype::of<int>(), op::sum, size() + 3); },
      error_class::rank, "reduce root out of range");
  const std::vector<count_t> short_counts(1, 1);
  if (size() > 1) {
    expect_class(
        [&] {
          allgatherv(world(), buf.data(), 1, datatype::of<int>(), buf.data(), short_counts,
                     short_counts);
        },
        error_class::count, "counts of the wrong length");
  }
  expect_class([&] { barrier(team()); }, error_class::comm, "null team");
  // Every rank is still in step after all the rejections.
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
}

}  // namespace
}  // namespace oneside::test
