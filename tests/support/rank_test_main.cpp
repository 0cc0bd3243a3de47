// The GoogleTest main of multi-rank tests: opens the runtime once per process, lets rank 0
// print the usual report and the other ranks print only their failures (prefixed with their
// rank), writes XML from rank 0 only, and exits non-zero on every rank when any rank failed,
// so the launcher's exit code is the verdict.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

namespace {

// Prints failures of a rank other than 0, which has no printer of its own.
class failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "[rank %d] %s.%s: %s:%d: Failure\n%s\n", rank_,
                 info != nullptr ? info->test_suite_name() : "?",
                 info != nullptr ? info->name() : "?",
                 r.file_name() != nullptr ? r.file_name() : "?", r.line_number(), r.message());
  }

 private:
  int rank_;
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
