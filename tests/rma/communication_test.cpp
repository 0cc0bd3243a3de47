// The communication calls (COM-1 … COM-19) on every window flavour (create over user memory,
// allocate, allocate_shared, dynamic) under each synchronization mode of this issue (fence,
// lock/unlock, lock_all/flush): contiguous and derived layouts, address arithmetic, the
// target itself and proc_null as targets, accumulate with every op against a serial fold,
// get_accumulate, fetch_and_op, compare_and_swap, and every bad input of the area, each
// rejected before anything changes at the target.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "reference_ops.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::mode;

struct com_case {
  flavor kind;
  sync_mode sync;
};

void PrintTo(const com_case& c, std::ostream* os) {
  *os << flavor_name(c.kind) << "/" << sync_name(c.sync);
}

std::vector<com_case> every_case() {
  std::vector<com_case> v;
  for (flavor f : all_flavors) {
    for (sync_mode s : {sync_mode::fence, sync_mode::lock, sync_mode::lock_all}) {
      v.push_back({f, s});
    }
  }
  return v;
}

class Communication : public RankTest, public ::testing::WithParamInterface<com_case> {
 protected:
  void SetUp() override {
    if (!flavor_available(kind())) {
      GTEST_SKIP() << "allocate_shared over world() needs every rank on this node";
    }
  }
  flavor kind() const { return GetParam().kind; }
  sync_mode sync() const { return GetParam().sync; }
};

TEST_P(Communication, ContiguousPutAndGetReachEveryTarget) {
  covers("COM-1", "COM-6", "COM-9", "SYN-5", "SYN-16", "SYN-17", "SYN-25", "MEM-8", "MEM-10");
  constexpr std::size_t n = 16;
  const auto p = static_cast<std::size_t>(size());
  test_window tw = make_window(kind(), world(), p * n * sizeof(int), sizeof(int));
  int* mine = tw.local_as<int>();
  std::fill(mine, mine + p * n, -1);
  settle(tw.win);
  std::vector<int> block(n);
  for (std::size_t i = 0; i < n; ++i) block[i] = rank() * 1000 + static_cast<int>(i);
  const std::vector<rank_t> everyone = all_ranks(world());
  in_epoch(tw.win, sync(), everyone, [&](rank_t t) {
    tw.win.put(block.data(), static_cast<count_t>(n), datatype::of<int>(), t,
               tw.disp(t, static_cast<disp_t>(static_cast<std::size_t>(rank()) * n)),
               static_cast<count_t>(n), datatype::of<int>());
  });
  settle(tw.win);
  int wrong = 0;
  for (std::size_t q = 0; q < p; ++q) {
    for (std::size_t i = 0; i < n; ++i) {
      wrong += mine[q * n + i] == static_cast<int>(q) * 1000 + static_cast<int>(i) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0) << "elements not written by the puts";
  // Gets: from every target, the block its right neighbour's origin wrote there.
  std::vector<int> got(p * n, -5);
  const auto slot = static_cast<std::size_t>(right());
  in_epoch(tw.win, sync(), everyone, [&](rank_t t) {
    tw.win.get(got.data() + static_cast<std::size_t>(t) * n, static_cast<count_t>(n),
               datatype::of<int>(), t, tw.disp(t, static_cast<disp_t>(slot * n)),
               static_cast<count_t>(n), datatype::of<int>());
  });
  wrong = 0;
  for (std::size_t t = 0; t < p; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      wrong += got[t * n + i] == static_cast<int>(slot) * 1000 + static_cast<int>(i) ? 0 : 1;
    }
  }
  EXPECT_EQ(wrong, 0) << "elements the gets did not return";
  settle(tw.win);
}

