// The chapter's examples as tests, each checking its result exactly: the permutation gather
// with derived datatypes and with one get per element, the accumulate scatter (EX-1 … EX-3);
// the completion semantics of start/put/complete and lock/put/unlock (EX-4, EX-5); the
// memory-model examples in their corrected, unified-model form (EX-6 … EX-12); the halo
// exchanges with fence assertions, PSCW and split phases (EX-13 … EX-16), double buffering with
// NOCHECK (EX-17); the counting barrier, Peterson's lock and the compare_and_swap spin lock
// (EX-18 … EX-20); request-based pipelining (EX-21); the distributed linked list (EX-22); the
// figures (EX-F2/F3, EX-F4, EX-F6, EX-F7/F8) and the register example (EX-R). Figure 11.5
// (EX-F5) is Pscw.FigureElevenFiveGroupsDifferPerProcess in pscw_test.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

class Examples : public RankTest {};

constexpr std::size_t m = 1000;  // elements per rank in Examples 11.1 … 11.3

// A random permutation of 0 … P*m-1, the same on every rank (made by rank 0, broadcast).
std::vector<std::int64_t> global_permutation() {
  const std::size_t total = m * static_cast<std::size_t>(world().size());
  std::vector<std::int64_t> perm(total);
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  if (world().rank() == 0) {
    std::mt19937_64 gen(20240611);
    std::shuffle(perm.begin(), perm.end(), gen);
  }
  broadcast(world(), perm, 0);
  return perm;
}

// B on rank j holds B[k] = j*m + k, so gathering B(map) yields the map itself.
std::vector<float> b_of_rank() {
  std::vector<float> b(m);
  for (std::size_t k = 0; k < m; ++k) {
    b[k] = static_cast<float>(static_cast<std::size_t>(world().rank()) * m + k);
  }
  return b;
}

