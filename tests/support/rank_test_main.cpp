// The GoogleTest main of multi-rank tests: opens the runtime once per process, lets rank 0
// print the usual report and the other ranks print only their failures (prefixed with their
// rank), writes XML from rank 0 only, and exits non-zero on every rank when any rank failed,
// so the launcher's exit code is the verdict.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

namespace {

// Prints failures of a rank other than 0, which has no printer of its own. The test's name is
// remembered when it starts: OnTestPartResult runs under GoogleTest's own lock, so asking
// UnitTest for the current test there would deadlock.
class failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit failure_printer(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: Failure\n%s\n", rank_,
                 test_.empty() ? "(outside a test)" : test_.c_str(),
                 r.file_name() != nullptr ? r.file_name() : "?", r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo&) override { test_.clear(); }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  oneside::runtime rt(argc, argv);
  if (rt.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    delete listeners.Release(listeners.default_xml_generator());
    listeners.Append(new failure_printer(rt.rank()));
  }
  int rc = RUN_ALL_TESTS();
  rc = oneside::allreduce(oneside::world(), rc, oneside::op::max);
  rt.close();
  return rc;
}