// Blocks of 2 KiB and more move with oneside's vector copy (runtime/copy.hpp), whatever the
// relative alignment of origin and target; here every origin puts a 3000- and a 70000-byte
// block at a displacement a few bytes off a 64-byte boundary (a different one per rank), from
// an origin buffer shifted otherwise, and gets its right neighbour's blocks back into a
// shifted buffer. Every byte is checked, and the gap bytes between the blocks stay untouched.
TEST_P(Communication, LargeBlocksAtAnyAlignmentKeepEveryByte) {
  covers("COM-1", "COM-9");
  const auto p = static_cast<std::size_t>(size());
  for (const std::size_t n : {std::size_t{3000}, std::size_t{70000}}) {
    const std::size_t slot_bytes = n + 128;  // a slot per origin: 64 B of gap each side
    test_window tw = make_window(kind(), world(), p * slot_bytes, 1);
    auto* mine = tw.local_as<unsigned char>();
    std::fill(mine, mine + p * slot_bytes, static_cast<unsigned char>(0xEE));
    settle(tw.win);
    const auto shift_of = [](std::size_t r) { return 64 + (r * 8 + 8) % 64; };  // 8, 16, ...
    const auto value = [](std::size_t origin, std::size_t i) {
      return static_cast<unsigned char>((origin * 37 + i * 131 + (i >> 9)) & 0xFF);
    };
    const auto me = static_cast<std::size_t>(rank());
    std::vector<unsigned char> src(n + 64);
    const std::size_t src_shift = (me * 24 + 3) % 64;
    for (std::size_t i = 0; i < n; ++i) src[src_shift + i] = value(me, i);
    const std::vector<rank_t> everyone = all_ranks(world());
    in_epoch(tw.win, sync(), everyone, [&](rank_t t) {
      tw.win.put(src.data() + src_shift, static_cast<count_t>(n), datatype::of<unsigned char>(), t,
                 tw.disp(t, static_cast<disp_t>(me * slot_bytes + shift_of(me))),
                 static_cast<count_t>(n), datatype::of<unsigned char>());
    });
    settle(tw.win);
    std::size_t wrong = 0, gap_changed = 0;
    for (std::size_t q = 0; q < p; ++q) {
      const unsigned char* slot = mine + q * slot_bytes;
      for (std::size_t i = 0; i < slot_bytes; ++i) {
        const std::size_t at = shift_of(q);
        if (i >= at && i < at + n) {
          wrong += slot[i] == value(q, i - at) ? 0u : 1u;
        } else {
          gap_changed += slot[i] == 0xEE ? 0u : 1u;
        }
      }
    }
    EXPECT_EQ(wrong, 0u) << n << "-byte blocks: bytes not written by the puts";
    EXPECT_EQ(gap_changed, 0u) << n << "-byte blocks: bytes outside the blocks changed";
    // Gets: from every target, the block its right neighbour's origin wrote there, into a
    // buffer shifted by yet another amount.
    const auto slot = static_cast<std::size_t>(right());
    const std::size_t dst_shift = (me * 40 + 5) % 64;
    std::vector<unsigned char> got(p * (n + 64), 0x11);
    in_epoch(tw.win, sync(), everyone, [&](rank_t t) {
      tw.win.get(got.data() + static_cast<std::size_t>(t) * (n + 64) + dst_shift,
                 static_cast<count_t>(n), datatype::of<unsigned char>(), t,
                 tw.disp(t, static_cast<disp_t>(slot * slot_bytes + shift_of(slot))),
                 static_cast<count_t>(n), datatype::of<unsigned char>());
    });
    wrong = 0;
    for (std::size_t t = 0; t < p; ++t) {
      for (std::size_t i = 0; i < n; ++i) {
        wrong += got[t * (n + 64) + dst_shift + i] == value(slot, i) ? 0u : 1u;
      }
    }
    EXPECT_EQ(wrong, 0u) << n << "-byte blocks: bytes the gets did not return";
    settle(tw.win);
  }
}

struct pair_record {
  int a;
  double b;
};

// Where the derived-layout test puts each case in the target's 512 bytes (disp_unit 1).
constexpr std::size_t at_vector = 0, at_indexed = 128, at_struct = 256, at_subarray = 320,
                      at_strided_sum = 416, at_resized = 448, at_hvector = 496, layout_bytes = 512;