TEST_F(Examples, Ex1GatherWithDerivedDatatypes) {
  covers("EX-1", "COM-7", "SYN-36");
  const std::vector<std::int64_t> perm = global_permutation();
  const auto p = static_cast<std::size_t>(size());
  const std::size_t me = static_cast<std::size_t>(rank());
  std::vector<float> b = b_of_rank();
  std::vector<float> a(m, -1.0f);
  rma::window w = rma::window::create(world(), b.data(), m * sizeof(float), sizeof(float));
  settle(w);
  w.fence();
  {
    // Per target j: which local i come from j, and from which k there (Example 11.1).
    std::vector<std::vector<count_t>> from_i(p), at_k(p);
    for (std::size_t i = 0; i < m; ++i) {
      const auto g = static_cast<std::size_t>(perm[me * m + i]);
      from_i[g / m].push_back(static_cast<count_t>(i));
      at_k[g / m].push_back(static_cast<count_t>(g % m));
    }
    for (std::size_t j = 0; j < p; ++j) {
      const datatype otype = datatype::indexed_block(1, from_i[j], datatype::of<float>());
      const datatype ttype = datatype::indexed_block(1, at_k[j], datatype::of<float>());
      w.get(a.data(), 1, otype, static_cast<rank_t>(j), 0, 1, ttype);
    }  // the datatypes are freed here, before the fence completes the gets (SYN-36)
  }
  w.fence();
  int wrong = 0;
  for (std::size_t i = 0; i < m; ++i) {
    wrong += a[i] == static_cast<float>(perm[me * m + i]) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "elements of A != B(map)";
  w.fence(rma::mode::nosucceed);
}

TEST_F(Examples, Ex2GatherWithOneGetPerElement) {
  covers("EX-2", "COM-3");
  const std::vector<std::int64_t> perm = global_permutation();
  const std::size_t me = static_cast<std::size_t>(rank());
  std::vector<float> b = b_of_rank();
  std::vector<float> a(m, -1.0f);
  rma::window w = rma::window::create(world(), b.data(), m * sizeof(float), sizeof(float));
  settle(w);
  w.fence();
  for (std::size_t i = 0; i < m; ++i) {
    const auto g = static_cast<std::size_t>(perm[me * m + i]);
    w.get(&a[i], 1, datatype::of<float>(), static_cast<rank_t>(g / m), static_cast<disp_t>(g % m),
          1, datatype::of<float>());
  }
  w.fence();
  int wrong = 0;
  for (std::size_t i = 0; i < m; ++i) {
    wrong += a[i] == static_cast<float>(perm[me * m + i]) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "elements of A != B(map) (the same result as Example 11.1)";
  w.fence(rma::mode::nosucceed);
}

// Example 11.3: B(map(i)) += A(i) for every global i, one accumulate per element.
void scatter_accumulate(const std::vector<std::int64_t>& map, const std::vector<float>& a_global,
                        std::vector<float>& b) {
  const std::size_t me = static_cast<std::size_t>(world().rank());
  std::fill(b.begin(), b.end(), 0.0f);
  rma::window w = rma::window::create(world(), b.data(), m * sizeof(float), sizeof(float));
  settle(w);
  w.fence();
  for (std::size_t i = 0; i < m; ++i) {
    const auto g = static_cast<std::size_t>(map[me * m + i]);
    w.accumulate(&a_global[me * m + i], 1, datatype::of<float>(), static_cast<rank_t>(g / m),
                 static_cast<disp_t>(g % m), 1, datatype::of<float>(), op::sum);
  }
  w.fence();
  w.fence(rma::mode::noprecede | rma::mode::nosucceed);
}

TEST_F(Examples, Ex3ScatterWithAccumulateOneToOne) {
  covers("EX-3", "COM-11", "SEM-3");
  const std::vector<std::int64_t> map = global_permutation();
  const std::size_t total = map.size();
  std::vector<float> a_global(total);
  for (std::size_t g = 0; g < total; ++g) a_global[g] = static_cast<float>(g + 1);
  std::vector<float> b(m);
  scatter_accumulate(map, a_global, b);
  // B = A(map^-1): B_global[map[g]] = A_global[g].
  std::vector<std::size_t> inverse(total);
  for (std::size_t g = 0; g < total; ++g) inverse[static_cast<std::size_t>(map[g])] = g;
  const std::size_t me = static_cast<std::size_t>(rank());
  int wrong = 0;
  for (std::size_t k = 0; k < m; ++k) wrong += b[k] == a_global[inverse[me * m + k]] ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "elements of B != A(map^-1)";
}

TEST_F(Examples, Ex3ScatterWithAccumulateManyToOne) {
  covers("EX-3", "COM-11", "SEM-3");
  const std::size_t total = m * static_cast<std::size_t>(size());
  const std::size_t targets = total / 4;
  std::vector<std::int64_t> map(total);
  std::vector<float> a_global(total);
  for (std::size_t g = 0; g < total; ++g) {
    map[g] = static_cast<std::int64_t>((g * 7) % targets);
    a_global[g] = static_cast<float>(g % 13 + 1);  // integers: every sum is exact
  }
  std::vector<float> b(m);
  scatter_accumulate(map, a_global, b);
  std::vector<float> want_global(total, 0.0f);
  for (std::size_t g = 0; g < total; ++g)
    want_global[static_cast<std::size_t>(map[g])] += a_global[g];
  const std::size_t me = static_cast<std::size_t>(rank());
  int wrong = 0;
  for (std::size_t k = 0; k < m; ++k) wrong += b[k] == want_global[me * m + k] ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "elements of B != the sum of their contributions";
}

// Example 11.21: NSTEPS blocks of N doubles at the target; per step an rget into one of M
// buffers (reused once wait_any frees one from its rput), compute x -> 2x + 1, rput it back.
void pipeline(rma::window& w, rank_t target) {
  constexpr std::size_t nsteps = 64, n = 4096, bufs = 4;
  auto* base = static_cast<double*>(w.base());
  for (std::size_t s = 0; s < nsteps; ++s) std::fill_n(base + s * n, n, static_cast<double>(s));
  settle(w);
  std::vector<std::vector<double>> data(bufs, std::vector<double>(n));
  std::vector<rma::request> put_req;
  put_req.reserve(bufs);
  w.lock_all();
  for (std::size_t step = 0; step < nsteps; ++step) {
    std::size_t j = step;
    if (step >= bufs) {
      const std::optional<std::size_t> done = rma::wait_any(put_req);
      EXPECT_TRUE(done.has_value()) << "wait_any found no active rput request at step " << step;
      j = done.value_or(step % bufs);
    }
    rma::request get_req =
        w.rget(std::span<double>(data[j]), target, static_cast<disp_t>(step * n));
    get_req.wait();
    for (double& x : data[j]) x = 2 * x + 1;
    rma::request put =
        w.rput(std::span<const double>(data[j]), target, static_cast<disp_t>(step * n));
    if (step < bufs) {
      put_req.push_back(std::move(put));
    } else {
      put_req[j] = std::move(put);
    }
  }
  rma::wait_all(put_req);
  w.unlock_all();
  barrier(world());
  settle(w);
  int wrong = 0;
  for (std::size_t s = 0; s < nsteps; ++s) {
    for (std::size_t i = 0; i < n; ++i)
      wrong += base[s * n + i] == 2.0 * static_cast<double>(s) + 1 ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "target elements not 2x+1";
}

TEST_F(Examples, Ex21RequestPipeliningToSelfAndToANeighbour) {
  covers("EX-21", "REQ-3", "REQ-4", "REQ-8");
  rma::window w =
      rma::window::allocate(world(), std::size_t{64} * 4096 * sizeof(double), sizeof(double));
  {
    SCOPED_TRACE("target = self");
    pipeline(w, rank());
  }
  {
    SCOPED_TRACE("target = right neighbour");
    pipeline(w, (rank() + 1) % size());
  }
}

// Example 11.22, with the erratum: nil is { disp = MPI_BOTTOM (0), rank = -1 }.
struct llist_ptr {
  std::int64_t disp;
  int rank;
};
struct llist_elem {
  llist_ptr next;
  int value;
};
constexpr llist_ptr nil{0, -1};
constexpr disp_t next_rank_at = offsetof(llist_elem, next) + offsetof(llist_ptr, rank);
constexpr disp_t next_disp_at = offsetof(llist_elem, next) + offsetof(llist_ptr, disp);

TEST_F(Examples, Ex22DistributedLinkedListOnADynamicWindow) {
  covers("EX-22", "WIN-13", "WIN-14", "COM-15", "COM-18", "COM-14", "SEM-5");
  constexpr int num_elems = 10;
  std::vector<std::unique_ptr<llist_elem>> my_elems;
  rma::window w = rma::window::create_dynamic(world());
  const auto alloc_elem = [&](int value) {
    auto e = std::make_unique<llist_elem>();
    e->value = value;
    e->next = nil;
    w.attach(e.get(), sizeof(llist_elem));  // local: no one is told but through the list
    const auto disp = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(e.get()));
    my_elems.push_back(std::move(e));
    return disp;
  };
  llist_ptr head{0, 0};
  if (rank() == 0) head.disp = alloc_elem(-1);
  head.disp = broadcast(world(), head.disp, 0);
  llist_ptr tail = head;
  const datatype& i32 = datatype::of<int>();
  const datatype& aint = datatype::of<std::int64_t>();

  w.lock_all();
  for (int i = 0; i < num_elems; ++i) {
    const llist_ptr new_elem{alloc_elem(rank()), rank()};
    bool success = false;
    do {
      llist_ptr next_tail = nil;
      w.compare_and_swap(&new_elem.rank, &nil.rank, &next_tail.rank, i32, tail.rank,
                         tail.disp + next_rank_at);
      w.flush(tail.rank);
      success = next_tail.rank == nil.rank;
      if (success) {
        w.accumulate(&new_elem.disp, 1, aint, tail.rank, tail.disp + next_disp_at, 1, aint,
                     op::replace);
        w.flush(tail.rank);
        tail = new_elem;
      } else {
        // The tail is stale: chase the next pointer once its displacement is set.
        do {
          w.get_accumulate(nullptr, 0, aint, &next_tail.disp, 1, aint, tail.rank,
                           tail.disp + next_disp_at, 1, aint, op::no_op);
          w.flush(tail.rank);
        } while (next_tail.disp == nil.disp);
        tail = next_tail;
      }
    } while (!success);
  }
  w.unlock_all();
  barrier(world());

  // Rank 0 walks the list and counts.
  if (rank() == 0) {
    std::vector<int> per_rank(static_cast<std::size_t>(size()), 0);
    int nodes = 0, head_value = 0, bad_values = 0;
    llist_ptr at = head;
    const int limit = size() * num_elems + 5;
    w.lock_all();
    while (nodes < limit) {
      llist_elem e{};
      w.get(&e, static_cast<count_t>(sizeof e), datatype::of<std::byte>(), at.rank, at.disp,
            static_cast<count_t>(sizeof e), datatype::of<std::byte>());
      w.flush(at.rank);
      if (nodes == 0) {
        head_value = e.value;
      } else if (e.value >= 0 && e.value < size()) {
        ++per_rank[static_cast<std::size_t>(e.value)];
      } else {
        ++bad_values;
      }
      ++nodes;
      if (e.next.rank == nil.rank) {
        EXPECT_EQ(e.next.disp, nil.disp) << "the last node's next is not nil";
        break;
      }
      at = e.next;
    }
    w.unlock_all();
    EXPECT_EQ(nodes, size() * num_elems + 1);
    EXPECT_EQ(head_value, -1);
    EXPECT_EQ(bad_values, 0);
    for (int r = 0; r < size(); ++r) {
      EXPECT_EQ(per_rank[static_cast<std::size_t>(r)], num_elems) << "elements of rank " << r;
    }
  }
  barrier(world());
  for (auto it = my_elems.rbegin(); it != my_elems.rend(); ++it) w.detach(it->get());
  w.free();
}

// ---- helpers of Examples 11.4 … 11.20 and the figures ----------------------------------------

using rma::lock_type;
using rma::mode;

oneside::group group_of(std::vector<rank_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());  // left == right at P <= 2
  return oneside::group(std::move(ranks));
}
oneside::group neighbours() {
  return group_of({world().to_world(left()), world().to_world(right())});
}

// The partner of this rank when ranks work in pairs (0-1, 2-3, …); no_rank for the odd one out.
rank_t pair_partner() {
  const rank_t p = world().rank() ^ 1;
  return p < world().size() ? p : no_rank;
}

// A window of `slots` int64 per rank, all -1, published.
rma::window int64_window(std::size_t slots) {
  rma::window w = rma::window::allocate(world(), slots * sizeof(std::int64_t), 8);
  std::fill_n(static_cast<std::int64_t*>(w.base()), slots, std::int64_t{-1});
  settle(w);
  return w;
}
std::int64_t* slots_of(rma::window& w) {
  return static_cast<std::int64_t*>(w.base());
}

const datatype& i64() {
  return datatype::of<std::int64_t>();
}

// Example 11.4: the target posts 150 ms late; start/put/complete at the origin finishes (maybe
// only after the post), complete makes the origin buffer reusable (overwriting it right after
// does not change what arrives), and after wait the target holds the put value. Ranks work in
// pairs, the even rank being the origin.
TEST_F(Examples, Ex4StartPutCompleteWithALatePost) {
  covers("EX-4", "SYN-8", "SYN-9", "SYN-10", "SYN-11", "SEM-8", "MEM-7", "MEM-9");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rma::window w = int64_window(1);
  const rank_t partner = pair_partner();
  if (partner != no_rank && rank() % 2 == 0) {
    std::int64_t buf = 4000 + rank();
    w.start(group_of({partner}));
    w.put(&buf, 1, i64(), partner, 0, 1, i64());
    w.complete();
    buf = -2;  // the buffer is the origin's again
    EXPECT_EQ(buf, -2);
  } else if (partner != no_rank) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    w.post(group_of({partner}));
    w.wait();
    EXPECT_EQ(slots_of(w)[0], 4000 + partner) << "the data of the late-posted epoch";
  }
  settle(w);
}

