// The API tour's rma part (docs/tour.md), compiled and run as written, then checked. The text
// between the "readme:rma" markers must appear verbatim (less two spaces of indent) in the
// docs: the style.readme_snippets test compares them, so the tour cannot drift from code that
// works.
#include <cstring>
#include <span>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

class Readme : public RankTest {};

TEST_F(Readme, RmaTourRunsAsWritten) {
  covers("COM-1", "COM-2", "COM-4", "COM-5", "COM-6", "SYN-1");
  // readme:rma begin
  namespace rma = oneside::rma;
  const oneside::team& world = oneside::world();
  const int right = (world.rank() + 1) % world.size();

  // A window over memory the runtime allocates (also: create over your own memory,
  // allocate_shared + shared_query, create_dynamic + attach/detach).
  rma::window w = rma::window::allocate(world, 1024 * sizeof(double), sizeof(double));
  w.fence();
  w.put(3.14, right, 5);  // element 5 of the right neighbour
  w.fence();              // now visible there

  w.lock_all();  // passive target: the target is not involved
  long one = 1, ticket = 0;
  w.fetch_and_op(&one, &ticket, oneside::datatype::of<long>(), 0, 100, oneside::op::sum);
  std::vector<double> row(64);
  rma::request r = w.rget(std::span<double>(row), right, 0);
  r.wait();  // data in `row`
  w.accumulate(std::span<const double>(row), 0, 512, oneside::op::max);
  w.flush(0);  // applied at rank 0
  w.unlock_all();

  // Derived datatypes describe non-contiguous layouts on either side (moved as iovecs).
  auto column = oneside::datatype::vector(16, 1, 16, oneside::datatype::of<double>());
  w.lock(rma::lock_type::exclusive, right);
  w.put(row.data(), 16, oneside::datatype::of<double>(), right, 0, 1, column);
  w.unlock(right);
  // readme:rma end

  // The tour's effects, checked where they landed. Before the column put, the right
  // neighbour's element 5 held 3.14 and every other element 0, so `row` (its elements 0..63)
  // is 3.14 at 5 and 0 elsewhere.
  for (std::size_t k = 0; k < row.size(); ++k) {
    EXPECT_EQ(row[k], k == 5 ? 3.14 : 0.0) << "row[" << k << "]";
  }
  EXPECT_GE(ticket, 0);
  EXPECT_LT(ticket, world.size());
  settle(w);
  const auto* mine = static_cast<const double*>(w.base());
  // The left neighbour's column put wrote row[0..15] at elements 0, 16, …, 240: row[5] = 3.14
  // lands at element 80, every other column element is 0 (element 0 included).
  for (std::size_t k = 0; k < 256; ++k) {
    double expect = 0.0;
    if (k % 16 == 0) {
      expect = k == 80 ? 3.14 : 0.0;
    } else if (k == 5) {
      expect = 3.14;
    }
    if (k == 100) {
      continue;  // rank 0's counter, checked below
    }
    EXPECT_EQ(mine[k], expect) << "element " << k;
  }
  if (world.rank() == 0) {
    // Every rank added 1 to the long at element 100 and max-ed its row into 512..575.
    long counter = 0;
    std::memcpy(&counter, mine + 100, sizeof counter);
    EXPECT_EQ(counter, world.size());
    for (std::size_t k = 0; k < row.size(); ++k) {
      EXPECT_EQ(mine[512 + k], k == 5 ? 3.14 : 0.0) << "element " << 512 + k;
    }
  }
  w.free();
}

TEST_F(Readme, PscwTourRunsAsWritten) {
  covers("SYN-8", "SYN-9", "SYN-10", "SYN-11");
  namespace rma = oneside::rma;
  const oneside::team& world = oneside::world();
  const int right = (world.rank() + 1) % world.size();
  rma::window w = rma::window::allocate(world, 1024 * sizeof(double), sizeof(double));
  settle(w);
  // readme:pscw begin
  // General active target: my window is exposed to the left neighbour while I access the
  // right one. start never blocks (the put waits for the right neighbour's post); complete
  // does not wait for the target; wait returns once the left neighbour's put has landed.
  const int left = (world.rank() + world.size() - 1) % world.size();
  w.post(oneside::group{world.to_world(left)});
  w.start(oneside::group{world.to_world(right)});
  w.put(2.0, right, 7);
  w.complete();
  w.wait();
  // readme:pscw end
  EXPECT_EQ(static_cast<const double*>(w.base())[7], 2.0);
  settle(w);
  w.free();
}

}  // namespace
}  // namespace oneside::test