TEST_P(Communication, DerivedTargetLayoutsPlaceEveryElement) {
  covers("COM-6", "COM-7", "COM-9", "COM-12", "SYN-36");
  test_window tw = make_window(kind(), world(), layout_bytes, 1);
  std::memset(tw.local(), 0xFF, layout_bytes);
  settle(tw.win);
  const datatype& i32 = datatype::of<int>();
  const int twelve[12] = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111};
  const int three[3] = {7, 8, 9};
  const pair_record rec{42 + rank(), 2.5 + rank()};
  const int six[6] = {200, 201, 202, 203, 204, 205};
  const int resized_values[3] = {300, 301, 302};
  const short shorts[2] = {11, 12};
  const std::vector<rank_t> target{right()};
  in_epoch(tw.win, sync(), target, [&](rank_t t) {
    // Each datatype is dropped as soon as the call returns (SYN-36).
    {
      const datatype vt = datatype::vector(3, 4, 8, i32);  // 3 blocks of 4 ints, stride 8
      tw.win.put(twelve, 12, i32, t, tw.disp(t, at_vector), 1, vt);
    }
    {
      const count_t lens[3] = {1, 1, 1};
      const count_t displs[3] = {5, 1, 9};
      const datatype it = datatype::indexed(lens, displs, i32);
      tw.win.put(three, 3, i32, t, tw.disp(t, at_indexed), 1, it);
    }
    {
      const count_t lens[2] = {1, 1};
      const std::ptrdiff_t displs[2] = {offsetof(pair_record, a), offsetof(pair_record, b)};
      const datatype members[2] = {i32, datatype::of<double>()};
      const datatype st = datatype::structure(lens, displs, members);
      tw.win.put(&rec, 1, st, t, tw.disp(t, at_struct), 1, st);
    }
    {
      const count_t sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
      const datatype sa =
          datatype::subarray(sizes, subsizes, starts, datatype::array_order::c, i32);
      tw.win.put(six, 6, i32, t, tw.disp(t, at_subarray), 1, sa);
    }
    {
      const datatype rt = datatype::resized(i32, 0, 12);  // one int every 12 bytes
      tw.win.put(resized_values, 3, i32, t, tw.disp(t, at_resized), 3, rt);
    }
    {
      const datatype hv = datatype::hvector(2, 1, 6, datatype::of<short>());
      tw.win.put(shorts, 2, datatype::of<short>(), t, tw.disp(t, at_hvector), 1, hv);
    }
    {
      // Accumulate into a strided target type built from the same basic type (COM-12).
      const datatype every_other = datatype::vector(3, 1, 2, i32);
      tw.win.accumulate(three, 3, i32, t, tw.disp(t, at_strided_sum), 1, every_other, op::sum);
    }
    // 13 ints do not fit a target type of 12 (COM-6): rejected, nothing written.
    expect_error(error_class::type, "put", [&] {
      const int thirteen[13] = {-5, -5, -5, -5, -5, -5, -5, -5, -5, -5, -5, -5, -5};
      const datatype vt = datatype::vector(3, 4, 8, i32);
      tw.win.put(thirteen, 13, i32, t, tw.disp(t, at_vector), 1, vt);
    });
  });
  settle(tw.win);
  // What the left neighbour's puts must have made of this rank's memory.
  std::vector<std::byte> want(layout_bytes, std::byte{0xFF});
  const auto place = [&](std::size_t at, const void* v, std::size_t n) {
    std::memcpy(want.data() + at, v, n);
  };
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t j = 0; j < 4; ++j) {
      place(at_vector + (b * 8 + j) * sizeof(int), &twelve[b * 4 + j], sizeof(int));
    }
  }
  place(at_indexed + 5 * sizeof(int), &three[0], sizeof(int));
  place(at_indexed + 1 * sizeof(int), &three[1], sizeof(int));
  place(at_indexed + 9 * sizeof(int), &three[2], sizeof(int));
  const pair_record left_rec{42 + left(), 2.5 + left()};
  place(at_struct + offsetof(pair_record, a), &left_rec.a, sizeof(int));
  place(at_struct + offsetof(pair_record, b), &left_rec.b, sizeof(double));
  const std::size_t sub_index[6] = {6, 7, 8, 11, 12, 13};  // (1,1) (1,2) (1,3) (2,1) (2,2) (2,3)
  for (std::size_t k = 0; k < 6; ++k) {
    place(at_subarray + sub_index[k] * sizeof(int), &six[k], sizeof(int));
  }
  for (std::size_t k = 0; k < 3; ++k) {
    place(at_resized + k * 12, &resized_values[k], sizeof(int));
  }
  for (std::size_t k = 0; k < 3; ++k) {
    const int sum = three[k] - 1;  // onto 0xFFFFFFFF = -1
    place(at_strided_sum + 2 * k * sizeof(int), &sum, sizeof(int));
  }
  place(at_hvector, &shorts[0], sizeof(short));
  place(at_hvector + 6, &shorts[1], sizeof(short));
  int wrong = 0;
  std::size_t first_wrong = layout_bytes;
  for (std::size_t b = 0; b < layout_bytes; ++b) {
    if (tw.local()[b] != want[b]) {
      ++wrong;
      first_wrong = std::min(first_wrong, b);
    }
  }
  EXPECT_EQ(wrong, 0) << "bytes differ from the layout, first at byte " << first_wrong;

  // Gets with derived types on either side: origin scatter (COM-9) and target gather.
  int scattered[24];
  std::fill_n(scattered, 24, -7);
  int gathered[6] = {0, 0, 0, 0, 0, 0};
  int picked[3] = {0, 0, 0};
  const rank_t source = right();  // holds what this rank put above
  in_epoch(tw.win, sync(), std::vector<rank_t>{source}, [&](rank_t t) {
    const datatype every_other = datatype::vector(12, 1, 2, i32);
    const datatype blocks = datatype::vector(3, 4, 8, i32);
    tw.win.get(scattered, 1, every_other, t, tw.disp(t, at_vector), 1, blocks);
    const count_t sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    const datatype sa = datatype::subarray(sizes, subsizes, starts, datatype::array_order::c, i32);
    tw.win.get(gathered, 6, i32, t, tw.disp(t, at_subarray), 1, sa);
    const count_t lens[3] = {1, 1, 1};
    const count_t displs[3] = {5, 1, 9};
    const datatype it = datatype::indexed(lens, displs, i32);
    tw.win.get(picked, 3, i32, t, tw.disp(t, at_indexed), 1, it);
  });
  for (std::size_t k = 0; k < 24; ++k) {
    EXPECT_EQ(scattered[k], k % 2 == 0 ? twelve[k / 2] : -7) << "origin slot " << k;
  }
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(gathered[k], six[k]) << "subarray element " << k;
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(picked[k], three[k]) << "indexed element " << k;
  settle(tw.win);
}