// Example 11.5 (a): after lock(EXCLUSIVE)/put/unlock the put is complete at the target, so a
// third rank told so afterwards reads it with lock/get/unlock (each rank puts to its right
// neighbour and tells the rank after it). (b) locking the local window blocks until the lock is
// held: rank 1 holds lock(EXCLUSIVE, 0) for 150 ms; rank 0's lock(EXCLUSIVE, 0) returns only
// after rank 1 began to unlock, and then rank 0's loads see rank 1's puts.
TEST_F(Examples, Ex5LockPutUnlockCompletesAtTheTarget) {
  covers("EX-5", "SYN-15", "SYN-16", "SYN-19", "MEM-10", "SEM-8");
  rma::window w = int64_window(3);
  notice_board board;
  const rank_t reader_of_mine = (rank() + 2) % size();  // reads what I put to right()
  const rank_t written_by = (rank() + size() - 2) % size();
  w.lock(lock_type::exclusive, right());
  w.put(std::int64_t{500 + rank()}, right(), 2);
  w.unlock(right());
  board.send(reader_of_mine, 0, 1);
  EXPECT_TRUE(board.await(0, 1)) << "no message from rank " << written_by;
  std::int64_t got = -1;
  w.lock(lock_type::shared, left());
  w.get(std::span<std::int64_t>(&got, 1), left(), 2);
  w.unlock(left());
  EXPECT_EQ(got, 500 + written_by) << "(a) the third rank's get after the origin's unlock";
  barrier(world());

  if (size() >= 2) {
    if (rank() == 1) {
      w.lock(lock_type::exclusive, 0);
      w.put(std::int64_t{4242}, 0, 0);
      w.flush(0);  // the lock is held at rank 0 now, even if lock was lazy
      board.send(0, 1, 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      w.put(std::int64_t{now_ns()}, 0, 1);  // taken just before unlock
      w.unlock(0);
    } else if (rank() == 0) {
      EXPECT_TRUE(board.await(1, 1));
      w.lock(lock_type::exclusive, 0);
      const std::int64_t locked_at = now_ns();
      EXPECT_EQ(slots_of(w)[0], 4242) << "(b) local load after the local lock";
      EXPECT_GE(locked_at, slots_of(w)[1])
          << "(b) lock(EXCLUSIVE, self) returned while rank 1 still held the lock";
      w.unlock(0);
    }
  }
  settle(w);
}

// Example 11.6: B publishes a local store with lock(EXCLUSIVE, B); store; unlock(B); after the
// barrier A's lock/get/unlock reads it, in every iteration (every rank is B for its own window
// and A for its right neighbour's).
TEST_F(Examples, Ex6StoreUnderLockIsSeenByTheNextLockGet) {
  covers("EX-6", "MEM-11", "SYN-15", "SYN-16");
  rma::window w = int64_window(1);
  const int iters = scaled(1000);
  int wrong = 0;
  for (int it = 0; it < iters; ++it) {
    w.lock(lock_type::exclusive, rank());
    slots_of(w)[0] = std::int64_t{rank()} * 100000 + it;
    w.unlock(rank());
    barrier(world());
    std::int64_t got = -1;
    w.lock(lock_type::exclusive, right());
    w.get(std::span<std::int64_t>(&got, 1), right(), 0);
    w.unlock(right());
    wrong += got == std::int64_t{right()} * 100000 + it ? 0 : 1;
    barrier(world());
  }
  EXPECT_EQ(wrong, 0) << "iterations whose get missed B's store";
  settle(w);
}

// Example 11.7, corrected: B stores X and calls win_sync inside lock_all before the barrier; A's
// lock_all/get/flush_local/unlock_all always returns the new value.
TEST_F(Examples, Ex7StoreWithWinSyncBeforeTheBarrierIsSeen) {
  covers("EX-7", "SEM-14", "SYN-28", "SYN-26", "MEM-11");
  rma::window w = int64_window(1);
  const int iters = scaled(1000);
  int wrong = 0;
  for (int it = 0; it < iters; ++it) {
    w.lock_all();
    slots_of(w)[0] = std::int64_t{rank()} * 100000 + it;
    w.sync();
    barrier(world());
    std::int64_t got = -1;
    w.get(std::span<std::int64_t>(&got, 1), right(), 0);
    w.flush_local(right());
    wrong += got == std::int64_t{right()} * 100000 + it ? 0 : 1;
    w.unlock_all();
    barrier(world());
  }
  EXPECT_EQ(wrong, 0) << "iterations whose get missed the store";
  settle(w);
}

// Example 11.8: A lock(EXCLUSIVE, B)/put/unlock; barrier; B's lock(EXCLUSIVE, B)/load/unlock sees
// the put. The variant without the barrier: B polls (lock; load; unlock) until the value
// appears, and it does.
TEST_F(Examples, Ex8RemoteUpdateIsSeenByTheOwnersLockedLoad) {
  covers("EX-8", "MEM-12", "MEM-3", "SYN-19");
  rma::window w = int64_window(1);
  const int iters = 200;
  int wrong = 0, lost = 0;
  for (int it = 0; it < iters; ++it) {
    const auto value = [&](rank_t r, int phase) {
      return std::int64_t{r} * 100000 + 2 * it + phase;
    };
    w.lock(lock_type::exclusive, right());
    w.put(value(rank(), 0), right(), 0);
    w.unlock(right());
    barrier(world());
    w.lock(lock_type::exclusive, rank());
    wrong += slots_of(w)[0] == value(left(), 0) ? 0 : 1;
    w.unlock(rank());
    barrier(world());
    // Polling instead of the barrier.
    w.lock(lock_type::exclusive, right());
    w.put(value(rank(), 1), right(), 0);
    w.unlock(right());
    const bool seen = wait_for([&] {
      w.lock(lock_type::exclusive, rank());
      const std::int64_t x = slots_of(w)[0];
      w.unlock(rank());
      return x == value(left(), 1);
    });
    lost += seen ? 0 : 1;
    barrier(world());
  }
  EXPECT_EQ(wrong, 0) << "locked loads after the barrier that missed the put";
  EXPECT_EQ(lost, 0) << "polls that never saw the put";
  settle(w);
}

// Example 11.9, corrected: A lock_all/put/flush(B)/barrier/unlock_all; B calls win_sync (inside
// its own lock_all) after the barrier, then its load returns the new value.
TEST_F(Examples, Ex9LoadAfterBarrierAndWinSyncSeesThePut) {
  covers("EX-9", "SEM-14", "SYN-28", "SYN-24", "MEM-12");
  rma::window w = int64_window(1);
  const int iters = scaled(1000);
  int wrong = 0;
  for (int it = 0; it < iters; ++it) {
    w.lock_all();
    w.put(std::int64_t{rank()} * 100000 + it, right(), 0);
    w.flush(right());
    barrier(world());
    w.sync();
    wrong += slots_of(w)[0] == std::int64_t{left()} * 100000 + it ? 0 : 1;
    w.unlock_all();
    barrier(world());
  }
  EXPECT_EQ(wrong, 0) << "loads after barrier + win_sync that missed the put";
  settle(w);
}

// Example 11.10, corrected: B stores X, lock(SHARED, B), win_sync, barrier; A's
// lock(SHARED, B)/get returns the store (B unlocks only later). The two shared locks a rank
// holds at once are on different targets (SYN-2).
TEST_F(Examples, Ex10WinSyncPublishesAStoreMadeBeforeTheLock) {
  covers("EX-10", "MEM-11", "SYN-28", "SYN-2");
  rma::window w = int64_window(1);
  const int iters = scaled(1000);
  int wrong = 0;
  for (int it = 0; it < iters; ++it) {
    slots_of(w)[0] = std::int64_t{rank()} * 100000 + it;
    w.lock(lock_type::shared, rank());
    w.sync();
    barrier(world());
    if (right() != rank()) w.lock(lock_type::shared, right());
    std::int64_t got = -1;
    w.get(std::span<std::int64_t>(&got, 1), right(), 0);
    w.flush(right());
    wrong += got == std::int64_t{right()} * 100000 + it ? 0 : 1;
    if (right() != rank()) w.unlock(right());
    barrier(world());
    w.unlock(rank());
  }
  EXPECT_EQ(wrong, 0) << "gets that missed the store published by win_sync";
  settle(w);
}

// Example 11.11, corrected: A (rank 0) stores Y, post({A, B}), start({A}), writes X with a put
// to itself, complete, wait; B (rank 1) runs an epoch start({A}) in which it gets Y, then after
// the barrier lock(EXCLUSIVE, A) and gets X and Y: all are the new values. A is in an access and
// an exposure epoch at once (rule 9 of the list).
TEST_F(Examples, Ex11PutToSelfInsidePscwIsPublished) {
  covers("EX-11", "MEM-11", "SYN-2", "SYN-3", "SYN-13");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rma::window w = int64_window(2);  // slot 0: X, slot 1: Y
  const int iters = 40;
  for (int it = 0; it < iters; ++it) {
    const std::int64_t x = 7000 + it, y = 9000 + it;
    if (rank() == 0) {
      slots_of(w)[1] = y;
      w.post(group_of({0, 1}));
      w.start(group_of({0}));
      w.put(x, 0, 0);  // instead of "store X" (which PSCW would not publish)
      w.complete();
      w.wait();
      barrier(world());
    } else if (rank() == 1) {
      std::int64_t y_in_epoch = -1;
      w.start(group_of({0}));
      w.get(std::span<std::int64_t>(&y_in_epoch, 1), 0, 1);
      w.complete();
      EXPECT_EQ(y_in_epoch, y) << "Y got inside the start epoch, iteration " << it;
      barrier(world());
      std::int64_t got[2] = {-1, -1};
      w.lock(lock_type::exclusive, 0);
      w.get(std::span<std::int64_t>(got, 2), 0, 0);
      w.unlock(0);
      EXPECT_EQ(got[0], x) << "X after the barrier, iteration " << it;
      EXPECT_EQ(got[1], y) << "Y after the barrier, iteration " << it;
    } else {
      barrier(world());
    }
    barrier(world());
  }
  settle(w);
}

// Example 11.12, corrected: A lock/put X/unlock to B; barrier; B's post({B}), start({B}), then a
// get of X from itself inside the epoch and a load after wait both return A's value.
TEST_F(Examples, Ex12OwnerReadsARemoteUpdateInsideItsOwnPscwEpoch) {
  covers("EX-12", "MEM-12", "MEM-9", "SYN-2");
  rma::window w = int64_window(1);
  const oneside::group self = group_of({world().to_world(rank())});
  const int iters = 100;
  int wrong_get = 0, wrong_load = 0;
  for (int it = 0; it < iters; ++it) {
    w.lock(lock_type::exclusive, right());
    w.put(std::int64_t{rank()} * 100000 + it, right(), 0);
    w.unlock(right());
    barrier(world());
    const std::int64_t want = std::int64_t{left()} * 100000 + it;
    w.post(self);
    w.start(self);
    std::int64_t got = -1;
    w.get(std::span<std::int64_t>(&got, 1), rank(), 0);
    w.complete();
    w.wait();
    wrong_get += got == want ? 0 : 1;
    wrong_load += slots_of(w)[0] == want ? 0 : 1;
    barrier(world());
  }
  EXPECT_EQ(wrong_get, 0) << "gets from self inside the epoch that missed the put";
  EXPECT_EQ(wrong_load, 0) << "loads after wait that missed the put";
  settle(w);
}

// ---- Examples 11.13 … 11.16: a halo exchange on a ring ----------------------------------------
//
// Every rank owns halo_n cells of a periodic 1-D domain of P*halo_n cells, stored as
// A = [ghostL(halo_h) | interior(halo_n) | ghostR(halo_h)]. One step replaces every cell by a
// stencil of radius halo_h over the old values. Integer arithmetic modulo a prime makes "equal
// to the serial reference" exact, whatever the evaluation order.

constexpr std::size_t halo_n = 100;
constexpr std::size_t halo_h = 2;
constexpr std::size_t halo_len = halo_n + 2 * halo_h;
constexpr int halo_steps = 50;
constexpr std::int64_t halo_mod = 1000003;

enum class stencil { centered, upwind };  // upwind reads only cells to the left

std::int64_t apply(stencil s, const std::int64_t* c) {
  if (s == stencil::upwind) return (3 * c[-2] + 5 * c[-1] + 7 * c[0]) % halo_mod;
  return (c[-2] + 2 * c[-1] + 3 * c[0] + 5 * c[1] + 7 * c[2]) % halo_mod;
}

std::int64_t halo_initial(std::size_t g) {
  return static_cast<std::int64_t>((g * 7919 + 13) % static_cast<std::size_t>(halo_mod));
}

// The whole domain after `steps` steps, computed serially (on every rank: it is cheap).
std::vector<std::int64_t> halo_reference(stencil s, int steps) {
  const std::size_t total = halo_n * static_cast<std::size_t>(world().size());
  std::vector<std::int64_t> ext(total + 2 * halo_h), next(total);
  for (std::size_t g = 0; g < total; ++g) next[g] = halo_initial(g);
  for (int t = 0; t < steps; ++t) {
    std::copy(next.begin(), next.end(), ext.begin() + halo_h);
    for (std::size_t k = 0; k < halo_h; ++k) {
      ext[k] = next[total - halo_h + k];
      ext[halo_h + total + k] = next[k];
    }
    for (std::size_t g = 0; g < total; ++g) next[g] = apply(s, &ext[halo_h + g]);
  }
  return next;
}

// This rank's A with the initial interior and ghosts (the neighbours' initial boundary cells).
void halo_init(std::int64_t* a) {
  const std::size_t total = halo_n * static_cast<std::size_t>(world().size());
  const std::size_t first = halo_n * static_cast<std::size_t>(world().rank());
  for (std::size_t i = 0; i < halo_len; ++i) {
    a[i] = halo_initial((first + total + i - halo_h) % total);
  }
}

// Cells [from, to) of the interior from `old` (a copy of A, ghosts included).
void halo_update(stencil s, std::int64_t* a, const std::vector<std::int64_t>& old, std::size_t from,
                 std::size_t to) {
  for (std::size_t i = from; i < to; ++i) a[halo_h + i] = apply(s, &old[halo_h + i]);
}
void halo_update_all(stencil s, std::int64_t* a) {
  const std::vector<std::int64_t> old(a, a + halo_len);
  halo_update(s, a, old, 0, halo_n);
}

// Counts the interior cells that differ from the reference.
int halo_mismatches(const std::int64_t* a, const std::vector<std::int64_t>& ref) {
  const std::size_t first = halo_n * static_cast<std::size_t>(world().rank());
  int wrong = 0;
  for (std::size_t i = 0; i < halo_n; ++i) wrong += a[halo_h + i] == ref[first + i] ? 0 : 1;
  return wrong;
}

// The boundary block as one element of a derived datatype (the examples' fromtype/totype).
datatype halo_block() {
  return datatype::contiguous(static_cast<count_t>(halo_h), i64());
}
constexpr disp_t ghost_left_at = 0;
constexpr disp_t ghost_right_at = static_cast<disp_t>(halo_h + halo_n);
constexpr disp_t first_cells_at = static_cast<disp_t>(halo_h);
constexpr disp_t last_cells_at = static_cast<disp_t>(halo_n);  // halo_h + halo_n - halo_h

// The puts of one exchange: my first cells to the left neighbour's right ghost, my last cells to
// the right neighbour's left ghost (upwind: only the latter).
void halo_puts(rma::window& w, stencil s, const std::int64_t* a) {
  const datatype block = halo_block();
  if (s == stencil::centered) {
    w.put(a + first_cells_at, 1, block, left(), ghost_right_at, 1, block);
  }
  w.put(a + last_cells_at, 1, block, right(), ghost_left_at, 1, block);
}
// The gets of one exchange: the neighbours' boundary cells into my ghosts.
void halo_gets(rma::window& w, stencil s, std::int64_t* a) {
  const datatype block = halo_block();
  w.get(a + ghost_left_at, 1, block, left(), last_cells_at, 1, block);
  if (s == stencil::centered) {
    w.get(a + ghost_right_at, 1, block, right(), first_cells_at, 1, block);
  }
}

rma::window halo_window() {
  rma::window w = rma::window::allocate(world(), halo_len * sizeof(std::int64_t), 8);
  halo_init(slots_of(w));
  settle(w);
  return w;
}

// Example 11.13: update(A); fence(NOPRECEDE); puts to the neighbours; fence(NOSTORE|NOSUCCEED).
// NOPRECEDE may skip the barrier but not the ordering: a put of the next step must not land in
// a neighbour still computing this one (rule 6 of the list).
TEST_F(Examples, Ex13HaloExchangeWithFenceAssertions) {
  covers("EX-13", "SYN-5", "SYN-6", "SYN-32", "SYN-36", "MEM-8", "COM-7");
  rma::window w = halo_window();
  std::int64_t* a = slots_of(w);
  for (int t = 0; t < halo_steps; ++t) {
    halo_update_all(stencil::centered, a);
    w.fence(mode::noprecede);
    halo_puts(w, stencil::centered, a);
    w.fence(mode::nostore | mode::nosucceed);
  }
  EXPECT_EQ(halo_mismatches(a, halo_reference(stencil::centered, halo_steps)), 0)
      << "cells that differ from the serial reference";
  settle(w);
}

// Example 11.14: update_boundary; fence(NOPUT|NOPRECEDE); gets of the neighbours' boundary
// overlapping update_core; fence(NOSUCCEED). Same result as Example 11.13.
TEST_F(Examples, Ex14HaloExchangeWithGetsOverlappingTheCore) {
  covers("EX-14", "SYN-32", "MEM-7", "MEM-8");
  rma::window w = halo_window();
  std::int64_t* a = slots_of(w);
  for (int t = 0; t < halo_steps; ++t) {
    const std::vector<std::int64_t> old(a, a + halo_len);
    halo_update(stencil::centered, a, old, 0, halo_h);  // update_boundary
    halo_update(stencil::centered, a, old, halo_n - halo_h, halo_n);
    w.fence(mode::noput | mode::noprecede);
    halo_gets(w, stencil::centered, a);
    halo_update(stencil::centered, a, old, halo_h, halo_n - halo_h);  // update_core
    w.fence(mode::nosucceed);
  }
  EXPECT_EQ(halo_mismatches(a, halo_reference(stencil::centered, halo_steps)), 0)
      << "cells that differ from the serial reference (and from Example 11.13)";
  settle(w);
}

// Example 11.15: Example 11.13 with update(A); post(fromgroup); start(togroup); puts; complete;
// wait. Also with non-symmetric groups: the upwind stencil only sends to the right, so each
// rank posts for its left neighbour and starts towards its right one.
TEST_F(Examples, Ex15HaloExchangeWithPscw) {
  covers("EX-15", "SYN-8", "SYN-10", "SYN-11", "SYN-13", "MEM-9");
  for (stencil s : {stencil::centered, stencil::upwind}) {
    SCOPED_TRACE(s == stencil::centered ? "symmetric groups" : "non-symmetric groups");
    const oneside::group from =
        s == stencil::centered ? neighbours() : group_of({world().to_world(left())});
    const oneside::group to =
        s == stencil::centered ? neighbours() : group_of({world().to_world(right())});
    rma::window w = halo_window();
    std::int64_t* a = slots_of(w);
    for (int t = 0; t < halo_steps; ++t) {
      halo_update_all(s, a);
      w.post(from);
      w.start(to);
      halo_puts(w, s, a);
      w.complete();
      w.wait();
    }
    EXPECT_EQ(halo_mismatches(a, halo_reference(s, halo_steps)), 0)
        << "cells that differ from the serial reference";
    settle(w);
  }
}

// Example 11.16: update_boundary; post(togroup, NOPUT); start(fromgroup); gets; update_core;
// complete; wait. Same result as Example 11.14.
TEST_F(Examples, Ex16SplitPhasePscwWithGets) {
  covers("EX-16", "SYN-31", "SYN-13", "SYN-36", "MEM-7");
  rma::window w = halo_window();
  std::int64_t* a = slots_of(w);
  const oneside::group nbrs = neighbours();
  for (int t = 0; t < halo_steps; ++t) {
    const std::vector<std::int64_t> old(a, a + halo_len);
    halo_update(stencil::centered, a, old, 0, halo_h);
    halo_update(stencil::centered, a, old, halo_n - halo_h, halo_n);
    w.post(nbrs, mode::noput);
    w.start(nbrs);
    halo_gets(w, stencil::centered, a);
    halo_update(stencil::centered, a, old, halo_h, halo_n - halo_h);
    w.complete();
    w.wait();
  }
  EXPECT_EQ(halo_mismatches(a, halo_reference(stencil::centered, halo_steps)), 0)
      << "cells that differ from the serial reference (and from Example 11.14)";
  settle(w);
}

// ---- Example 11.17: double buffering with NOCHECK ---------------------------------------------
//
// Two arrays A0, A1 = [ghost | interior(n) | ghost] in windows win0, win1. The printed sequence:
//   post(win0, NOCHECK|NOPUT); barrier;
//   loop { update2(A1, A0); start(win0, NOCHECK); gets into A0's ghosts; update1(A1);
//          post(win1, NOCHECK|NOPUT); complete(win0); wait(win0);
//          update2(A0, A1); start(win1, NOCHECK); gets into A1's ghosts; update1(A0);
//          [post(win0, …)]; complete(win1); wait(win1) }
// The ghosts an update reads were fetched one half-step earlier; the serial reference simulates
// every rank's arrays through exactly that sequence, so any get that reads the wrong
// generation (an epoch matched to the wrong post) changes the result.

constexpr std::size_t db_n = 64;
constexpr std::size_t db_len = db_n + 2;
constexpr int db_iterations = 20;

void db_update2(std::int64_t* dst, const std::int64_t* src) {  // dst from dst and src's ghosts
  for (std::size_t i = 1; i <= db_n; ++i) {
    dst[i] = (3 * dst[i] + src[i - 1] + 2 * src[i + 1]) % halo_mod;
  }
}
void db_update1(std::int64_t* a) {  // a from a only
  for (std::size_t i = 1; i <= db_n; ++i) a[i] = (a[i] * 7 + 11) % halo_mod;
}
std::int64_t db_initial(int which, std::size_t g) {
  return static_cast<std::int64_t>((g * 104729 + static_cast<std::size_t>(which) * 31 + 5) %
                                   static_cast<std::size_t>(halo_mod));
}
void db_init(int which, rank_t r, std::int64_t* a) {
  const std::size_t total = db_n * static_cast<std::size_t>(world().size());
  const std::size_t first = db_n * static_cast<std::size_t>(r);
  for (std::size_t i = 0; i < db_len; ++i)
    a[i] = db_initial(which, (first + total + i - 1) % total);
}

// Every rank's A0 and A1 after the loop, simulated serially.
void db_reference(std::vector<std::vector<std::int64_t>>& a0,
                  std::vector<std::vector<std::int64_t>>& a1) {
  const auto p = static_cast<std::size_t>(world().size());
  a0.assign(p, std::vector<std::int64_t>(db_len));
  a1.assign(p, std::vector<std::int64_t>(db_len));
  for (std::size_t r = 0; r < p; ++r) {
    db_init(0, static_cast<rank_t>(r), a0[r].data());
    db_init(1, static_cast<rank_t>(r), a1[r].data());
  }
  const auto fetch_ghosts = [&](std::vector<std::vector<std::int64_t>>& a) {
    for (std::size_t r = 0; r < p; ++r) {
      a[r][0] = a[(r + p - 1) % p][db_n];
      a[r][db_n + 1] = a[(r + 1) % p][1];
    }
  };
  for (int k = 0; k < db_iterations; ++k) {
    for (std::size_t r = 0; r < p; ++r) db_update2(a1[r].data(), a0[r].data());
    fetch_ghosts(a0);
    for (std::size_t r = 0; r < p; ++r) db_update1(a1[r].data());
    for (std::size_t r = 0; r < p; ++r) db_update2(a0[r].data(), a1[r].data());
    fetch_ghosts(a1);
    for (std::size_t r = 0; r < p; ++r) db_update1(a0[r].data());
  }
}

TEST_F(Examples, Ex17DoubleBufferedCheckerboardWithNocheck) {
  covers("EX-17", "SYN-30", "SYN-31", "SYN-13", "SYN-2", "SYN-3");
  std::vector<std::vector<std::int64_t>> ref0, ref1;
  db_reference(ref0, ref1);
  const oneside::group nbrs = neighbours();
  const auto get_ghosts = [&](rma::window& w, std::int64_t* a) {
    w.get(a, 1, i64(), left(), static_cast<disp_t>(db_n), 1, i64());
    w.get(a + db_n + 1, 1, i64(), right(), 1, 1, i64());
  };
  const int repeats = scaled(100);
  int wrong = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    rma::window win0 = rma::window::allocate(world(), db_len * sizeof(std::int64_t), 8);
    rma::window win1 = rma::window::allocate(world(), db_len * sizeof(std::int64_t), 8);
    std::int64_t* a0 = slots_of(win0);
    std::int64_t* a1 = slots_of(win1);
    db_init(0, rank(), a0);
    db_init(1, rank(), a1);
    settle(win0);
    settle(win1);
    win0.post(nbrs, mode::nocheck | mode::noput);
    barrier(world());  // needed: the starts inside the loop use NOCHECK
    for (int k = 0; k < db_iterations; ++k) {
      db_update2(a1, a0);
      win0.start(nbrs, mode::nocheck);
      get_ghosts(win0, a0);
      db_update1(a1);
      win1.post(nbrs, mode::nocheck | mode::noput);
      win0.complete();
      win0.wait();

      db_update2(a0, a1);
      win1.start(nbrs, mode::nocheck);
      get_ghosts(win1, a1);
      db_update1(a0);
      if (k + 1 < db_iterations) win0.post(nbrs, mode::nocheck | mode::noput);
      win1.complete();
      win1.wait();
    }
    const auto me = static_cast<std::size_t>(rank());
    for (std::size_t i = 0; i < db_len; ++i) {
      wrong += a0[i] == ref0[me][i] ? 0 : 1;
      wrong += a1[i] == ref1[me][i] ? 0 : 1;
    }
    settle(win0);
    settle(win1);
  }
  EXPECT_EQ(wrong, 0) << "cells (over " << repeats << " runs) that differ from the reference";
}

