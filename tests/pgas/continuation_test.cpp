// Continuations in bounded stack (issue 19): recursive then() chains over rget futures that are
// ready at once (50,000 nested links over a node peer's word, a million tail links over this
// rank's), a million links iterated on ready and pending futures, the stack each takes measured
// against a short chain's; and where continuations run: inline at once on a ready future,
// deferred past a bounded nesting to the outermost frame of the same thread, or earlier by a
// wait inside the nest.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <oneside/oneside.hpp>

#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class Continuation : public PgasTest {};

// The lowest stack address a link saw since the last reset (the stack grows down).
thread_local std::uintptr_t t_lowest = 0;

[[gnu::noinline]] void note_stack() {
  volatile char here = 0;
  const auto at = reinterpret_cast<std::uintptr_t>(&here);
  if (at < t_lowest) t_lowest = at;
}

// Bytes of stack below the caller's frame that fn() and the continuations it ran took.
template <class Fn>
[[gnu::noinline]] std::size_t stack_taken_by(Fn&& fn) {
  volatile char base = 0;
  const auto top = reinterpret_cast<std::uintptr_t>(&base);
  t_lowest = top;
  fn();
  return top - t_lowest;
}

// The sum of n - i reads of *p, one link per read: each link is a then() on the read's future
// (a value rget returns a ready future), whose continuation returns the next links' sum plus
// its own value (nested: each link waits for the ones after it).
future<long> sum_nested(global_ptr<long> p, int i, int n) {
  note_stack();
  if (i == n) return make_future(0L);
  return rget(p).then([p, i, n](long v) {
    return sum_nested(p, i + 1, n).then([v](long rest) { return rest + v; });
  });
}

// The same in tail form: each continuation returns the next link's future itself.
future<long> sum_tail(global_ptr<long> p, int i, int n, long acc) {
  note_stack();
  if (i == n) return make_future(acc);
  return rget(p).then([p, i, n, acc](long v) { return sum_tail(p, i + 1, n, acc + v); });
}

// Generous for frames of 16 nested links, far below what a link per frame takes for long
// chains (hundreds of bytes per link: 50,000 links overflowed an 8 MiB stack).
constexpr std::size_t stack_bound = 256 * 1024;

TEST_F(Continuation, NestedChainOverReadyRgetsTakesBoundedStack) {
  const global_ptr<long> mine = new_<long>(rank() + 1);
  const std::vector<global_ptr<long>> all = everyones(mine);
  barrier(world());
  // The neighbour's word where this process maps it; this rank's own elsewhere (the network
  // paths: a round trip per link would take minutes over TCP, and the stack is the same).
  const rank_t owner = all[static_cast<std::size_t>(right())].is_local() ? right() : rank();
  const global_ptr<long> p = all[static_cast<std::size_t>(owner)];
  constexpr int links = 50000;
  long sum = 0;
  const std::size_t deep = stack_taken_by([&] { sum = sum_nested(p, 0, links).wait(); });
  EXPECT_EQ(sum, static_cast<long>(links) * (owner + 1));
  long short_sum = 0;
  const std::size_t shallow = stack_taken_by([&] { short_sum = sum_nested(p, 0, 100).wait(); });
  EXPECT_EQ(short_sum, 100L * (owner + 1));
  RecordProperty("stack_bytes_50000_links", static_cast<int>(deep));
  RecordProperty("stack_bytes_100_links", static_cast<int>(shallow));
  EXPECT_LT(deep, stack_bound);
  EXPECT_LE(deep, 2 * shallow + 4096) << "the stack grows with the chain";
  barrier(world());
  delete_(mine);
}