// Thousands of runs in one call (more than an iovec call takes: IOV_MAX is 1024), both ways.
TEST_P(Communication, ManyRunsInOneCallMoveCompletely) {
  covers("COM-6", "COM-9");
  constexpr std::size_t runs = 5000;
  test_window tw = make_window(kind(), world(), 2 * runs * sizeof(int), sizeof(int));
  int* mine = tw.local_as<int>();
  std::fill_n(mine, 2 * runs, -1);
  settle(tw.win);
  const datatype& i32 = datatype::of<int>();
  const datatype every_other = datatype::vector(static_cast<count_t>(runs), 1, 2, i32);
  std::vector<int> src(runs);
  for (std::size_t i = 0; i < runs; ++i) src[i] = rank() * 100000 + static_cast<int>(i);
  in_epoch(tw.win, sync(), std::vector<rank_t>{right()}, [&](rank_t t) {
    tw.win.put(src.data(), static_cast<count_t>(runs), i32, t, tw.disp(t, 0), 1, every_other);
  });
  settle(tw.win);
  int wrong = 0;
  for (std::size_t i = 0; i < 2 * runs; ++i) {
    const int want = i % 2 == 0 ? left() * 100000 + static_cast<int>(i / 2) : -1;
    wrong += mine[i] == want ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "elements wrong after a put of " << runs << " runs";
  // And back: the odd slots of the right neighbour (still -1) and its even ones, interleaved
  // into this rank's buffer by an origin type of as many runs.
  std::vector<int> back(2 * runs, -7);
  in_epoch(tw.win, sync(), std::vector<rank_t>{right()}, [&](rank_t t) {
    tw.win.get(back.data(), 1, every_other, t, tw.disp(t, 0), 1, every_other);
  });
  wrong = 0;
  for (std::size_t i = 0; i < 2 * runs; ++i) {
    const int want = i % 2 == 0 ? rank() * 100000 + static_cast<int>(i / 2) : -7;
    wrong += back[i] == want ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "elements wrong after a get of " << runs << " runs";
  settle(tw.win);
}

TEST_P(Communication, TheTargetMayBeTheCallerItself) {
  covers("COM-3", "SEM-6");
  constexpr int rounds = 100;
  test_window tw = make_window(kind(), world(), 4 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 4, std::int64_t{0});
  settle(tw.win);
  const std::vector<rank_t> self{rank()};
  const std::int64_t two[2] = {rank() * 10 + 1, rank() * 10 + 2};
  in_epoch(tw.win, sync(), self,
           [&](rank_t t) { tw.win.put(std::span<const std::int64_t>(two, 2), t, tw.disp(t, 0)); });
  std::int64_t back[2] = {0, 0};
  std::vector<std::int64_t> tickets(rounds, -1);
  const std::int64_t one = 1;
  in_epoch(
      tw.win, sync(), self,
      [&](rank_t t) {
        tw.win.get(std::span<std::int64_t>(back, 2), t, tw.disp(t, 0));
        for (int i = 0; i < rounds; ++i) {
          tw.win.fetch_and_op(&one, &tickets[static_cast<std::size_t>(i)],
                              datatype::of<std::int64_t>(), t, tw.disp(t, 3), op::sum);
        }
      },
      rma::lock_type::exclusive);
  EXPECT_EQ(back[0], two[0]);
  EXPECT_EQ(back[1], two[1]);
  // One origin, one location: the fetches come back in issue order (SEM-6).
  for (int i = 0; i < rounds; ++i) EXPECT_EQ(tickets[static_cast<std::size_t>(i)], i);
  settle(tw.win);
  EXPECT_EQ(mine[3], rounds);
  EXPECT_EQ(mine[0], two[0]);
}

TEST_P(Communication, ProcNullTargetsChangeNothing) {
  covers("COM-4", "SYN-35");
  test_window tw = make_window(kind(), world(), 4 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 4, std::int64_t{-1});
  settle(tw.win);
  const datatype& i64 = datatype::of<std::int64_t>();
  const std::int64_t src[2] = {5, 6};
  std::int64_t got[2] = {77, 77};
  std::int64_t result[2] = {88, 88};
  std::int64_t fetched = 99;
  std::int64_t swapped = 111;
  const std::int64_t compare = -1;
  // The epoch covers a real target (lock needs one); proc_null is valid in any epoch.
  in_epoch(tw.win, sync(), std::vector<rank_t>{right()}, [&](rank_t) {
    expect_ok("operations to proc_null", [&] {
      tw.win.put(src, 2, i64, proc_null, 0, 2, i64);
      tw.win.get(got, 2, i64, proc_null, 0, 2, i64);
      tw.win.accumulate(src, 2, i64, proc_null, 0, 2, i64, op::sum);
      tw.win.get_accumulate(src, 2, i64, result, 2, i64, proc_null, 0, 2, i64, op::sum);
      tw.win.fetch_and_op(&src[0], &fetched, i64, proc_null, 0, op::sum);
      tw.win.compare_and_swap(&src[0], &compare, &swapped, i64, proc_null, 0);
      const datatype vt = datatype::vector(2, 1, 3, i64);
      tw.win.put(src, 2, i64, proc_null, 0, 1, vt);
    });
  });
  EXPECT_EQ(got[0], 77);
  EXPECT_EQ(got[1], 77);
  EXPECT_EQ(result[0], 88);
  EXPECT_EQ(result[1], 88);
  EXPECT_EQ(fetched, 99);
  EXPECT_EQ(swapped, 111);
  settle(tw.win);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mine[i], -1) << "element " << i;
}

// ---- accumulate with every op ------------------------------------------------------------

constexpr op all_ops[] = {op::sum,    op::prod,   op::min,     op::max,  op::land,
                          op::lor,    op::lxor,   op::band,    op::bor,  op::bxor,
                          op::minloc, op::maxloc, op::replace, op::no_op};
constexpr std::size_t op_count = std::size(all_ops);

// Every rank accumulates its contribution (test_value(rank, i)) into every target, one region
// per op. Valid ops must give the fold of the initial value (test_value(size, i)) and every
// contribution (these ops are commutative and the values exact, so the order of the origins
// does not matter); replace leaves one of the contributions in each element; ops the type
// does not allow (and no_op) are rejected with error(op) and leave their region unchanged.
template <class T>
void check_every_op(flavor kind, sync_mode sync) {
  SCOPED_TRACE(std::string(datatype::of<T>().name()));
  constexpr std::size_t count = 5;
  const datatype& dt = datatype::of<T>();
  const int p = world().size();
  test_window tw = make_window(kind, world(), op_count * count * sizeof(T), sizeof(T));
  T* mine = tw.local_as<T>();
  for (std::size_t k = 0; k < op_count; ++k) {
    for (std::size_t i = 0; i < count; ++i) mine[k * count + i] = test_value<T>(p, i);
  }
  settle(tw.win);
  test_array<T> contribution(count);
  for (std::size_t i = 0; i < count; ++i) contribution[i] = test_value<T>(world().rank(), i);
  in_epoch(tw.win, sync, all_ranks(world()), [&](rank_t t) {
    for (std::size_t k = 0; k < op_count; ++k) {
      const op o = all_ops[k];
      const disp_t d = tw.disp(t, static_cast<disp_t>(k * count));
      const auto call = [&] {
        tw.win.accumulate(contribution.data(), count, dt, t, d, count, dt, o);
      };
      if (o == op::no_op || !op_is_valid(o, dt.basic(), op_use::accumulate)) {
        expect_error(error_class::op, "accumulate", call);
      } else {
        call();
      }
    }
  });
  settle(tw.win);
  for (std::size_t k = 0; k < op_count; ++k) {
    const op o = all_ops[k];
    SCOPED_TRACE(std::string(op_name(o)));
    const bool valid = o != op::no_op && op_is_valid(o, dt.basic(), op_use::accumulate);
    for (std::size_t i = 0; i < count; ++i) {
      const T got = mine[k * count + i];
      if (!valid) {
        EXPECT_TRUE(same(got, test_value<T>(p, i))) << "rejected op changed element " << i;
      } else if (o == op::replace) {
        bool one_of = false;
        for (int r = 0; r < p; ++r) one_of = one_of || same(got, test_value<T>(r, i));
        EXPECT_TRUE(one_of) << "element " << i << " is no origin's value";
      } else {
        T want = test_value<T>(p, i);
        for (int r = 0; r < p; ++r) want = reference_apply(o, want, test_value<T>(r, i));
        EXPECT_TRUE(same(got, want)) << "element " << i;
      }
    }
  }
  settle(tw.win);
}

TEST_P(Communication, AccumulateWithEveryOpMatchesASerialFold) {
  covers("COM-11", "COM-13", "COM-14", "COM-15", "SEM-3");
  check_every_op<int>(kind(), sync());
  check_every_op<long>(kind(), sync());
  check_every_op<double>(kind(), sync());
  check_every_op<value_index<double>>(kind(), sync());
  check_every_op<bool>(kind(), sync());
  check_every_op<unsigned char>(kind(), sync());
}

TEST_P(Communication, GetAccumulateFetchesIntoAnyLayoutAndNoOpIgnoresTheOrigin) {
  covers("COM-15", "COM-16", "COM-12");
  test_window tw = make_window(kind(), world(), 8 * sizeof(int), sizeof(int));
  int* mine = tw.local_as<int>();
  for (int i = 0; i < 8; ++i) mine[i] = 10 + i;
  settle(tw.win);
  const datatype& i32 = datatype::of<int>();
  const int add[4] = {1, 2, 3, 4};
  int old[8];
  std::fill_n(old, 8, -9);
  int peek[4] = {0, 0, 0, 0};
  int single = 0;
  in_epoch(tw.win, sync(), std::vector<rank_t>{right()}, [&](rank_t t) {
    const datatype strided = datatype::vector(4, 1, 2, i32);
    tw.win.get_accumulate(add, 4, i32, old, 1, strided, t, tw.disp(t, 0), 4, i32, op::sum);
    // no_op: the origin is ignored, so null with count 0 is fine (COM-15).
    tw.win.get_accumulate(nullptr, 0, i32, peek, 4, i32, t, tw.disp(t, 4), 4, i32, op::no_op);
    const int ignored = 12345;
    tw.win.fetch_and_op(&ignored, &single, i32, t, tw.disp(t, 7), op::no_op);
  });
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(old[k], k % 2 == 0 ? 10 + k / 2 : -9) << "result slot " << k;
  }
  for (int k = 0; k < 4; ++k) EXPECT_EQ(peek[k], 14 + k) << "no_op result " << k;
  EXPECT_EQ(single, 17);
  settle(tw.win);
  const int want[8] = {11, 13, 15, 17, 14, 15, 16, 17};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(mine[k], want[k]) << "target element " << k;
}