// ---- Examples 11.18 … 11.20: synchronization built from accumulates --------------------------

// Example 11.18: X on rank 0 is set to P with a store + win_sync inside lock_all; every rank
// decrements it with accumulate(SUM, -1) and spins on get_accumulate(NO_OP) + flush until it is
// 0. No rank leaves before the last decrement: every decrement's timestamp (taken just before
// it) is <= every rank's exit time.
TEST_F(Examples, Ex18CountingBarrierWithAccumulate) {
  covers("EX-18", "SYN-17", "SYN-24", "SYN-28", "SEM-3", "SEM-6", "COM-15");
  rma::window w = int64_window(1);
  const int rounds = 20;
  int early = 0, lost = 0;
  for (int round = 0; round < rounds; ++round) {
    w.lock_all();
    if (rank() == 0) {
      slots_of(w)[0] = size();
      w.sync();
    }
    barrier(world());
    const std::int64_t minus_one = -1;
    const std::int64_t decremented_at = now_ns();
    w.accumulate(&minus_one, 1, i64(), 0, 0, 1, i64(), op::sum);
    std::int64_t z = -1;
    const bool reached = wait_for([&] {
      w.get_accumulate(nullptr, 0, i64(), &z, 1, i64(), 0, 0, 1, i64(), op::no_op);
      w.flush(0);
      return z == 0;
    });
    const std::int64_t left_at = now_ns();
    w.unlock_all();
    lost += reached ? 0 : 1;
    const std::vector<std::int64_t> dec = allgather(world(), decremented_at);
    const std::vector<std::int64_t> out = allgather(world(), left_at);
    early += *std::max_element(dec.begin(), dec.end()) <= *std::min_element(out.begin(), out.end())
                 ? 0
                 : 1;
    if (rank() == 0) {
      EXPECT_EQ(slots_of(w)[0], 0) << "X after round " << round;
    }
    barrier(world());
  }
  EXPECT_EQ(lost, 0) << "rounds in which X never reached 0";
  EXPECT_EQ(early, 0) << "rounds in which a rank left before the last decrement";
  settle(w);
}

