// Waits inside tasks of the rank's arena: they suspend the task (oneTBB resumable tasks) and
// free its worker, so nested async(...).wait() never deadlocks, whatever the arena's size (run
// also with ONESIDE_TASK_THREADS=1 and 2: pgas.task.np*.threads*); predicate waits (a signal
// word, a flush) suspend too; exceptions cross tasks and fibers; fibers spawned in a task end
// with it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/fiber.hpp>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class TaskWaits : public RankTest {};

// Issue 19's deadlock, as a new user wrote it.
TEST_F(TaskWaits, NestedAsyncWaitDoesNotDeadlock) {
  EXPECT_EQ(async([] { return async([] { return 1; }).wait() + 1; }).wait(), 2);
}

int nested(int depth) {
  if (depth == 0) return 0;
  return async([depth] { return nested(depth - 1); }).wait() + 1;
}

TEST_F(TaskWaits, DeeplyNestedAndManyConcurrentAsyncWaits) {
  EXPECT_EQ(nested(12), 12);
  std::vector<future<int>> outer;
  for (int i = 0; i < 32; ++i) {
    outer.push_back(async([i] { return async([i] { return i; }).wait() * 2; }));
  }
  int sum = 0;
  for (const future<int>& f : outer) sum += f.wait();
  EXPECT_EQ(sum, 2 * (31 * 32 / 2));
}

// The first task waits on a word that only the second task sets: with one worker, the second
// runs only because the first was suspended.
TEST_F(TaskWaits, PredicateWaitInATaskFreesItsWorker) {
  global_ptr<std::uint64_t> word = symmetric_allocate<std::uint64_t>(2);  // signal, data
  word.local()[0] = 0;
  barrier(world());
  future<std::uint64_t> waiting =
      async([&] { return signal_wait_until(word.local(), cmp::eq, std::uint64_t{7}); });
  future<> setting = async([&] {
    rput(std::uint64_t{5}, word + 1, word, std::uint64_t{7}).wait();  // a put with its signal
  });
  setting.wait();
  EXPECT_EQ(waiting.wait(), 7U);
  EXPECT_EQ(word.local()[1], 5U);
  barrier(world());
  symmetric_free(word);
}

TEST_F(TaskWaits, RemoteCompletionAndGetsInsideTasks) {
  const int n = size();
  const int right = (rank() + 1) % n;
  global_ptr<long> slots = symmetric_allocate<long>(16);
  barrier(world());
  std::vector<future<long>> done;
  for (int i = 0; i < 16; ++i) {
    done.push_back(async([&, i] {
      rput(rank() * 10L + i, slots.on(right) + i).wait();
      return rget(slots.on(right) + i).wait();
    }));
  }
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(done[static_cast<std::size_t>(i)].wait(), rank() * 10L + i);
  barrier(world());
  symmetric_free(slots);
}

// A continuation that a task runs and that waits suspends the task like any wait: its
// continuation frames (their depth, what they deferred) go with it to the thread that resumes
// it, and the worker it left goes on with its own, so its later continuations still run at
// once and nested async().wait() inside continuations does not deadlock either.
TEST_F(TaskWaits, AContinuationThatWaitsInATaskSuspendsIt) {
  promise<int> p;
  future<int> later = p.get_future();
  std::atomic<bool> started{false};
  future<int> chained = async([&] {
                          oneside::wait_until([&] { return started.load(); });
                          return 1;
                        }).then([later](int x) { return later.wait() + x; });
  started.store(true);
  p.set_value(1);
  (void)p.finalize();
  EXPECT_EQ(chained.wait(), 2);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(async([i] { return i; }).then([](int v) { return v + 1; }).wait(), i + 1);
  }
  // Inside a continuation run by the task's list (a readied state) and inside one run inline
  // on a ready future, deeper than the inline bound: each waits for a continuation of a task
  // of its own, which the worker it left (the only one at ONESIDE_TASK_THREADS=1) readies.
  // Were the frames left on that worker, it would defer the continuation to a frame that
  // closes elsewhere, and the wait would never end.
  EXPECT_EQ(async([] { return 1; })
                .then([](int x) {
                  return async([x] { return x; }).then([](int v) { return v + 1; }).wait();
                })
                .wait(),
            2);
  std::function<int(int)> down = [&down](int depth) -> int {
    if (depth == 0) return async([] { return -1; }).then([](int v) { return v + 1; }).wait();
    return make_future(depth).then([&down](int d) { return down(d - 1) + 1; }).wait();
  };
  std::vector<future<int>> deep;
  for (int i = 0; i < 8; ++i) deep.push_back(async([&down] { return down(20); }));
  for (const future<int>& f : deep) EXPECT_EQ(f.wait(), 20);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(async([i] { return i; }).then([](int v) { return v + 1; }).wait(), i + 1);
  }
}

TEST_F(TaskWaits, ExceptionsCrossTasksAndFibers) {
  // A task's exception fails its future; a task waiting on it gets it and passes it on.
  future<int> outer =
      async([] { return async([]() -> int { throw std::runtime_error("inner task"); }).wait(); });
  EXPECT_THROW((void)outer.wait(), std::runtime_error);
  // A fiber's exception inside a task reaches the task's future through join().
  future<> with_fiber = async([] {
    fiber f = fiber::spawn([] { throw std::out_of_range("fiber in a task"); });
    f.join();
  });
  EXPECT_THROW(with_fiber.wait(), std::out_of_range);
  // A task's exception reaches a fiber that waits for it, and the fiber's joiner.
  fiber waiter =
      fiber::spawn([] { async([] { throw std::logic_error("task for a fiber"); }).wait(); });
  EXPECT_THROW(waiter.join(), std::logic_error);
}

TEST_F(TaskWaits, FibersSpawnedInATaskEndWithIt) {
  std::atomic<int> ran{0};
  future<int> f = async([&] {
    for (int i = 0; i < 8; ++i) {
      fiber::spawn([&] {
        this_fiber::yield();
        async([] { return 0; }).wait();
        ran.fetch_add(1);
      }).detach();
    }
    return 1;
  });
  EXPECT_EQ(f.wait(), 1);
  this_rank_arena().wait_enqueued();
  EXPECT_EQ(ran.load(), 8);
}

}  // namespace
}  // namespace oneside::test