TEST_P(Communication, FetchAndOpHandsOutEveryTicketOnce) {
  covers("COM-17", "SEM-3");
  constexpr std::size_t n = 20;
  test_window tw = make_window(kind(), world(), sizeof(std::int64_t), sizeof(std::int64_t));
  *tw.local_as<std::int64_t>() = 0;
  settle(tw.win);
  std::vector<std::int64_t> tickets(n, -1);
  const std::int64_t one = 1;
  in_epoch(tw.win, sync(), std::vector<rank_t>{0}, [&](rank_t t) {
    for (std::size_t i = 0; i < n; ++i) {
      tw.win.fetch_and_op(&one, &tickets[i], datatype::of<std::int64_t>(), t, tw.disp(t, 0),
                          op::sum);
    }
  });
  std::vector<std::int64_t> all(n * static_cast<std::size_t>(size()));
  allgather(world(), tickets, all);
  std::sort(all.begin(), all.end());
  int wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    wrong += all[i] == static_cast<std::int64_t>(i) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "tickets are not exactly 0 … " << all.size() - 1;
  settle(tw.win);
  if (rank() == 0) {
    EXPECT_EQ(*tw.local_as<std::int64_t>(), static_cast<std::int64_t>(all.size()));
  }
}

TEST_P(Communication, CompareAndSwapHasExactlyOneWinner) {
  covers("COM-18", "SEM-3");
  test_window tw = make_window(kind(), world(), sizeof(int), sizeof(int));
  *tw.local_as<int>() = 0;
  settle(tw.win);
  int seen = -1;
  const int mine = rank() + 1;
  const int zero = 0;
  in_epoch(tw.win, sync(), std::vector<rank_t>{0}, [&](rank_t t) {
    tw.win.compare_and_swap(&mine, &zero, &seen, datatype::of<int>(), t, tw.disp(t, 0));
  });
  const std::vector<int> all = allgather(world(), seen);
  const auto winners = std::count(all.begin(), all.end(), 0);
  EXPECT_EQ(winners, 1);
  const auto winner = std::find(all.begin(), all.end(), 0) - all.begin();
  const int final_value = static_cast<int>(winner) + 1;
  if (seen != 0) {
    EXPECT_EQ(seen, final_value) << "a loser must see the winner's value";
  }
  // A failing compare leaves the target unchanged and returns its value.
  int again = -1;
  const int other = -5;
  const int wrong_guess = 12345;
  in_epoch(tw.win, sync(), std::vector<rank_t>{0}, [&](rank_t t) {
    tw.win.compare_and_swap(&other, &wrong_guess, &again, datatype::of<int>(), t, tw.disp(t, 0));
  });
  EXPECT_EQ(again, final_value);
  settle(tw.win);
  if (rank() == 0) {
    EXPECT_EQ(*tw.local_as<int>(), final_value);
  }
}

