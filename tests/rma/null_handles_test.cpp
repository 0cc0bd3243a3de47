// Null handles, as the headers promise them: a default-constructed rma::window is a null
// window on which every call raises error(win) naming the call (ERR-4), and a
// default-constructed rma::request is a complete request (MPI_REQUEST_NULL) that the
// completion calls skip (REQ-8). Kept in a file of its own: it is also the proof that the
// default constructors of both handles can be used by an application at all.
#include <array>
#include <cstdint>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

class NullHandles : public RankTest {};

TEST_F(NullHandles, EveryCallOnANullWindowRaisesWin) {
  covers("ERR-4");
  rma::window never;
  EXPECT_FALSE(never.is_valid());
  const std::int64_t v = 1;
  expect_error(error_class::win, "put", [&] { never.put(v, 0, 0); });
  expect_error(error_class::win, "fence", [&] { never.fence(); });
  expect_error(error_class::win, "lock", [&] { never.lock(rma::lock_type::shared, 0); });
  expect_error(error_class::win, "unlock_all", [&] { never.unlock_all(); });
  expect_error(error_class::win, "size", [&] { (void)never.size(); });
  expect_error(error_class::win, "free", [&] { never.free(); });
}

TEST_F(NullHandles, NullRequestsAreCompleteAndSkipped) {
  covers("REQ-8", "REQ-10");
  rma::request r;
  EXPECT_TRUE(r.is_null());
  EXPECT_TRUE(r.test());
  r.wait();
  std::array<rma::request, 4> none;
  EXPECT_EQ(rma::wait_any(none), std::nullopt);
  EXPECT_EQ(rma::test_any(none), std::nullopt);
  std::array<std::size_t, 4> idx{};
  EXPECT_EQ(rma::wait_some(none, idx), 0U);
  EXPECT_EQ(rma::test_some(none, idx), 0U);
  EXPECT_TRUE(rma::test_all(none));
  rma::wait_all(none);
  std::vector<rma::request> many(3);
  for (const rma::request& q : many) EXPECT_TRUE(q.is_null());
}

}  // namespace
}  // namespace oneside::test