// Example 11.19: Peterson's algorithm between ranks 0 (A: flag X, turn T, and the shared data)
// and 1 (B: flag Y), with accumulate(REPLACE) writes, get_accumulate(NO_OP) reads and flushes,
// repeated: each iteration re-raises the own flag with accumulate(REPLACE, 1) + flush (the
// first one is the printed store + win_sync + barrier). Inside the critical region a
// non-atomic get/flush/put/flush increments a counter; an "inside" count kept with fetch_and_op
// never shows both processes inside. (The turn is flushed before the other flag is read: the
// accumulate to T and the read of the other rank's flag go to different targets and are not
// ordered otherwise.) Other ranks idle.
TEST_F(Examples, Ex19PetersonsMutualExclusion) {
  covers("EX-19", "SYN-17", "SYN-24", "SYN-25", "SYN-28", "SEM-3", "SEM-6");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  constexpr disp_t flag = 0, turn = 1, counter = 2, inside = 3;  // T, counter, inside: on A
  rma::window w = int64_window(4);
  const int iters = scaled(1000);
  const bool is_a = rank() == 0, is_b = rank() == 1;
  int both_inside = 0, stuck = 0;
  w.lock_all();
  if (is_a || is_b) {
    slots_of(w)[flag] = 1;  // X = 1 (A), Y = 1 (B)
    if (is_a) {
      slots_of(w)[turn] = 0;
      slots_of(w)[counter] = 0;
      slots_of(w)[inside] = 0;
    }
    w.sync();
  }
  barrier(world());
  if (is_a || is_b) {
    const rank_t other = is_a ? 1 : 0;
    const std::int64_t my_turn_value = is_a ? 1 : 0;
    const std::int64_t one = 1, zero = 0, minus_one = -1;
    const auto flush_a = [&] { is_a ? w.flush_all() : w.flush(0); };
    for (int it = 0; it < iters; ++it) {
      if (it > 0) {
        w.accumulate(&one, 1, i64(), rank(), flag, 1, i64(), op::replace);
        w.flush(rank());
      }
      w.accumulate(&my_turn_value, 1, i64(), 0, turn, 1, i64(), op::replace);
      flush_a();
      std::int64_t f = -1, t = -1;
      const bool entered = wait_for([&] {
        w.get_accumulate(nullptr, 0, i64(), &f, 1, i64(), other, flag, 1, i64(), op::no_op);
        w.get_accumulate(nullptr, 0, i64(), &t, 1, i64(), 0, turn, 1, i64(), op::no_op);
        flush_a();
        return !(f == 1 && t == my_turn_value);
      });
      if (!entered) {
        ++stuck;
        break;
      }
      // critical region
      both_inside += w.fetch_and_op(one, 0, inside, op::sum) == 0 ? 0 : 1;
      w.flush(0);
      std::int64_t c = -1;
      w.get(std::span<std::int64_t>(&c, 1), 0, counter);
      w.flush(0);
      std::this_thread::yield();  // widens the window a broken lock would let others into
      w.put(c + 1, 0, counter);
      w.flush(0);
      both_inside += w.fetch_and_op(minus_one, 0, inside, op::sum) == 1 ? 0 : 1;
      w.flush(0);
      // leave
      w.accumulate(&zero, 1, i64(), rank(), flag, 1, i64(), op::replace);
      w.flush(rank());
    }
  }
  w.unlock_all();
  barrier(world());
  EXPECT_EQ(stuck, 0) << "a process never entered the critical region";
  EXPECT_EQ(both_inside, 0) << "times both processes were inside";
  if (rank() == 0) {
    EXPECT_EQ(load(slots_of(w)[counter]), 2 * iters);
  }
  settle(w);
}