// ---- bad input ------------------------------------------------------------------------------

// A window of 16 bytes (disp_unit 1) whose memory is followed by 16 guard bytes (create and
// dynamic; for allocate_shared the next member's segment follows). Every bad call below is
// rejected with its class and changes nothing; one valid put of 4 bytes at 12 lands.
TEST_P(Communication, BadInputIsRejectedAndChangesNothing) {
  covers("COM-8", "COM-9", "COM-10", "COM-6", "COM-12", "COM-13", "COM-15", "COM-17", "COM-18",
         "SYN-1", "SYN-15", "SYN-32", "ERR-7", "ERR-11", "ERR-12", "ERR-16", "ERR-17");
  constexpr std::size_t bytes = 16, guard = 16;
  test_window tw = make_window(kind(), world(), bytes, 1, {}, guard);
  std::byte* mine = tw.local();
  const auto initial = [](std::size_t b) { return static_cast<std::byte>(b * 3 + 1); };
  for (std::size_t b = 0; b < bytes; ++b) mine[b] = initial(b);
  for (std::size_t b = bytes; b < tw.memory.size(); ++b) tw.memory[b] = std::byte{0xA5};
  settle(tw.win);

  const datatype& i32 = datatype::of<int>();
  const datatype& i64 = datatype::of<std::int64_t>();
  const datatype& f64 = datatype::of<double>();
  const std::int64_t eight = 0x0102030405060708;
  const int ints[4] = {-1, -2, -3, -4};
  const double dbl[2] = {1.0, 2.0};
  const int valid = 0x11223344;

  // Outside any epoch, and after a fence that opened none (SYN-1, SYN-32).
  expect_error(error_class::rma_sync, "put",
               [&] { tw.win.put(&valid, 1, i32, right(), tw.disp(right(), 0), 1, i32); });
  tw.win.fence(mode::nosucceed);
  expect_error(error_class::rma_sync, "put",
               [&] { tw.win.put(&valid, 1, i32, right(), tw.disp(right(), 0), 1, i32); });
  barrier(world());

  std::int64_t sink = 555;
  int sink_ints[4] = {9, 9, 9, 9};
  in_epoch(tw.win, sync(), std::vector<rank_t>{right()}, [&](rank_t t) {
    const auto d = [&](disp_t k) { return tw.disp(t, k); };
    // COM-8, COM-9: every byte the target type touches must lie in the window.
    expect_error(error_class::rma_range, "put",
                 [&] { tw.win.put(&eight, 1, i64, t, d(12), 1, i64); });
    expect_error(error_class::rma_range, "put",
                 [&] { tw.win.put(&valid, 1, i32, t, d(16), 1, i32); });
    expect_error(error_class::rma_range, "get",
                 [&] { tw.win.get(&sink, 1, i64, t, d(12), 1, i64); });
    expect_error(error_class::rma_range, "accumulate",
                 [&] { tw.win.accumulate(ints, 2, i32, t, d(12), 2, i32, op::sum); });
    expect_error(error_class::rma_range, "fetch_and_op",
                 [&] { tw.win.fetch_and_op(&eight, &sink, i64, t, d(12), op::sum); });
    expect_error(error_class::rma_range, "compare_and_swap",
                 [&] { tw.win.compare_and_swap(&eight, &eight, &sink, i64, t, d(12)); });
    expect_error(error_class::rma_range, "put", [&] {
      const datatype wide = datatype::vector(2, 1, 4, i32);  // ints at bytes 0 and 16
      tw.win.put(ints, 2, i32, t, d(0), 1, wide);
    });
    if (kind() == flavor::dynamic) {
      // Displacements are addresses: one byte below the region is outside it.
      expect_error(error_class::rma_range, "put",
                   [&] { tw.win.put(&valid, 1, i32, t, d(-1), 1, i32); });
    } else {
      expect_error(error_class::disp, "put", [&] { tw.win.put(&valid, 1, i32, t, -1, 1, i32); });
      expect_error(error_class::disp, "get", [&] { tw.win.get(&sink, 1, i64, t, -8, 1, i64); });
    }
    // COM-10: rank, count.
    expect_error(error_class::rank, "put", [&] { tw.win.put(&valid, 1, i32, size(), 0, 1, i32); });
    expect_error(error_class::rank, "put", [&] { tw.win.put(&valid, 1, i32, -1, 0, 1, i32); });
    expect_error(error_class::rank, "get",
                 [&] { tw.win.get(&sink, 1, i64, size() + 5, 0, 1, i64); });
    expect_error(error_class::count, "put", [&] { tw.win.put(&valid, -1, i32, t, d(0), -1, i32); });
    expect_error(error_class::count, "put", [&] { tw.win.put(&valid, 1, i32, t, d(0), -1, i32); });
    expect_error(error_class::count, "get",
                 [&] { tw.win.get(sink_ints, -2, i32, t, d(0), 1, i32); });
    expect_error(error_class::count, "accumulate",
                 [&] { tw.win.accumulate(ints, -1, i32, t, d(0), -1, i32, op::sum); });
    // COM-6: type signatures must match (no truncation either way).
    expect_error(error_class::type, "put", [&] { tw.win.put(ints, 2, i32, t, d(0), 1, i32); });
    expect_error(error_class::type, "put",
                 [&] { tw.win.put(&valid, 1, i32, t, d(0), 1, datatype::of<float>()); });
    expect_error(error_class::type, "get", [&] { tw.win.get(sink_ints, 1, i32, t, d(0), 2, i32); });
    // COM-12, COM-13, COM-15: op and type rules of the accumulate family.
    expect_error(error_class::op, "accumulate",
                 [&] { tw.win.accumulate(ints, 1, i32, t, d(0), 1, i32, op::no_op); });
    expect_error(error_class::op, "accumulate",
                 [&] { tw.win.accumulate(dbl, 1, f64, t, d(0), 1, f64, op::band); });
    expect_error(error_class::op, "accumulate",
                 [&] { tw.win.accumulate(ints, 1, i32, t, d(0), 1, i32, op::minloc); });
    expect_error(error_class::op, "accumulate", [&] {
      const char c[2] = {'a', 'b'};
      tw.win.accumulate(c, 2, datatype::of<char>(), t, d(0), 2, datatype::of<char>(), op::sum);
    });
    expect_error(error_class::op, "fetch_and_op",
                 [&] { tw.win.fetch_and_op(dbl, &sink, f64, t, d(0), op::bxor); });
    expect_error(error_class::type, "accumulate", [&] {
      const count_t lens[2] = {1, 1};
      const std::ptrdiff_t displs[2] = {0, 8};
      const datatype members[2] = {i32, f64};
      const datatype mixed = datatype::structure(lens, displs, members);
      const pair_record rec{1, 2.0};
      tw.win.accumulate(&rec, 1, mixed, t, d(0), 1, mixed, op::sum);
    });
    expect_error(error_class::type, "accumulate", [&] {
      tw.win.accumulate(ints, 1, i32, t, d(0), 1, datatype::of<float>(), op::sum);
    });
    expect_error(error_class::type, "get_accumulate", [&] {
      float r = 0;
      tw.win.get_accumulate(ints, 1, i32, &r, 1, datatype::of<float>(), t, d(0), 1, i32, op::sum);
    });
    // COM-17: fetch_and_op takes a predefined type only.
    expect_error(error_class::type, "fetch_and_op", [&] {
      const datatype one_int = datatype::contiguous(1, i32);
      int r = 0;
      tw.win.fetch_and_op(ints, &r, one_int, t, d(0), op::sum);
    });
    // COM-18: no floating point in compare_and_swap.
    expect_error(error_class::type, "compare_and_swap", [&] {
      double r = 0;
      tw.win.compare_and_swap(&dbl[0], &dbl[1], &r, f64, t, d(0));
    });
    expect_error(error_class::type, "compare_and_swap", [&] {
      const float a = 1, b = 2;
      float r = 0;
      tw.win.compare_and_swap(&a, &b, &r, datatype::of<float>(), t, d(0));
    });
    // Inside lock(t), other ranks are not accessible (SYN-15).
    if (sync() == sync_mode::lock && size() >= 2) {
      expect_error(error_class::rma_sync, "put",
                   [&] { tw.win.put(&valid, 1, i32, rank(), tw.disp(rank(), 0), 1, i32); });
    }
    // Count 0 is a valid no-op (COM-10); the window still works after every error (ERR-17).
    expect_ok("put of count 0", [&] { tw.win.put(ints, 0, i32, t, d(0), 0, i32); });
    expect_ok("put of 4 bytes at 12", [&] { tw.win.put(&valid, 1, i32, t, d(12), 1, i32); });
  });
  EXPECT_EQ(sink, 555) << "a rejected get or fetch wrote its result";
  for (int k = 0; k < 4; ++k) EXPECT_EQ(sink_ints[k], 9) << "a rejected get wrote element " << k;
  settle(tw.win);
  std::byte want[bytes];
  for (std::size_t b = 0; b < bytes; ++b) want[b] = initial(b);
  std::memcpy(want + 12, &valid, sizeof valid);
  for (std::size_t b = 0; b < bytes; ++b) EXPECT_EQ(mine[b], want[b]) << "window byte " << b;
  for (std::size_t b = bytes; b < tw.memory.size(); ++b) {
    EXPECT_EQ(tw.memory[b], std::byte{0xA5}) << "guard byte " << b - bytes;
  }
}

