// The chapter's examples as tests, each checking its result exactly (checklist EX-1, EX-2,
// EX-3, EX-21, EX-22): the permutation gather with derived datatypes and with one get per
// element, the accumulate scatter (one-to-one and many-to-one), request-based pipelining
// through M buffers, and the distributed linked list on a dynamic window.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <oneside/oneside.hpp>

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

}  // namespace
}  // namespace oneside::test