// Example 11.20: a spin lock on rank 0 with compare_and_swap(0 -> 1) + flush to acquire and
// compare_and_swap(1 -> 0) to release, inside lock_all; the lock word is initialised by a store +
// win_sync before the barrier. Every rank acquires it repeatedly and increments a counter with a
// non-atomic get/flush/put/flush; the final count is exact and every release returns 1.
TEST_F(Examples, Ex20SpinLockWithCompareAndSwap) {
  covers("EX-20", "SYN-17", "SYN-24", "SYN-28", "SEM-3", "SEM-5");
  constexpr disp_t lock_word = 0, counter = 1;
  rma::window w = int64_window(2);
  const int iters = scaled(500);
  int bad_release = 0, stuck = 0;
  w.lock_all();
  if (rank() == 0) {
    slots_of(w)[lock_word] = 0;
    slots_of(w)[counter] = 0;
    w.sync();
  }
  barrier(world());
  for (int it = 0; it < iters; ++it) {
    const bool acquired = wait_for([&] {
      const std::int64_t r = w.compare_and_swap(std::int64_t{1}, std::int64_t{0}, 0, lock_word);
      w.flush(0);
      return r == 0;
    });
    if (!acquired) {
      ++stuck;
      break;
    }
    std::int64_t c = -1;
    w.get(std::span<std::int64_t>(&c, 1), 0, counter);
    w.flush(0);
    std::this_thread::yield();  // widens the window a broken lock would let others into
    w.put(c + 1, 0, counter);
    w.flush(0);
    const std::int64_t r = w.compare_and_swap(std::int64_t{0}, std::int64_t{1}, 0, lock_word);
    w.flush(0);
    bad_release += r == 1 ? 0 : 1;
  }
  w.unlock_all();
  barrier(world());
  EXPECT_EQ(stuck, 0) << "an acquisition never succeeded";
  EXPECT_EQ(bad_release, 0) << "releases whose compare_and_swap did not return 1";
  if (rank() == 0) {
    EXPECT_EQ(load(slots_of(w)[counter]), std::int64_t{size()} * iters);
    EXPECT_EQ(load(slots_of(w)[lock_word]), 0);
  }
  settle(w);
}