INSTANTIATE_TEST_SUITE_P(FlavorsAndSyncModes, Communication, ::testing::ValuesIn(every_case()),
                         [](const ::testing::TestParamInfo<com_case>& i) {
                           return flavor_name(i.param.kind) + "_" + sync_name(i.param.sync);
                         });

// ---- address arithmetic -------------------------------------------------------------------

class AddressArithmetic : public RankTest {};

TEST_F(AddressArithmetic, DisplacementTimesTheTargetsDispUnit) {
  covers("COM-5", "WIN-3");
  constexpr std::size_t n = 1000;
  const rank_t target = (rank() + 1) % size();
  const rank_t origin = (rank() + size() - 1) % size();
  for (flavor f : {flavor::allocate, flavor::create, flavor::allocate_shared}) {
    if (!flavor_available(f)) continue;
    SCOPED_TRACE(flavor_name(f));
    {
      test_window tw = make_window(f, world(), n * sizeof(double), sizeof(double));
      std::fill_n(tw.local_as<double>(), n, -1.0);
      settle(tw.win);
      tw.win.fence();
      tw.win.put(1.5 + rank(), target, 997);
      tw.win.fence();
      settle(tw.win);
      const double* mem = tw.local_as<double>();
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(mem[i], i == 997 ? 1.5 + origin : -1.0) << "element " << i;
      }
    }
    {
      // disp_unit 1: the same displacement is byte 997, unaligned.
      test_window tw = make_window(f, world(), n * sizeof(double), 1);
      std::memset(tw.local(), 0, n * sizeof(double));
      settle(tw.win);
      const double v = 1.5 + rank();
      tw.win.fence();
      tw.win.put(&v, sizeof v, datatype::of<std::byte>(), target, 997, sizeof v,
                 datatype::of<std::byte>());
      tw.win.fence();
      settle(tw.win);
      double landed = 0;
      std::memcpy(&landed, tw.local() + 997, sizeof landed);
      EXPECT_EQ(landed, 1.5 + origin);
      int nonzero = 0;
      for (std::size_t b = 0; b < n * sizeof(double); ++b) {
        if (b >= 997 && b < 997 + sizeof v) continue;
        nonzero += tw.local()[b] != std::byte{0} ? 1 : 0;
      }
      EXPECT_EQ(nonzero, 0);
    }
  }
}

}  // namespace
}  // namespace oneside::test