TEST_F(Continuation, AMillionTailLinksTakeBoundedStack) {
  const global_ptr<long> mine = new_<long>(3);
  constexpr int links = 1000000;
  long sum = 0;
  const std::size_t deep = stack_taken_by([&] { sum = sum_tail(mine, 0, links, 0).wait(); });
  EXPECT_EQ(sum, 3L * links);
  long short_sum = 0;
  const std::size_t shallow = stack_taken_by([&] { short_sum = sum_tail(mine, 0, 100, 0).wait(); });
  EXPECT_EQ(short_sum, 300);
  RecordProperty("stack_bytes_1000000_links", static_cast<int>(deep));
  RecordProperty("stack_bytes_100_links", static_cast<int>(shallow));
  EXPECT_LT(deep, stack_bound);
  EXPECT_LE(deep, 2 * shallow + 4096) << "the stack grows with the chain";

  // Started from a pending future: the promise's fulfil runs the whole chain.
  const promise<> start;
  const future<long> later =
      start.get_future().then([mine] { return sum_tail(mine, 0, links, 0); });
  long from_pending = 0;
  const std::size_t pending = stack_taken_by([&] {
    (void)start.finalize();
    from_pending = later.wait();
  });
  EXPECT_EQ(from_pending, 3L * links);
  EXPECT_LT(pending, stack_bound);
  delete_(mine);
}

TEST_F(Continuation, LongIteratedChainsOnReadyAndPendingFutures) {
  constexpr int links = 1000000;
  future<long> ready = make_future(0L);
  for (int i = 0; i < links; ++i) ready = ready.then([](long v) { return v + 1; });
  EXPECT_EQ(ready.wait(), links);

  // A state per pending link (about 150 bytes): fewer, so that 8 ranks fit in memory.
  constexpr int pending_links = 200000;
  const promise<long> p;
  future<long> chain = p.get_future();
  for (int i = 0; i < pending_links; ++i) chain = chain.then([](long v) { return v + 1; });
  p.set_value(0);
  long got = 0;
  const std::size_t taken = stack_taken_by([&] {
    (void)p.finalize();
    got = chain.wait();
  });
  EXPECT_EQ(got, pending_links);
  EXPECT_LT(taken, stack_bound);
}

// Nests `levels` continuations of ready futures, then calls inner() in the innermost.
template <class Fn>
void nest(int levels, Fn& inner) {
  if (levels == 0) {
    inner();
    return;
  }
  make_future().then([&] { nest(levels - 1, inner); }).wait();
}

TEST_F(Continuation, ReadyFuturesRunInlineUntilTheNestingBound) {
  // At the top: before then() returns.
  bool ran = false;
  const future<int> top = make_future(1).then([&](int v) {
    ran = true;
    return v + 1;
  });
  EXPECT_TRUE(ran);
  EXPECT_TRUE(top.is_ready());
  EXPECT_EQ(top.result(), 2);

  // Four deep: still inline.
  bool shallow_ran_inline = false;
  auto shallow = [&] {
    bool now = false;
    (void)make_future().then([&] { now = true; });
    shallow_ran_inline = now;
  };
  nest(4, shallow);
  EXPECT_TRUE(shallow_ran_inline);

  // Past the bound: deferred, yet run before the outermost then() returns, on this thread.
  int deferred_runs = 0;
  bool deep_ran_inline = true;
  future<int> deep_result;
  auto deep = [&] {
    deep_result = make_future(20).then([&](int v) {
      ++deferred_runs;
      return v + 1;
    });
    deep_ran_inline = deferred_runs == 1;
  };
  nest(40, deep);
  EXPECT_FALSE(deep_ran_inline);
  EXPECT_EQ(deferred_runs, 1);
  EXPECT_TRUE(deep_result.is_ready());
  EXPECT_EQ(deep_result.result(), 21);

  // A wait inside the nest runs what it needs at once.
  int waited = 0;
  auto waits = [&] { waited = make_future(5).then([](int v) { return v * 2; }).wait(); };
  nest(40, waits);
  EXPECT_EQ(waited, 10);

  // Failures pass through deferred links as through inline ones.
  bool caught = false;
  auto fails = [&] {
    const future<int> f =
        make_future(1).then([](int) -> int { throw error(error_class::arg, "x"); });
    try {
      (void)f.then([](int v) { return v; }).wait();
    } catch (const error&) {
      caught = true;
    }
  };
  nest(40, fails);
  EXPECT_TRUE(caught);
}

}  // namespace
}  // namespace oneside::test