// ---- Figures 11.2 … 11.8 and the register example ---------------------------------------------

// Figures 11.2/11.3: the target stores L before post and loads M after wait; the origin gets L
// and puts M inside its start epoch. The get returns the store made before the post, the load
// after wait returns the put (each rank is target of its left and origin of its right
// neighbour).
TEST_F(Examples, Fig2And3ActiveTargetOrdersAccessesAroundTheEpoch) {
  covers("EX-F2/F3", "SYN-3", "SYN-10", "SYN-11", "SYN-14", "MEM-9");
  constexpr disp_t l_at = 0, m_at = 1;
  rma::window w = int64_window(2);
  const oneside::group from_left = group_of({world().to_world(left())});
  const oneside::group to_right = group_of({world().to_world(right())});
  const int iters = 40;
  int wrong_get = 0, wrong_load = 0;
  for (int it = 0; it < iters; ++it) {
    slots_of(w)[l_at] = std::int64_t{rank()} * 1000 + it;  // before post
    w.post(from_left);
    w.start(to_right);
    std::int64_t l = -1;
    w.get(std::span<std::int64_t>(&l, 1), right(), l_at);
    w.put(std::int64_t{rank()} * 1000 + 500 + it, right(), m_at);
    w.complete();
    w.wait();
    wrong_get += l == std::int64_t{right()} * 1000 + it ? 0 : 1;
    wrong_load += slots_of(w)[m_at] == std::int64_t{left()} * 1000 + 500 + it ? 0 : 1;
  }
  EXPECT_EQ(wrong_get, 0) << "gets that missed the target's store made before post";
  EXPECT_EQ(wrong_load, 0) << "loads after wait that missed the put";
  settle(w);
}

