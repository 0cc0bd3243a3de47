// The epoch scopes of <oneside/rma/epoch.hpp>: each opens its epoch with the spec call and
// closes it with the matching one at the end of the scope or at close(); an opening error
// leaves nothing open; a closing error raises from a scope that ends normally and is dropped
// while another exception unwinds the scope.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::lock_type;
using rma::mode;

class EpochScopes : public RankTest {
 protected:
  static rma::window fresh() {
    rma::window w = rma::window::allocate(world(), 4 * sizeof(std::int64_t), 8);
    std::fill_n(static_cast<std::int64_t*>(w.base()), 4, std::int64_t{-1});
    settle(w);
    return w;
  }
  static std::int64_t* slots(rma::window& w) { return static_cast<std::int64_t*>(w.base()); }
};

TEST_F(EpochScopes, EachScopeHoldsItsEpochAndClosesIt) {
  covers("SYN-1", "SYN-5", "SYN-11", "SYN-16", "SYN-17");
  rma::window w = fresh();
  {
    rma::fence_epoch e(w, mode::noprecede);
    w.put(std::int64_t{rank()}, right(), 0);
  }
  EXPECT_EQ(slots(w)[0], left());
  {
    rma::lock_all_epoch e(w);
    w.put(std::int64_t{rank() + 10}, right(), 1);
  }
  {
    rma::lock_epoch e(w, lock_type::exclusive, right());
    w.put(std::int64_t{rank() + 20}, right(), 2);
    EXPECT_TRUE(e.is_open());
    e.close();  // unlock now; the destructor then does nothing
    EXPECT_FALSE(e.is_open());
  }
  barrier(world());
  {
    rma::exposure_epoch exposed(w, oneside::group{world().to_world(left())});
    rma::access_epoch access(w, oneside::group{world().to_world(right())});
    w.put(std::int64_t{rank() + 30}, right(), 3);
  }  // complete, then wait (reverse order of construction)
  EXPECT_EQ(slots(w)[1], left() + 10);
  EXPECT_EQ(slots(w)[2], left() + 20);
  EXPECT_EQ(slots(w)[3], left() + 30);
  // Every epoch is closed: RMA now is outside any epoch.
  expect_error(error_class::rma_sync, "window::put", [&] { w.put(std::int64_t{0}, right(), 0); });
  settle(w);
}

TEST_F(EpochScopes, OpeningErrorLeavesNothingOpen) {
  covers("SYN-15", "ERR-8");
  rma::window w = fresh();
  expect_error(error_class::locktype, "window::lock",
               [&] { rma::lock_epoch e(w, static_cast<lock_type>(7), right()); });
  EXPECT_TRUE(expect_ok("lock_all after the rejected scope", [&] {
    rma::lock_all_epoch e(w);
    w.put(std::int64_t{5}, right(), 0);
  }));
  settle(w);
  EXPECT_EQ(slots(w)[0], 5);
}

TEST_F(EpochScopes, ClosingErrorsRaiseUnlessAnotherErrorUnwinds) {
  covers("SYN-16", "ERR-11");
  rma::window w = fresh();
  // The scope is closed by hand behind its back: its own unlock then fails and raises.
  expect_error(error_class::rma_sync, "window::unlock", [&] {
    rma::lock_epoch e(w, lock_type::shared, right());
    w.unlock(right());
  });
  // The same while a user exception unwinds: the user's exception arrives, not the unlock's.
  bool user_error_arrived = false;
  try {
    rma::lock_epoch e(w, lock_type::shared, right());
    w.unlock(right());
    throw std::runtime_error("user");
  } catch (const oneside::error&) {
    ADD_FAILURE() << "the closing error replaced the user's exception";
  } catch (const std::runtime_error& e) {
    user_error_arrived = std::string(e.what()) == "user";
  }
  EXPECT_TRUE(user_error_arrived);
  // An epoch left by an exception is closed on the way out.
  try {
    rma::lock_all_epoch e(w);
    throw std::runtime_error("user");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(expect_ok("lock_all after an unwound lock_all scope", [&] {
    w.lock_all();
    w.unlock_all();
  }));
  settle(w);
}

}  // namespace
}  // namespace oneside::test