// Figure 11.4: origin 1 lock(EXCLUSIVE)/put/unlock and origin 2 lock(EXCLUSIVE)/get/unlock at a
// passive target. The accesses never overlap: origin 2 reads a 64-byte record that is entirely
// old or entirely new (all 8 words equal, and never going back), but either may come first.
// With a message from origin 1 to origin 2 after the unlock, the get returns the new record.
// Target 0, origins 1 and 2 (with fewer ranks some roles coincide).
TEST_F(Examples, Fig4PassiveTargetBetweenTwoOrigins) {
  covers("EX-F4", "SYN-4", "SYN-18", "SYN-16", "MEM-10");
  constexpr std::size_t words = 8;
  rma::window w = rma::window::allocate(world(), words * sizeof(std::int64_t), 8);
  std::fill_n(slots_of(w), words, std::int64_t{0});
  settle(w);
  notice_board board;
  const rank_t target = 0, origin1 = 1 % size(), origin2 = 2 % size();
  const int iters = scaled(1000);
  const auto write = [&](std::int64_t v) {
    const std::vector<std::int64_t> record(words, v);
    w.lock(lock_type::exclusive, target);
    w.put(std::span<const std::int64_t>(record), target, 0);
    w.unlock(target);
  };
  const auto read = [&] {
    std::vector<std::int64_t> record(words, -1);
    w.lock(lock_type::exclusive, target);
    w.get(std::span<std::int64_t>(record), target, 0);
    w.unlock(target);
    return record;
  };
  const auto uniform = [](const std::vector<std::int64_t>& r) {
    return std::all_of(r.begin(), r.end(), [&](std::int64_t x) { return x == r[0]; });
  };
  // Unordered: origin 2 sees old or new records, never a mix.
  int torn = 0, backwards = 0;
  if (rank() == origin1) {
    for (int it = 1; it <= iters; ++it) write(it);
  }
  if (rank() == origin2) {
    std::int64_t last = 0;
    for (int it = 1; it <= iters; ++it) {
      const std::vector<std::int64_t> r = read();
      torn += uniform(r) ? 0 : 1;
      backwards += r[0] >= last ? 0 : 1;
      last = r[0];
    }
  }
  EXPECT_EQ(torn, 0) << "records read while a put was writing them";
  EXPECT_EQ(backwards, 0) << "records older than one read before";
  barrier(world());
  // Ordered by a message after the unlock: origin 2 always gets the new record.
  int stale = 0;
  const int ordered = 100;
  for (int it = 1; it <= ordered; ++it) {
    const std::int64_t v = 100000 + it;
    if (rank() == origin1) {
      write(v);
      board.send(origin2, 0, it);
    }
    if (rank() == origin2) {
      EXPECT_TRUE(board.await(0, it));
      const std::vector<std::int64_t> r = read();
      stale += uniform(r) && r[0] == v ? 0 : 1;
      board.send(origin1, 1, it);  // origin 1 writes the next record only now
    }
    if (rank() == origin1) {
      EXPECT_TRUE(board.await(1, it));
    }
  }
  EXPECT_EQ(stale, 0) << "gets after the message that missed the put";
  settle(w);
}

// Figure 11.6 (SEM-9): both processes of a pair post(other); start(other); put 4 MiB; complete;
// wait; and then load their own window: no deadlock, each sees the other's data. Create windows
// (user memory) and allocated ones; the odd rank out pairs with itself.
TEST_F(Examples, Fig6SymmetricPscwExchangeDoesNotDeadlock) {
  covers("EX-F6", "SEM-9", "SEM-8", "SYN-10", "SYN-8");
  constexpr std::size_t n = std::size_t{4} << 17;  // 4 MiB of int64
  const rank_t partner = pair_partner() == no_rank ? rank() : pair_partner();
  const oneside::group other = group_of({world().to_world(partner)});
  std::vector<std::int64_t> src(n);
  for (std::size_t i = 0; i < n; ++i)
    src[i] = std::int64_t{rank()} * 100000000 + static_cast<std::int64_t>(i);
  for (rma::flavor f : {rma::flavor::create, rma::flavor::allocate}) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), n * sizeof(std::int64_t), 8);
    settle(tw.win);
    tw.win.post(other);
    tw.win.start(other);
    tw.win.put(std::span<const std::int64_t>(src), partner, tw.disp(partner, 0));
    tw.win.complete();
    tw.win.wait();
    const std::int64_t* mine = tw.local_as<std::int64_t>();
    int wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += mine[i] == std::int64_t{partner} * 100000000 + static_cast<std::int64_t>(i) ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0) << "elements of the partner's 4 MiB missing after wait";
    settle(tw.win);
  }
}

// Figures 11.7/11.8 (SEM-10): complete does not wait for the target's wait. Figure 11.8's order
// must complete: the origin does start, put (4 MiB), complete, send; the target post, recv
// (here: a wait for the message on a notice board), wait, and then sees the data. Figure 11.7's
// order (origin: start, put, recv, complete; target: post, wait, send) may deadlock and is not
// run. The even rank of each pair is the origin.
TEST_F(Examples, Fig8CompleteDoesNotWaitForTheTargetsWait) {
  covers("EX-F7/F8", "SEM-10", "SYN-9", "SYN-11", "MEM-9");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  constexpr std::size_t n = std::size_t{4} << 17;
  rma::window w = rma::window::allocate(world(), n * sizeof(std::int64_t), 8);
  std::fill_n(slots_of(w), n, std::int64_t{-1});
  settle(w);
  notice_board board;
  const rank_t partner = pair_partner();
  if (partner != no_rank && rank() % 2 == 0) {
    std::vector<std::int64_t> src(n);
    std::iota(src.begin(), src.end(), std::int64_t{rank()} * 100000000);
    w.start(group_of({partner}));
    w.put(std::span<const std::int64_t>(src), partner, 0);
    w.complete();
    board.send(partner, 0, 1);
  } else if (partner != no_rank) {
    w.post(group_of({partner}));
    EXPECT_TRUE(board.await(0, 1)) << "the origin's message never came: complete waited for wait?";
    w.wait();
    int wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += slots_of(w)[i] == std::int64_t{partner} * 100000000 + static_cast<std::int64_t>(i)
                   ? 0
                   : 1;
    }
    EXPECT_EQ(wrong, 0) << "elements missing after wait";
  }
  settle(w);
}

// The register example of §11.7.4 (SEM-13): the target stores buff = 999, fences, the origin
// puts 777 into buff, fence, and the target's plain read `ccc = buff` (compiled with
// optimisation, buff not volatile or atomic) returns 777: fence is a compiler barrier, so the
// 999 is not kept in a register across it. Each rank is target of its left neighbour.
TEST_F(Examples, RegisterExampleFenceIsACompilerBarrier) {
  covers("EX-R", "SEM-13", "MEM-17", "MEM-8");
  auto holder = std::make_unique<std::int32_t>(0);
  std::int32_t& buff = *holder;
  rma::window w = rma::window::create(world(), &buff, sizeof buff, sizeof buff);
  settle(w);
  int stale = 0;
  for (int it = 0; it < 100; ++it) {
    buff = 999;
    w.fence();
    const std::int32_t bbbb = 777 + rank() + it;
    w.put(bbbb, right(), 0);
    w.fence();
    const std::int32_t ccc = buff;
    stale += ccc == 777 + left() + it ? 0 : 1;
  }
  EXPECT_EQ(stale, 0) << "reads of buff after the closing fence that returned a stale value";
  w.fence(mode::nosucceed);
  w.free();
}

}  // namespace
}  // namespace oneside::test
