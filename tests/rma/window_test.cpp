// Windows (WIN-1 … WIN-27): the four flavours over the world and over sub-teams, per-member
// differences in memory, size (0 included) and disp_unit, attributes, hints, the contiguous and
// non-contiguous layouts of allocate_shared with shared_query, dynamic attach/detach, free, and
// every error a window call can raise (each one leaving the window or job usable).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"
#include "runtime/settings.hpp"
#include "shm_space.hpp"
#include "transport/shm/page_move.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::mode;

class Window : public RankTest {};

// Halves of the world (one team when the job has one rank).
team halves() {
  const int lower = (world().size() + 1) / 2;
  return world().split(world().rank() < lower ? 0 : 1, world().rank());
}

TEST_F(Window, SubTeamWindowsReachOnlyTheirMembers) {
  covers("WIN-1", "WIN-20", "SYN-7");
  const team sub = halves();
  constexpr std::size_t slots = 8;
  for (flavor f : flavors_for(sub)) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, sub, slots * sizeof(int), sizeof(int));
    int* mine = tw.local_as<int>();
    std::fill(mine, mine + slots, -1);
    EXPECT_EQ(compare(tw.win.group(), sub.group()), group_relation::identical);
    EXPECT_EQ(tw.win.group().size(), sub.size());
    {
      oneside::group g = tw.win.group();  // a copy: dropping it leaves the window's group
      g = oneside::group();
      EXPECT_EQ(compare(tw.win.group(), sub.group()), group_relation::identical);
    }
    settle(tw.win);
    const int value = world().rank() + 100;
    tw.win.fence();
    for (rank_t t = 0; t < sub.size(); ++t) {
      tw.win.put(&value, 1, datatype::of<int>(), t, tw.disp(t, sub.rank()), 1, datatype::of<int>());
    }
    // A member of the other half is not a rank of this window.
    expect_error(error_class::rank, "put", [&] {
      tw.win.put(&value, 1, datatype::of<int>(), sub.size(), 0, 1, datatype::of<int>());
    });
    tw.win.fence();
    settle(tw.win);
    for (std::size_t j = 0; j < slots; ++j) {
      const int want = j < static_cast<std::size_t>(sub.size())
                           ? sub.to_world(static_cast<rank_t>(j)) + 100
                           : -1;
      EXPECT_EQ(mine[j], want) << "slot " << j;
    }
  }
}

// Rank r exposes r * 4 ints of memory the user owns (rank 0 exposes nothing); every origin o
// puts o + 100 into element o of every target large enough. The owner reads its own memory.
void check_user_memory(int* base, std::size_t count) {
  for (std::size_t e = 0; e < count; ++e) base[e] = -1;
  rma::window w =
      rma::window::create(world(), count > 0 ? base : nullptr, count * sizeof(int), sizeof(int));
  EXPECT_EQ(w.size(), count * sizeof(int));
  if (count > 0) {
    EXPECT_EQ(w.base(), static_cast<void*>(base));
  }
  settle(w);
  w.fence();
  const int value = world().rank() + 100;
  for (rank_t t = 0; t < world().size(); ++t) {
    if (world().rank() < t * 4)
      w.put(&value, 1, datatype::of<int>(), t, world().rank(), 1, datatype::of<int>());
  }
  w.fence();
  settle(w);
  w.free();
  EXPECT_FALSE(w.is_valid());
  // The memory stays the user's with the last values written (WIN-17).
  for (std::size_t e = 0; e < count; ++e) {
    const int want = static_cast<int>(e) < world().size() ? static_cast<int>(e) + 100 : -1;
    EXPECT_EQ(base[e], want) << "element " << e;
  }
}

TEST_F(Window, CreateExposesVectorMemoryInPlace) {
  covers("WIN-2", "WIN-17", "SYN-7");
  const auto count = static_cast<std::size_t>(rank()) * 4;
  std::vector<int> v(count + 1);  // never empty, so data() is a real address
  check_user_memory(v.data(), count);
}

TEST_F(Window, CreateExposesMallocMemoryInPlace) {
  covers("WIN-2", "WIN-17");
  const auto count = static_cast<std::size_t>(rank()) * 4;
  void* p = count > 0 ? std::malloc(count * sizeof(int)) : nullptr;
  check_user_memory(static_cast<int*>(p), count);
  std::free(p);
}

// Exposing user memory must leave the user's other memory alone, and the exposed memory's own
// contents too: a thread of this process keeps incrementing a counter that shares a heap block
// (and page) with the exposed array (`beside`), or one inside the array that no RMA targets
// (`inside`), while windows are created over the array and freed (`create`), or while the array
// is attached to a dynamic window and detached (`dynamic`); no increment may be lost. With a
// small array (inside one page) and a large one (whole pages inside it).
enum class counter_at { beside, inside };

template <std::size_t N>
void check_concurrent_stores_survive(counter_at where, flavor f = flavor::create) {
  struct block {
    std::int64_t beside;
    std::int64_t exposed[N];
  };
  auto b = std::make_unique<block>();
  b->beside = 0;
  std::fill_n(b->exposed, N, std::int64_t{-1});
  std::int64_t& counter = where == counter_at::beside ? b->beside : b->exposed[N / 2];
  counter = 0;
  std::atomic<bool> stop{false};
  std::int64_t done_by_writer = 0;
  std::thread writer([&] {
    std::int64_t n = 0;
    std::atomic_ref<std::int64_t> c(counter);
    while (!stop.load(std::memory_order_relaxed)) {
      c.fetch_add(1, std::memory_order_relaxed);
      ++n;
    }
    done_by_writer = n;
  });
  const rank_t me = world().rank(), p = world().size();
  const rank_t target = (me + 1) % p;
  const std::vector<std::uint64_t> at =
      allgather(world(), std::uint64_t{reinterpret_cast<std::uintptr_t>(b->exposed)});
  rma::window dyn = f == flavor::dynamic ? rma::window::create_dynamic(world()) : rma::window();
  constexpr int rounds = 6;
  for (int round = 0; round < rounds; ++round) {
    if (f == flavor::dynamic) {
      dyn.attach(b->exposed, sizeof b->exposed);
      barrier(world());
      dyn.fence();
      dyn.put(std::int64_t{round * 100 + me}, target,
              static_cast<disp_t>(at[static_cast<std::size_t>(target)]) + round * 8);
      dyn.fence();
      dyn.detach(b->exposed);
      continue;
    }
    rma::window w = rma::window::create(world(), b->exposed, sizeof b->exposed, 8);
    w.fence();
    w.put(std::int64_t{round * 100 + me}, target, round);
    w.fence();
    w.free();
  }
  if (f == flavor::dynamic) dyn.free();
  stop.store(true);
  writer.join();
  EXPECT_EQ(std::atomic_ref<std::int64_t>(counter).load(), done_by_writer)
      << "increments of another thread were lost";
  for (int round = 0; round < rounds; ++round) {
    EXPECT_EQ(b->exposed[round], round * 100 + (me + p - 1) % p);
  }
}

TEST_F(Window, CreateAndFreeLeaveNeighbouringMemoryAlone) {
  covers("WIN-2", "WIN-17");
  {
    SCOPED_TRACE("64 elements");
    check_concurrent_stores_survive<64>(counter_at::beside);
  }
  {
    SCOPED_TRACE("1600 elements (whole pages inside)");
    check_concurrent_stores_survive<1600>(counter_at::beside);
  }
}

// The same with the counter inside the window (no RMA touches it): another thread's stores to
// the window memory survive create and free. On shm, pages that move into shared memory are
// write-protected while they move when the kernel allows it (userfaultfd); otherwise only pages
// wholly inside the window move, and window::create documents that other threads must not store
// to the window's memory while create() and free() run, so the large case is asserted only when
// the stores are held off.
TEST_F(Window, CreateAndFreeKeepConcurrentStoresToWindowMemory) {
  covers("WIN-2", "WIN-17");
  {
    SCOPED_TRACE("64 elements");
    check_concurrent_stores_survive<64>(counter_at::inside);
  }
  if (transport::shm_detail::can_fence_writes()) {
    SCOPED_TRACE("1600 elements (whole pages inside)");
    check_concurrent_stores_survive<1600>(counter_at::inside);
  }
}

// attach and detach are local calls that a program may make while its other threads work on
// the memory, beside the region or in it: attached regions move into shared memory only when
// the stores can be held off meanwhile, so no store is ever lost, whatever the kernel allows.
TEST_F(Window, AttachAndDetachKeepConcurrentStores) {
  covers("WIN-14", "WIN-16");
  for (const counter_at where : {counter_at::beside, counter_at::inside}) {
    SCOPED_TRACE(where == counter_at::beside ? "beside the region" : "inside the region");
    {
      SCOPED_TRACE("64 elements");
      check_concurrent_stores_survive<64>(where, flavor::dynamic);
    }
    {
      SCOPED_TRACE("1600 elements (whole pages inside)");
      check_concurrent_stores_survive<1600>(where, flavor::dynamic);
    }
  }
}

// How /proc/self/maps shows the page holding `address`: "rw-p" (private), "rw-s" (shared), or
// empty when unmapped.
std::string page_perms(const void* address) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  std::string perms;
  char line[512];
  while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char p[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 && lo <= a && a < hi) perms = p;
  }
  if (maps != nullptr) std::fclose(maps);
  return perms;
}

// Whether user memory moves into shared memory here with every page it touches (its edge
// pages too, as attach always needs): several ranks on one node, userfaultfd and
// ONESIDE_SHM_REMAP=1.
bool pages_move_fenced() {
  return world().size() > 1 && world_shares_memory() && transport::shm_detail::can_fence_writes() &&
         oneside::detail::setting_bool("ONESIDE_SHM_REMAP");
}

// n elements of -1 between two neighbours (11 before, 22 after) in one heap block: the
// window's edge pages hold other data of the program.
template <std::size_t N>
struct heap_block {
  std::int64_t before = 11;
  std::int64_t middle[N];
  std::int64_t after = 22;
};
template <std::size_t N>
std::unique_ptr<heap_block<N>> make_heap_block() {
  auto b = std::make_unique<heap_block<N>>();
  std::fill_n(b->middle, N, std::int64_t{-1});
  return b;
}

// On shm with several ranks, a window over heap memory that starts and ends inside pages it
// shares with other data is reachable by node peers through shared memory in full, edge pages
// included, when the kernel lets the pages move safely; those pages are private again after
// free, with every byte (the window's and its neighbours') as it was.
TEST_F(Window, CreateMovesEveryPageOfHeapMemoryIntoSharedMemory) {
  covers("WIN-2", "WIN-17");
  if (!pages_move_fenced()) {
    GTEST_SKIP() << "needs several ranks on one node, userfaultfd and ONESIDE_SHM_REMAP=1";
  }
  constexpr std::size_t n = 3000;  // 24000 bytes: edge pages shared with the neighbours
  auto b = make_heap_block<n>();
  std::int64_t* const exposed = b->middle;
  rma::window w = rma::window::create(world(), exposed, n * 8, 8);
  EXPECT_EQ(page_perms(&exposed[0]), "rw-s");
  EXPECT_EQ(page_perms(&exposed[n - 1]), "rw-s");
  EXPECT_EQ(page_perms(&b->before), "rw-s") << "the edge page moved with its neighbour";
  const rank_t me = rank(), p = size();
  const rank_t target = (me + 1) % p;
  w.fence();
  w.put(std::int64_t{me}, target, 0);
  w.put(std::int64_t{me + 1000}, target, n - 1);
  w.fence();
  settle(w);
  b->before += 1;  // the program keeps using its neighbouring data
  w.free();
  EXPECT_EQ(page_perms(&exposed[0]), "rw-p");
  EXPECT_EQ(page_perms(&exposed[n - 1]), "rw-p");
  const rank_t from = (me + p - 1) % p;
  EXPECT_EQ(exposed[0], from);
  EXPECT_EQ(exposed[n - 1], from + 1000);
  EXPECT_EQ(exposed[1], -1);
  EXPECT_EQ(b->before, 12);
  EXPECT_EQ(b->after, 22);
}

// Two windows over neighbouring parts of one array share a page: both work (the page moves
// with the first; the second reaches the rest of its memory as it can), and the bytes land.
TEST_F(Window, CreateOverNeighbouringMemoryOfTwoWindows) {
  covers("WIN-2", "WIN-17");
  constexpr std::size_t half = 700;  // 5600 bytes each: the windows share a page
  std::vector<std::int64_t> v(2 * half, -1);
  rma::window first = rma::window::create(world(), v.data(), half * 8, 8);
  rma::window second = rma::window::create(world(), v.data() + half, half * 8, 8);
  const rank_t me = rank(), p = size();
  const rank_t target = (me + 1) % p;
  for (rma::window* w : {&first, &second}) {
    w->lock_all();
    for (const disp_t d : {disp_t{0}, disp_t{half / 2}, disp_t{half - 1}}) {
      w->put(std::int64_t{me * 10 + (w == &second ? 1 : 0)}, target, d);
    }
    w->unlock_all();
  }
  settle(first);
  settle(second);
  const rank_t from = (me + p - 1) % p;
  for (std::size_t part = 0; part < 2; ++part) {
    for (const std::size_t d : {std::size_t{0}, half / 2, half - 1}) {
      EXPECT_EQ(v[part * half + d], from * 10 + static_cast<std::int64_t>(part))
          << "window " << part << " element " << d;
    }
    EXPECT_EQ(v[part * half + 1], -1);
  }
  second.free();
  first.free();
  EXPECT_EQ(v[half - 1], from * 10);
  EXPECT_EQ(v[half], from * 10 + 1);
}

// A window over user memory must not make the process's memory shared with its children: a
// forked child's writes (to the window's memory and beside it) stay in the child.
template <std::size_t N>
void check_fork_keeps_memory_private() {
  struct block {
    std::int64_t neighbour;
    std::int64_t exposed[N];
  };
  auto b = std::make_unique<block>();
  b->neighbour = 7;
  std::fill_n(b->exposed, N, std::int64_t{-1});
  rma::window w = rma::window::create(world(), b->exposed, sizeof b->exposed, 8);
  settle(w);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  EXPECT_GE(child, 0);
  if (child == 0) {
    b->neighbour = 99;
    b->exposed[0] = 99;
    b->exposed[N / 2] = 99;
    ::_exit(0);
  }
  if (child > 0) {
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_EQ(b->neighbour, 7) << "a forked child's write beside the window reached the parent";
  EXPECT_EQ(b->exposed[0], -1) << "a forked child's write to the window reached the parent";
  EXPECT_EQ(b->exposed[N / 2], -1) << "a forked child's write to the window reached the parent";
  // The window still works in the parent after the fork.
  const rank_t me = world().rank(), p = world().size();
  w.fence();
  w.put(std::int64_t{me}, (me + 1) % p, static_cast<disp_t>(N / 2));
  w.fence();
  settle(w);
  EXPECT_EQ(b->exposed[N / 2], (me + p - 1) % p);
}

TEST_F(Window, ForkedChildWritesStayInTheChild) {
  covers("WIN-2");
  {
    SCOPED_TRACE("64 elements");
    check_fork_keeps_memory_private<64>();
  }
  {
    SCOPED_TRACE("1600 elements (whole pages inside)");
    check_fork_keeps_memory_private<1600>();
  }
}

TEST_F(Window, TargetDispUnitScalesDisplacements) {
  covers("WIN-3", "COM-5", "WIN-27");
  constexpr std::ptrdiff_t units[] = {1, 4, 8, 16};
  constexpr std::size_t bytes = 64;
  for (flavor f : {flavor::create, flavor::allocate, flavor::allocate_shared}) {
    if (!flavor_available(f)) continue;
    for (bool same_disp_unit : {false, true}) {
      SCOPED_TRACE(flavor_name(f) + (same_disp_unit ? " same_disp_unit=true" : ""));
      // With the same_disp_unit hint every member passes 8 (WIN-27), else 1, 4, 8, 16 by rank.
      const std::ptrdiff_t unit = same_disp_unit ? 8 : units[rank() % 4];
      info hints;
      if (same_disp_unit) hints.set("same_disp_unit", "true");
      test_window tw = make_window(f, world(), bytes, unit, hints);
      EXPECT_EQ(tw.win.disp_unit(), unit);
      std::memset(tw.local(), 0, bytes);
      settle(tw.win);
      const rank_t target = (rank() + 1) % size();
      const auto mark = static_cast<unsigned char>(0x40 + rank());
      tw.win.fence();
      tw.win.put(&mark, 1, datatype::of<unsigned char>(), target, 3, 1,
                 datatype::of<unsigned char>());
      tw.win.fence();
      settle(tw.win);
      const rank_t origin = (rank() + size() - 1) % size();
      const auto* mem = reinterpret_cast<const unsigned char*>(tw.local());
      const auto at = static_cast<std::size_t>(3 * unit);
      for (std::size_t b = 0; b < bytes; ++b) {
        const unsigned want = b == at ? 0x40U + static_cast<unsigned>(origin) : 0U;
        EXPECT_EQ(mem[b], want) << "byte " << b << " (disp_unit " << unit << ")";
      }
    }
  }
}

TEST_F(Window, AllocateGivesAlignedMemoryOfEachMembersSize) {
  covers("WIN-6", "WIN-19");
  const std::size_t bytes = static_cast<std::size_t>(rank() % 3) * 40;  // 0 on ranks 0, 3, 6
  rma::window w = rma::window::allocate(world(), bytes, 8);
  EXPECT_EQ(w.size(), bytes);
  EXPECT_EQ(w.disp_unit(), 8);
  EXPECT_EQ(w.flavor(), flavor::allocate);
  EXPECT_EQ(w.model(), expected_model());
  if (bytes > 0) {
    EXPECT_NE(w.base(), nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w.base()) % alignof(std::max_align_t), 0U);
    std::fill_n(static_cast<std::int64_t*>(w.base()), bytes / 8, std::int64_t{-1});
  }
  settle(w);
  const rank_t target = (rank() + 1) % size();
  const std::size_t target_bytes = static_cast<std::size_t>(target % 3) * 40;
  const std::int64_t value = rank() + 1;
  w.fence();
  if (target_bytes > 0) w.put(value, target, 4);  // element 4: bytes 32..39 of 40
  w.fence();
  settle(w);
  if (bytes > 0) {
    const auto* mem = static_cast<const std::int64_t*>(w.base());
    const rank_t origin = (rank() + size() - 1) % size();
    for (std::size_t e = 0; e < bytes / 8; ++e) {
      EXPECT_EQ(mem[e], e == 4 ? origin + 1 : -1) << "element " << e;
    }
  }
}

TEST_F(Window, AttributesOfEveryFlavor) {
  covers("WIN-19", "WIN-13", "MEM-5", "MEM-6");
  const std::size_t bytes = 16 * static_cast<std::size_t>(rank() + 1);
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), bytes, 4);
    const rma::window& w = tw.win;
    EXPECT_EQ(w.flavor(), f);
    EXPECT_EQ(w.model(), expected_model());
    switch (f) {
      case flavor::create:
        EXPECT_EQ(w.base(), static_cast<void*>(tw.memory.data()));
        EXPECT_EQ(w.size(), bytes);
        EXPECT_EQ(w.disp_unit(), 4);
        break;
      case flavor::allocate:
        EXPECT_NE(w.base(), nullptr);
        EXPECT_EQ(w.size(), bytes);
        EXPECT_EQ(w.disp_unit(), 4);
        break;
      case flavor::allocate_shared:
        EXPECT_NE(w.base(), nullptr);
        EXPECT_EQ(w.base(), w.shared_query(rank()).base);
        EXPECT_EQ(w.size(), bytes);
        EXPECT_EQ(w.disp_unit(), 4);
        break;
      case flavor::dynamic: {
        // MPI_BOTTOM, size 0, disp_unit 1, before and after attaching more regions.
        EXPECT_EQ(w.base(), nullptr);
        EXPECT_EQ(w.size(), 0U);
        EXPECT_EQ(w.disp_unit(), 1);
        std::vector<std::byte> more(64);
        tw.win.attach(more.data(), more.size());
        EXPECT_EQ(w.base(), nullptr);
        EXPECT_EQ(w.size(), 0U);
        EXPECT_EQ(w.disp_unit(), 1);
        tw.win.detach(more.data());
        break;
      }
    }
  }
}

TEST_F(Window, GetInfoReportsDefaultsAndIsIndependent) {
  covers("WIN-23", "WIN-24", "WIN-25", "WIN-26");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 64, 8);
    info in_effect = tw.win.get_info();
    EXPECT_EQ(in_effect.get("accumulate_ordering"), "rar,raw,war,waw");
    EXPECT_EQ(in_effect.get("accumulate_ops"), "same_op_no_op");
    EXPECT_EQ(in_effect.get("no_locks"), "false");
    // The returned object is the caller's: changing it changes nothing in the window.
    in_effect.set("accumulate_ops", "same_op");
    in_effect.set("accumulate_ordering", "none");
    in_effect.erase("no_locks");
    const info again = tw.win.get_info();
    EXPECT_EQ(again.get("accumulate_ordering"), "rar,raw,war,waw");
    EXPECT_EQ(again.get("accumulate_ops"), "same_op_no_op");
    EXPECT_EQ(again.get("no_locks"), "false");
  }
}

TEST_F(Window, UnknownHintsAreAcceptedAndChangeNothing) {
  covers("WIN-21");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    const info hints{{"foo", "bar"}, {"oneside_no_such_key", "17"}};
    std::optional<test_window> made;
    expect_ok("creating a window with unknown hints", [&] {
      made.emplace(make_window(f, world(), 8 * sizeof(long), sizeof(long), hints));
    });
    if (!made) continue;  // the same on every rank: the check is local
    test_window& tw = *made;
    std::fill_n(tw.local_as<long>(), 8, -1L);
    settle(tw.win);
    const rank_t target = (rank() + 1) % size();
    tw.win.lock_all();
    tw.win.put(static_cast<long>(rank() * 10), target, tw.disp(target, 2));
    tw.win.flush(target);
    long back = 0;
    tw.win.get(std::span<long>(&back, 1), target, tw.disp(target, 2));
    tw.win.flush(target);
    EXPECT_EQ(back, rank() * 10);
    tw.win.unlock_all();
    settle(tw.win);
  }
}

TEST_F(Window, SetInfoKeepsKeysItDoesNotMention) {
  covers("WIN-22", "WIN-25", "WIN-26");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw =
        make_window(f, world(), sizeof(long), sizeof(long), info{{"accumulate_ordering", "none"}});
    const info before = tw.win.get_info();
    if (before.contains("accumulate_ordering")) {
      EXPECT_EQ(before.get("accumulate_ordering"), "none");
    }
    tw.win.set_info(info{{"accumulate_ops", "same_op"}});  // collective
    const info after = tw.win.get_info();
    if (after.contains("accumulate_ordering")) {
      EXPECT_EQ(after.get("accumulate_ordering"), "none") << "a key set_info did not mention";
    }
    if (after.contains("accumulate_ops")) {
      const std::string ops = *after.get("accumulate_ops");
      EXPECT_TRUE(ops == "same_op" || ops == "same_op_no_op") << ops;
    }
    // The promise kept (only sum, concurrently): exact total (WIN-26).
    *tw.local_as<long>() = 0;
    settle(tw.win);
    tw.win.lock_all();
    const long one = 1;
    for (int i = 0; i < 10; ++i) {
      tw.win.accumulate(std::span<const long>(&one, 1), 0, tw.disp(0, 0), op::sum);
    }
    tw.win.unlock_all();
    settle(tw.win);
    if (rank() == 0) {
      EXPECT_EQ(*tw.local_as<long>(), 10L * size());
    }
  }
}

TEST_F(Window, SameSizeHintWithEqualSizes) {
  covers("WIN-7");
  rma::window w =
      rma::window::allocate(world(), 4 * sizeof(double), sizeof(double), {{"same_size", "true"}});
  const info in_effect = w.get_info();
  if (in_effect.contains("same_size")) {
    EXPECT_EQ(in_effect.get("same_size"), "true");
  }
  std::fill_n(static_cast<double*>(w.base()), 4, 0.0);
  settle(w);
  const rank_t target = (rank() + 1) % size();
  const double v[2] = {rank() + 0.5, rank() + 0.25};
  w.fence();
  w.put(std::span<const double>(v, 2), target, 1);
  w.fence();
  double back[2] = {0, 0};
  w.get(std::span<double>(back, 2), target, 1);
  w.fence(mode::nosucceed);
  EXPECT_EQ(back[0], v[0]);
  EXPECT_EQ(back[1], v[1]);
  settle(w);
}

TEST_F(Window, NoLocksWindowWorksWithFence) {
  covers("WIN-24");
  rma::window w = rma::window::allocate(world(), sizeof(int), sizeof(int), {{"no_locks", "true"}});
  if (w.get_info().contains("no_locks")) {
    EXPECT_EQ(w.get_info().get("no_locks"), "true");
  }
  *static_cast<int*>(w.base()) = -1;
  settle(w);
  const rank_t target = (rank() + 1) % size();
  w.fence();
  w.put(rank(), target, 0);
  w.fence();
  settle(w);
  EXPECT_EQ(*static_cast<int*>(w.base()), (rank() + size() - 1) % size());
  // The promise broken: oneside checks it (rma_sync) or documents it as unchecked.
  try {
    w.lock(rma::lock_type::shared, target);
    w.unlock(target);
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::rma_sync) << e.what();
  }
  settle(w);
}

TEST_F(Window, OneBufferInTwoWindows) {
  covers("WIN-5", "MEM-14");
  std::vector<std::int64_t> buf(4, -1);
  rma::window a = rma::window::create(world(), buf.data(), buf.size() * 8, 8);
  rma::window b = rma::window::create(world(), buf.data(), buf.size() * 8, 8);
  const rank_t target = (rank() + 1) % size();
  // A put through a, completed by fences on a and then b, is read through b.
  a.fence();
  a.put(std::int64_t{500 + rank()}, target, 2);
  a.fence();
  b.fence();
  std::int64_t got = 0;
  b.get(std::span<std::int64_t>(&got, 1), target, 2);
  b.fence();
  EXPECT_EQ(got, 500 + rank());
  settle(a);
  settle(b);
  EXPECT_EQ(buf[2], 500 + (rank() + size() - 1) % size());
}

// ---- allocate_shared ----------------------------------------------------------------------

// The tests below make shared windows over world(): they need every rank on this node.
constexpr const char* needs_one_node = "allocate_shared over world() needs every rank on this node";

// Members that do not share memory cannot make a shared window (WIN-8; the rma_shared error
// of ERR-14): every member raises the error, and the job goes on. Reachable where ranks do not
// all share memory (ONESIDE_SHM_LOAD_STORE=0, other nodes).
TEST_F(Window, SharedWindowsNeedMembersThatShareMemory) {
  covers("WIN-8");
  if (world_shares_memory()) {
    GTEST_SKIP() << "every rank is on this node (ONESIDE_SHM_LOAD_STORE=0 shows the other case)";
  }
  expect_error(error_class::rma_shared, "allocate_shared",
               [&] { rma::window::allocate_shared(world(), 64, 8); });
  expect_ok("allocate_shared over the local team", [&] {
    rma::window w = rma::window::allocate_shared(local_team(), 64, 8);
    EXPECT_NE(w.shared_query(0).base, nullptr);
    w.free();
  });
  expect_ok("a window of another flavour over world()", [&] {
    rma::window w = rma::window::allocate(world(), 64, 8);
    w.free();
  });
}

TEST_F(Window, SharedSegmentsAreContiguousByDefault) {
  covers("WIN-8", "WIN-9", "WIN-11");
  if (!world_shares_memory()) GTEST_SKIP() << needs_one_node;
  constexpr std::size_t sizes[] = {0, 24, 8, 40};
  constexpr std::ptrdiff_t units[] = {1, 2, 4, 8};
  const auto size_of = [&](rank_t r) { return sizes[r % 4]; };
  rma::window w = rma::window::allocate_shared(world(), size_of(rank()), units[rank() % 4]);
  const info in_effect = w.get_info();
  if (in_effect.contains("alloc_shared_noncontig")) {
    EXPECT_EQ(in_effect.get("alloc_shared_noncontig"), "false");
  }
  std::byte* previous_end = nullptr;
  std::byte* first = nullptr;
  std::size_t total = 0;
  for (rank_t r = 0; r < size(); ++r) {
    const rma::shared_segment s = w.shared_query(r);
    EXPECT_EQ(s.size, size_of(r)) << "member " << r;
    EXPECT_EQ(s.disp_unit, units[r % 4]) << "member " << r;
    if (s.size == 0) continue;
    auto* b = static_cast<std::byte*>(s.base);
    EXPECT_NE(b, nullptr) << "member " << r;
    if (previous_end != nullptr) {
      EXPECT_EQ(b, previous_end) << "member " << r << " (WIN-9)";
    }
    if (first == nullptr) first = b;
    previous_end = b + s.size;
    total += s.size;
  }
  if (first != nullptr) {
    EXPECT_EQ(first + total, previous_end);
  }
  if (size_of(rank()) > 0) {
    EXPECT_EQ(w.base(), w.shared_query(rank()).base);
  }
  // proc_null names the lowest member with memory.
  const rma::shared_segment lowest = w.shared_query(proc_null);
  if (size() >= 2) {
    EXPECT_EQ(lowest.base, w.shared_query(1).base);
    EXPECT_EQ(lowest.size, 24U);
    EXPECT_EQ(lowest.disp_unit, 2);
  } else {
    EXPECT_EQ(lowest.size, 0U);
  }
  // The memory is one array: every member writes its bytes through its own base, every member
  // reads the whole array through rank 0's view of it.
  if (size_of(rank()) > 0) {
    std::memset(w.base(), 0x10 + rank(), size_of(rank()));
  }
  settle(w);
  if (first != nullptr) {
    std::size_t at = 0;
    for (rank_t r = 0; r < size(); ++r) {
      for (std::size_t b = 0; b < size_of(r); ++b, ++at) {
        EXPECT_EQ(std::to_integer<int>(first[at]), 0x10 + r) << "member " << r << " byte " << b;
      }
    }
  }
  settle(w);
}

TEST_F(Window, SharedQueryOfProcNullAndOfEmptySegments) {
  covers("WIN-11");
  if (!world_shares_memory()) GTEST_SKIP() << needs_one_node;
  {
    constexpr std::size_t sizes[] = {0, 0, 16, 8};
    rma::window w = rma::window::allocate_shared(world(), sizes[rank() % 4], 4);
    const rma::shared_segment s = w.shared_query(proc_null);
    if (size() >= 3) {
      EXPECT_EQ(s.base, w.shared_query(2).base);
      EXPECT_NE(s.base, nullptr);
      EXPECT_EQ(s.size, 16U);
    } else {
      EXPECT_EQ(s.size, 0U);
    }
  }
  {
    SCOPED_TRACE("every size 0");
    rma::window w = rma::window::allocate_shared(world(), 0, 4);
    EXPECT_EQ(w.size(), 0U);
    const rma::shared_segment s = w.shared_query(proc_null);
    EXPECT_EQ(s.size, 0U);
    for (rank_t r = 0; r < size(); ++r) EXPECT_EQ(w.shared_query(r).size, 0U);
  }
}

TEST_F(Window, NoncontigSharedSegmentsReachEveryMember) {
  covers("WIN-10", "WIN-11");
  if (!world_shares_memory()) GTEST_SKIP() << needs_one_node;
  const std::size_t count = 4 + static_cast<std::size_t>(rank());
  rma::window w =
      rma::window::allocate_shared(world(), count * sizeof(std::int64_t), sizeof(std::int64_t),
                                   {{"alloc_shared_noncontig", "true"}});
  auto* mine = static_cast<std::int64_t*>(w.base());
  for (std::size_t i = 0; i < count; ++i) mine[i] = rank() * 100 + static_cast<std::int64_t>(i);
  settle(w);
  for (rank_t r = 0; r < size(); ++r) {
    const rma::shared_segment s = w.shared_query(r);
    const std::size_t n = 4 + static_cast<std::size_t>(r);
    EXPECT_EQ(s.size, n * sizeof(std::int64_t));
    EXPECT_EQ(s.disp_unit, static_cast<std::ptrdiff_t>(sizeof(std::int64_t)));
    const auto* p = static_cast<const std::int64_t*>(s.base);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(p[i], r * 100 + static_cast<std::int64_t>(i)) << "member " << r << " element " << i;
    }
  }
  settle(w);
  // Stores through the query pointer land in the neighbour's own memory.
  const rank_t right = (rank() + 1) % size();
  static_cast<std::int64_t*>(w.shared_query(right).base)[0] = -1 - rank();
  settle(w);
  EXPECT_EQ(mine[0], -1 - (rank() + size() - 1) % size());
  settle(w);
}

TEST_F(Window, SharedLoadsSeeStoresAndPutsAfterSync) {
  covers("WIN-8", "WIN-12", "SYN-28", "MEM-6");
  if (!world_shares_memory()) GTEST_SKIP() << needs_one_node;
  constexpr std::size_t count = 4;
  rma::window w =
      rma::window::allocate_shared(world(), count * sizeof(std::int64_t), sizeof(std::int64_t));
  EXPECT_EQ(w.model(), expected_model());
  auto* mine = static_cast<std::int64_t*>(w.base());
  w.lock_all();
  for (std::size_t i = 0; i < count; ++i) mine[i] = rank() + 1;
  w.sync();
  barrier(world());
  w.sync();
  for (rank_t r = 0; r < size(); ++r) {
    const auto* p = static_cast<const std::int64_t*>(w.shared_query(r).base);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(p[i], r + 1) << "member " << r;
  }
  barrier(world());
  // An RMA put into the neighbour's segment is seen by the neighbour's loads.
  const rank_t right = (rank() + 1) % size();
  w.put(std::int64_t{1000} + rank(), right, 1);
  w.flush(right);
  barrier(world());
  w.sync();
  EXPECT_EQ(mine[1], 1000 + (rank() + size() - 1) % size());
  w.unlock_all();
  settle(w);
}

TEST_F(Window, SyncMakesFlagPollingSafe) {
  covers("SYN-28", "WIN-12");
  if (!world_shares_memory()) GTEST_SKIP() << needs_one_node;
  // Member 0's segment: 64 data words, then a flag.
  constexpr std::size_t words = 64;
  rma::window w = rma::window::allocate_shared(
      world(), rank() == 0 ? (words + 1) * sizeof(std::int64_t) : 0, sizeof(std::int64_t));
  auto* seg = static_cast<std::int64_t*>(w.shared_query(0).base);
  if (rank() == 0) {
    for (std::size_t i = 0; i <= words; ++i) seg[i] = 0;
  }
  settle(w);
  w.lock_all();
  for (int round = 1; round <= 3; ++round) {
    if (rank() == 0) {
      for (std::size_t i = 0; i < words; ++i) seg[i] = round * 1000 + static_cast<int>(i);
      w.sync();
      std::atomic_ref<std::int64_t>(seg[words]).store(round, std::memory_order_relaxed);
    } else {
      while (std::atomic_ref<std::int64_t>(seg[words]).load(std::memory_order_relaxed) < round) {
        w.sync();
        std::this_thread::yield();
      }
      w.sync();
      int stale = 0;
      for (std::size_t i = 0; i < words; ++i) {
        stale += seg[i] == round * 1000 + static_cast<int>(i) ? 0 : 1;
      }
      EXPECT_EQ(stale, 0) << "round " << round;
    }
    barrier(world());
  }
  w.unlock_all();
  settle(w);
}

// ---- dynamic windows ------------------------------------------------------------------------

std::vector<std::uint64_t> addresses_of(const void* p) {
  return allgather(world(), std::uint64_t{reinterpret_cast<std::uintptr_t>(p)});
}

TEST_F(Window, DynamicAttachRmaDetachAndReattach) {
  covers("WIN-13", "WIN-14", "WIN-15", "WIN-16", "COM-5", "COM-8", "ERR-12");
  constexpr std::size_t n = 8;
  rma::window w = rma::window::create_dynamic(world());
  // One spare element past each attached region: whatever the allocator places next, the
  // element right after a region is never attached memory.
  std::vector<std::int64_t> region[3] = {std::vector<std::int64_t>(n + 1, -1),
                                         std::vector<std::int64_t>(n + 1, -1),
                                         std::vector<std::int64_t>(n + 1, -1)};
  std::vector<std::uint64_t> where[3];
  for (int k = 0; k < 3; ++k) {
    w.attach(region[k].data(), n * sizeof(std::int64_t));
    where[k] = addresses_of(region[k].data());
  }
  barrier(world());  // every attach has returned before anyone targets the regions
  const rank_t target = (rank() + 1) % size();
  const rank_t origin = (rank() + size() - 1) % size();
  const auto at = [&](int k, rank_t t, std::size_t e) {
    return static_cast<disp_t>(where[k][static_cast<std::size_t>(t)] + e * sizeof(std::int64_t));
  };
  w.lock_all();
  for (int k = 0; k < 3; ++k) {
    w.put(std::int64_t{(rank() + 1) * 10 + k}, target, at(k, target, static_cast<std::size_t>(k)));
  }
  w.unlock_all();
  settle(w);
  for (int k = 0; k < 3; ++k) {
    for (std::size_t e = 0; e < n; ++e) {
      EXPECT_EQ(region[k][e], e == static_cast<std::size_t>(k) ? (origin + 1) * 10 + k : -1)
          << "region " << k << " element " << e;
    }
  }

  // Detached memory is no longer part of the window: the origin's view of the target's
  // regions must be refreshed, and the put rejected before it touches anything.
  w.detach(region[1].data());
  barrier(world());
  w.lock_all();
  expect_error(error_class::rma_range, "put",
               [&] { w.put(std::int64_t{-77}, target, at(1, target, 0)); });
  w.unlock_all();
  settle(w);
  for (std::size_t e = 0; e < n; ++e) {
    EXPECT_EQ(region[1][e], e == 1 ? (origin + 1) * 10 + 1 : -1) << "detached, element " << e;
  }
  // Re-attached, it is reachable again.
  w.attach(region[1].data(), n * sizeof(std::int64_t));
  barrier(world());
  w.lock_all();
  EXPECT_TRUE(expect_ok("put after re-attach",
                        [&] { w.put(std::int64_t{500 + rank()}, target, at(1, target, 5)); }));
  w.unlock_all();
  settle(w);
  EXPECT_EQ(region[1][5], 500 + origin);

  // Memory never attached.
  std::vector<std::int64_t> never(n, 42);
  const std::vector<std::uint64_t> never_at = addresses_of(never.data());
  w.lock_all();
  expect_error(error_class::rma_range, "put", [&] {
    w.put(std::int64_t{-1}, target,
          static_cast<disp_t>(never_at[static_cast<std::size_t>(target)]));
  });
  std::int64_t got = 99;
  expect_error(error_class::rma_range, "get", [&] {
    w.get(std::span<std::int64_t>(&got, 1), target,
          static_cast<disp_t>(never_at[static_cast<std::size_t>(target)]));
  });
  EXPECT_EQ(got, 99);
  // Past the end of an attached region.
  expect_error(error_class::rma_range, "put",
               [&] { w.put(std::int64_t{-1}, target, at(0, target, n)); });
  w.unlock_all();
  settle(w);
  for (std::size_t e = 0; e < n; ++e) EXPECT_EQ(never[e], 42) << "never attached, element " << e;
  EXPECT_EQ(region[0][0], (origin + 1) * 10);
  EXPECT_EQ(region[0][n], -1) << "the rejected put past the end of region 0 wrote there";

  // One access must lie inside one region, not across two adjacent ones.
  std::vector<std::int64_t> pair(2 * n, 0);
  w.attach(pair.data(), n * sizeof(std::int64_t));
  w.attach(pair.data() + n, n * sizeof(std::int64_t));
  const std::vector<std::uint64_t> pair_at = addresses_of(pair.data());
  barrier(world());
  const auto pair_disp = [&](std::size_t e) {
    return static_cast<disp_t>(pair_at[static_cast<std::size_t>(target)] +
                               e * sizeof(std::int64_t));
  };
  w.lock_all();
  const std::int64_t two[2] = {7, 8};
  expect_error(error_class::rma_range, "put",
               [&] { w.put(std::span<const std::int64_t>(two, 2), target, pair_disp(n - 1)); });
  expect_ok("put inside the first half",
            [&] { w.put(std::span<const std::int64_t>(two, 2), target, pair_disp(n - 2)); });
  expect_ok("put inside the second half",
            [&] { w.put(std::span<const std::int64_t>(two, 2), target, pair_disp(n)); });
  w.unlock_all();
  settle(w);
  for (std::size_t e = 0; e < 2 * n; ++e) {
    const std::int64_t want = e == n - 2 || e == n ? 7 : e == n - 1 || e == n + 1 ? 8 : 0;
    EXPECT_EQ(pair[e], want) << "pair element " << e;
  }
  // Freeing a window with regions attached detaches them; the memory stays the user's.
  w.free();
  EXPECT_EQ(region[2][2], (origin + 1) * 10 + 2);
  EXPECT_EQ(pair[n], 7);
}

TEST_F(Window, DynamicAttachAndDetachErrors) {
  covers("WIN-14", "WIN-16", "ERR-5", "ERR-6", "ERR-13");
  rma::window w = rma::window::create_dynamic(world());
  std::vector<std::int64_t> buf(16, 0);
  w.attach(buf.data(), buf.size() * sizeof(std::int64_t));
  // Overlapping an attached region.
  expect_error(error_class::rma_attach, "attach",
               [&] { w.attach(buf.data() + 1, 2 * sizeof(std::int64_t)); });
  expect_error(error_class::rma_attach, "attach",
               [&] { w.attach(buf.data(), buf.size() * sizeof(std::int64_t)); });
  // Detach needs the base of an attached region.
  expect_error(error_class::base, "detach", [&] { w.detach(buf.data() + 1); });
  std::int64_t elsewhere = 0;
  expect_error(error_class::base, "detach", [&] { w.detach(&elsewhere); });
  // A null base.
  expect_error(error_class::base, "attach", [&] { w.attach(nullptr, 64); });
  // Only accessible memory (issue 18): a size far past the object, a region whose end runs
  // into an unmapped page, a region that wraps around the address space.
  std::vector<std::int64_t> other(16, 0);
  expect_error(error_class::rma_attach, "attach",
               [&] { w.attach(other.data(), std::size_t{1} << 62); });
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* const two =
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(two, MAP_FAILED);
  ASSERT_EQ(munmap(static_cast<std::byte*>(two) + page, page), 0);
  expect_error(error_class::rma_attach, "attach", [&] { w.attach(two, 2 * page); });
  expect_error(error_class::size, "attach",
               [&] { w.attach(other.data(), std::numeric_limits<std::size_t>::max() - 8); });
  // The mapped page alone attaches (and detaches): the check does not reject good memory.
  expect_ok("attach of the mapped page", [&] { w.attach(two, page); });
  expect_ok("detach of the mapped page", [&] { w.detach(two); });
  ASSERT_EQ(munmap(two, page), 0);
  // The window is unchanged: the region is still there, once.
  barrier(world());
  const std::vector<std::uint64_t> at = addresses_of(buf.data());
  const rank_t target = (rank() + 1) % size();
  w.lock_all();
  expect_ok("put after rejected attach/detach calls", [&] {
    w.put(std::int64_t{rank() + 1}, target,
          static_cast<disp_t>(at[static_cast<std::size_t>(target)]));
  });
  w.unlock_all();
  settle(w);
  EXPECT_EQ(buf[0], (rank() + size() - 1) % size() + 1);
  expect_ok("detach of the attached base", [&] { w.detach(buf.data()); });
  expect_error(error_class::base, "detach", [&] { w.detach(buf.data()); });
}

// A region of a page or more moves into shared memory at attach, edge pages included (they are
// shared with other heap data here): a node peer loads and stores it (the transport's direct()
// answers for it; before this, atomics on attached memory went through the owner's agent). A
// region under a page stays private (its atomics go to the owner's agent). Detach gives the
// pages back as private memory with every byte as it was, no peer reaches them any more, and
// the owner's later stores are its own; attached again, the region is reached afresh.
TEST_F(Window, AttachedRegionsOfAPageOrMoreAreLoadStoreReachable) {
  covers("WIN-13", "WIN-14", "WIN-16");
  constexpr std::size_t n = 3000;  // 24000 bytes: edge pages shared with the neighbours
  auto b = make_heap_block<n>();
  std::int64_t* const region = b->middle;
  // A region under a page, on a page of its own (no neighbour's region moves it).
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::unique_ptr<std::int64_t, decltype(&std::free)> small_page(
      static_cast<std::int64_t*>(std::aligned_alloc(page, page)), &std::free);
  const std::span<std::int64_t> small(small_page.get(), 4);
  std::fill(small.begin(), small.end(), std::int64_t{-1});
  rma::window w = rma::window::create_dynamic(world());
  w.attach(region, n * 8);
  w.attach(small.data(), small.size() * sizeof(std::int64_t));
  const std::vector<std::uint64_t> big_at = addresses_of(region);
  const std::vector<std::uint64_t> small_at = addresses_of(small.data());
  const std::vector<std::uint64_t> after_at = addresses_of(&b->after);
  barrier(world());  // every attach has returned
  const rank_t me = rank(), p = size();
  const rank_t target = right(), origin = left();
  const auto t = static_cast<std::size_t>(target);
  transport::backend& tp = transport::current();
  const bool moves = pages_move_fenced();
  if (moves) {
    EXPECT_EQ(page_perms(&region[0]), "rw-s");
    EXPECT_EQ(page_perms(&region[n - 1]), "rw-s");
    EXPECT_EQ(page_perms(&b->before), "rw-s") << "the edge page moved with the region";
    EXPECT_NE(tp.direct(target, big_at[t], n * 8), nullptr)
        << "a node peer does not load and store the attached region";
    EXPECT_EQ(tp.direct(target, after_at[t], 8), nullptr)
        << "the data beside the region on its moved edge page is reachable through it";
  }
  EXPECT_EQ(page_perms(small.data()), "rw-p") << "a region under a page moved";
  if (p > 1) {
    EXPECT_EQ(tp.direct(target, small_at[t], small.size() * sizeof(std::int64_t)), nullptr);
  }
  const auto big = [&](std::size_t e) { return static_cast<disp_t>(big_at[t] + e * 8); };
  const auto tiny = [&](std::size_t e) { return static_cast<disp_t>(small_at[t] + e * 8); };
  w.lock_all();
  w.put(std::int64_t{me}, target, big(0));
  w.put(std::int64_t{me + 1000}, target, big(n - 1));
  EXPECT_EQ(w.fetch_and_op(std::int64_t{5}, target, big(1), op::sum), -1);
  EXPECT_EQ(w.fetch_and_op(std::int64_t{7}, target, tiny(1), op::sum), -1);
  const std::int64_t add = 3;
  w.accumulate(std::span<const std::int64_t>(&add, 1), target, tiny(0), op::sum);
  w.unlock_all();
  b->before += 1;  // the program keeps using its neighbouring data
  settle(w);
  EXPECT_EQ(region[0], origin);
  EXPECT_EQ(region[1], 4);
  EXPECT_EQ(region[n - 1], origin + 1000);
  EXPECT_EQ(region[2], -1);
  EXPECT_EQ(small[0], 2);
  EXPECT_EQ(small[1], 6);
  w.detach(region);
  w.detach(small.data());
  EXPECT_EQ(page_perms(&region[0]), "rw-p");
  EXPECT_EQ(page_perms(&region[n - 1]), "rw-p");
  EXPECT_EQ(page_perms(&b->before), "rw-p");
  barrier(world());  // every detach has returned
  if (p > 1) {
    EXPECT_EQ(tp.direct(target, big_at[t], n * 8), nullptr)
        << "a node peer still reaches a detached region";
  }
  barrier(world());  // before anyone attaches again
  EXPECT_EQ(b->before, 12);
  EXPECT_EQ(b->after, 22);
  EXPECT_EQ(region[1], 4);
  // The owner reuses its memory, then attaches it again: origins see what it wrote.
  std::fill_n(region, n, std::int64_t{100 + me});
  w.attach(region, n * 8);
  barrier(world());
  w.lock_all();
  std::int64_t back[2] = {0, 0};
  w.get(std::span<std::int64_t>(back, 1), target, big(0));
  w.get(std::span<std::int64_t>(back + 1, 1), target, big(n / 2));
  w.unlock_all();
  EXPECT_EQ(back[0], 100 + target);
  EXPECT_EQ(back[1], 100 + target);
  w.free();  // detaches the region
  EXPECT_EQ(page_perms(&region[0]), "rw-p");
  EXPECT_EQ(region[n / 2], 100 + me);
}

// A region inside memory another window moved into shared memory (a create window over a
// larger array) is reached as that memory, never through the other window's pages: when that
// window is freed (its pages become private again) while the region stays attached, operations
// on the region still reach the owner's memory. The same for two create windows over one array.
TEST_F(Window, RegionsInsideAnotherWindowsMemoryOutliveThatWindow) {
  covers("WIN-2", "WIN-14", "WIN-17");
  constexpr std::size_t n = 3000;
  std::vector<std::int64_t> host(n, 0);
  const rank_t me = rank();
  const rank_t target = right(), origin = left();
  const std::size_t first = 100, count = 600;  // 4800 bytes inside the create window's memory
  rma::window outer = rma::window::create(world(), host.data(), n * 8, 8);
  rma::window dyn = rma::window::create_dynamic(world());
  dyn.attach(host.data() + first, count * 8);
  const std::vector<std::uint64_t> at = addresses_of(host.data() + first);
  barrier(world());
  const auto d = [&](std::size_t e) {
    return static_cast<disp_t>(at[static_cast<std::size_t>(target)] + e * 8);
  };
  const auto hammer = [&] {
    dyn.lock_all();
    for (int i = 0; i < 10; ++i) (void)dyn.fetch_and_op(std::int64_t{1}, target, d(1), op::sum);
    dyn.put(std::int64_t{me + 1}, target, d(count / 2));
    dyn.unlock_all();
  };
  hammer();  // the origins' view of the region exists before the other window goes
  settle(dyn);
  EXPECT_EQ(host[first + 1], 10);
  outer.free();
  hammer();
  settle(dyn);
  EXPECT_EQ(host[first + 1], 20) << "fetch_and_op went to memory the freed window held";
  EXPECT_EQ(host[first + count / 2], origin + 1);
  dyn.free();

  // Two create windows over one array: the second outlives the first.
  std::vector<std::int64_t> buf(1024, 0);
  rma::window a = rma::window::create(world(), buf.data(), buf.size() * 8, 8);
  rma::window b = rma::window::create(world(), buf.data(), buf.size() * 8, 8);
  settle(a);
  a.free();
  b.lock_all();
  for (int i = 0; i < 10; ++i) (void)b.fetch_and_op(std::int64_t{1}, target, 3, op::sum);
  b.unlock_all();
  settle(b);
  EXPECT_EQ(buf[3], 10) << "fetch_and_op went to memory the freed window held";
}

// Regions that share a page: the one attached first moves it; operations on the other's bytes
// there reach the owner's memory, while the first is detached and attached again and again
// (its page moving each time): no put is lost, every get reads the last put. Rank 1's block,
// 60 KiB ending on the shared page, travels by cross-memory attach, which pins the pages it
// writes and then copies into them one by one: a move of the last one meanwhile lost the put.
TEST_F(Window, RegionsSharingAPageWithARegionThatComesAndGoes) {
  covers("WIN-14", "WIN-16");
  // In 4 KiB pages of an anonymous mapping of 20: `staying` from byte 2696 to 74696, `coming`
  // from there to 80296; page 18 holds the last 968 bytes of one and the first of the other.
  constexpr std::size_t staying_count = 9000;
  constexpr std::size_t coming_count = 700;
  constexpr std::size_t big = 7680;   // rank 1: staying's last 7680 elements (16 pages)
  constexpr std::size_t small = 128;  // the others: 128 elements at 128 * rank
  constexpr std::size_t counter = 1300;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = std::max<std::size_t>(20 * 4096, 2 * page);
  void* const memory =
      ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  std::int64_t* const staying = static_cast<std::int64_t*>(memory) + 337;
  std::int64_t* const coming = staying + staying_count;  // attached and detached, never targeted
  std::fill(staying, coming + coming_count, std::int64_t{-1});
  rma::window w = rma::window::create_dynamic(world());
  w.attach(coming, coming_count * 8);
  w.attach(staying, staying_count * 8);
  const std::vector<std::uint64_t> at = addresses_of(staying);
  barrier(world());
  const rank_t me = rank(), p = size();
  ASSERT_LE(static_cast<std::size_t>(p) * small, counter);
  const std::size_t first = me == 1 ? staying_count - big : static_cast<std::size_t>(me) * small;
  const std::size_t count = me == 1 ? big : small;
  const auto mine = static_cast<disp_t>(at[0] + first * 8);
  const auto count_at = static_cast<disp_t>(at[0] + counter * 8);
  constexpr int rounds = 3000;
  int wrong = 0;
  int first_wrong = -1;
  std::vector<std::int64_t> out(count), back(count);
  w.lock_all();
  for (int i = 0; i < rounds; ++i) {
    if (me == 0) {
      w.detach(coming);
      w.attach(coming, coming_count * 8);
    }
    const std::int64_t value = me * 100000 + i;
    std::fill(out.begin(), out.end(), value);
    w.put(std::span<const std::int64_t>(out), 0, mine);
    w.flush(0);
    w.get(std::span<std::int64_t>(back), 0, mine);
    w.flush(0);
    const bool right =
        std::all_of(back.begin(), back.end(), [&](std::int64_t x) { return x == value; });
    if (!right && wrong++ == 0) first_wrong = i;
    (void)w.fetch_and_op(std::int64_t{1}, 0, count_at, op::sum);
  }
  w.unlock_all();
  EXPECT_EQ(wrong, 0) << "gets that did not read the last put (the first in round " << first_wrong
                      << ")";
  settle(w);
  if (me == 0) {
    for (rank_t r = 0; r < p; ++r) {
      const std::int64_t* b =
          staying + (r == 1 ? staying_count - big : static_cast<std::size_t>(r) * small);
      const auto n = static_cast<std::ptrdiff_t>(r == 1 ? big : small);
      EXPECT_EQ(std::count(b, b + n, r * 100000 + rounds - 1), n) << "block of rank " << r;
    }
    EXPECT_EQ(staying[counter], -1 + p * rounds);
  }
  w.free();
  ::munmap(memory, mapped);
}

// ---- errors of window calls ---------------------------------------------------------------

TEST_F(Window, CreationArgumentsAreChecked) {
  covers("WIN-4", "ERR-1", "ERR-5", "ERR-6", "ERR-7");
  std::vector<int> memory{1, 2, 3, 4};
  const std::size_t bytes = memory.size() * sizeof(int);
  constexpr auto huge = static_cast<std::size_t>(-8);  // "size -8"
  expect_error(error_class::disp, "create",
               [&] { rma::window::create(world(), memory.data(), bytes, 0); });
  expect_error(error_class::disp, "create",
               [&] { rma::window::create(world(), memory.data(), bytes, -4); });
  expect_error(error_class::disp, "allocate", [&] { rma::window::allocate(world(), 64, 0); });
  expect_error(error_class::disp, "allocate_shared",
               [&] { rma::window::allocate_shared(world(), 64, 0); });
  expect_error(error_class::base, "create", [&] { rma::window::create(world(), nullptr, 16, 1); });
  expect_error(error_class::size, "allocate", [&] { rma::window::allocate(world(), huge, 1); });
  expect_error(error_class::size, "allocate_shared",
               [&] { rma::window::allocate_shared(world(), huge, 1); });
  expect_error(error_class::size, "create",
               [&] { rma::window::create(world(), memory.data(), huge, 1); });
  // The job continues, the user's memory untouched, and windows can still be made.
  EXPECT_EQ(memory[0] + memory[1] + memory[2] + memory[3], 10);
  expect_ok("a valid window after rejected ones", [&] {
    rma::window w = rma::window::create(world(), memory.data(), bytes, sizeof(int));
    w.free();
  });
}

// Window memory is reserved in shared memory when the window is made (issue 18): a window
// larger than what /dev/shm has free raises no_mem on every member, with a message naming the
// free space, instead of being made and killing its owner with SIGBUS when a put first touches
// an unbacked page. Nothing is left behind (no object in /dev/shm), and the job goes on.
TEST_F(Window, MemoryBeyondTheFreeSharedMemoryRaisesNoMemOnEveryMember) {
  const std::size_t free = broadcast(world(), std::uint64_t{shm_free_bytes()}, 0);
  ONESIDE_SKIP_UNLESS_ALL(free > 0, "/dev/shm has no size limit");
  rma::window::allocate(world(), 8, 1).free();  // what the first window makes for good
  barrier(world());
  const std::vector<std::string> objects = job_shm_objects();
  barrier(world());
  // The member that could not reserve names /dev/shm; the others name that member.
  const auto expect_no_mem = [](std::string_view call, const auto& make) {
    expect_no_shared_memory(call, make, true);
  };
  constexpr std::size_t tib = std::size_t{1} << 40;
  for (const std::size_t bytes : {free + (free / 8) + (std::size_t{64} << 20), tib}) {
    SCOPED_TRACE(bytes);
    expect_no_mem("allocate", [&] { (void)rma::window::allocate(world(), bytes, 1); });
    // Only one member too large: every member raises all the same.
    expect_no_mem("allocate", [&] {
      (void)rma::window::allocate(world(), rank() == size() - 1 ? bytes : 64, 1);
    });
    if (world_shares_memory()) {
      expect_no_mem("allocate_shared",
                    [&] { (void)rma::window::allocate_shared(world(), bytes, 1); });
      info noncontig;
      noncontig.set("alloc_shared_noncontig", "true");
      expect_no_mem("allocate_shared", [&] {
        (void)rma::window::allocate_shared(world(), rank() == 0 ? bytes : 64, 1, noncontig);
      });
    }
  }
  barrier(world());
  EXPECT_EQ(job_shm_objects(), objects) << "a rejected window left objects in /dev/shm";
  barrier(world());
  // The job goes on: a window that fits works.
  rma::window w = rma::window::allocate(world(), sizeof(std::int64_t), sizeof(std::int64_t));
  w.fence();
  w.put(std::int64_t{rank() + 1}, right(), 0);
  w.fence();
  EXPECT_EQ(*static_cast<std::int64_t*>(w.base()), left() + 1);
  w.free();
}

TEST_F(Window, CallsOfAnotherFlavorAreRejected) {
  covers("WIN-11", "WIN-14", "WIN-16", "ERR-15");
  std::int64_t probe = 5;
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 64, 8);
    if (f != flavor::allocate_shared) {
      expect_error(error_class::rma_flavor, "shared_query", [&] { tw.win.shared_query(0); });
    }
    if (f != flavor::dynamic) {
      expect_error(error_class::rma_flavor, "attach", [&] { tw.win.attach(&probe, sizeof probe); });
      expect_error(error_class::rma_flavor, "detach", [&] { tw.win.detach(tw.local()); });
    }
    // Still a working window.
    tw.local_as<std::int64_t>()[0] = -1;
    settle(tw.win);
    const rank_t target = (rank() + 1) % size();
    tw.win.fence();
    tw.win.put(std::int64_t{rank()}, target, tw.disp(target, 0));
    tw.win.fence();
    settle(tw.win);
    EXPECT_EQ(tw.local_as<std::int64_t>()[0], (rank() + size() - 1) % size());
  }
}

TEST_F(Window, FreeWithAnEpochOpenIsRejected) {
  covers("WIN-17", "ERR-11");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 8, 8);
    tw.win.lock(rma::lock_type::shared, rank());
    expect_error(error_class::rma_sync, "free", [&] { tw.win.free(); });
    EXPECT_TRUE(tw.win.is_valid());
    tw.win.unlock(rank());
    tw.win.lock_all();
    expect_error(error_class::rma_sync, "free", [&] { tw.win.free(); });
    EXPECT_TRUE(tw.win.is_valid());
    tw.win.unlock_all();
    expect_ok("free after unlock_all", [&] { tw.win.free(); });
    EXPECT_FALSE(tw.win.is_valid());
  }
}

TEST_F(Window, FreedAndMovedFromWindowsAreRejected) {
  covers("ERR-4", "WIN-17");
  const std::int64_t value = 1;
  rma::window a = rma::window::allocate(world(), 8, 8);
  rma::window b = std::move(a);
  EXPECT_FALSE(a.is_valid());  // NOLINT(bugprone-use-after-move): the point of the test
  expect_error(error_class::win, "put", [&] { a.put(value, 0, 0); });
  expect_error(error_class::win, "fence", [&] { a.fence(); });
  expect_error(error_class::win, "lock_all", [&] { a.lock_all(); });
  expect_error(error_class::win, "free", [&] { a.free(); });
  // The moved-to window works.
  b.fence();
  b.put(value, rank(), 0);
  b.fence(mode::nosucceed);
  EXPECT_EQ(*static_cast<std::int64_t*>(b.base()), 1);
  b.free();
  EXPECT_FALSE(b.is_valid());
  expect_error(error_class::win, "put", [&] { b.put(value, 0, 0); });
  expect_error(error_class::win, "get_accumulate", [&] {
    std::int64_t r = 0;
    b.get_accumulate(nullptr, 0, datatype::of<std::int64_t>(), &r, 1, datatype::of<std::int64_t>(),
                     0, 0, 1, datatype::of<std::int64_t>(), op::no_op);
  });
  expect_error(error_class::win, "base", [&] { (void)b.base(); });
}

TEST_F(Window, FreeIsCollectiveAndWaitsForEveryMember) {
  covers("WIN-18", "WIN-17");
  std::vector<std::int64_t> memory(1, 0);
  rma::window w = rma::window::create(world(), memory.data(), sizeof(std::int64_t), 8);
  settle(w);
  // Every member adds to member 0's counter just before freeing.
  w.lock(rma::lock_type::shared, 0);
  const std::int64_t one = 1;
  w.accumulate(std::span<const std::int64_t>(&one, 1), 0, 0, op::sum);
  w.unlock(0);
  if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::int64_t entered = now_ns();
  w.free();
  const std::int64_t returned = now_ns();
  const std::vector<std::int64_t> entered_all = allgather(world(), entered);
  const std::int64_t last_entry = *std::max_element(entered_all.begin(), entered_all.end());
  EXPECT_GE(returned, last_entry) << "free returned before every member had called it";
  if (rank() == 0) {
    EXPECT_EQ(memory[0], size());
  }
}

// Last in this file: a failure here may take the process down (the stack is live memory).
TEST_F(Window, CreateExposesStackMemoryInPlace) {
  covers("WIN-2", "WIN-17");
  const auto count = static_cast<std::size_t>(rank()) * 4;
  {
    SCOPED_TRACE("small stack array");
    int stack_memory[32];
    check_user_memory(stack_memory, count);
  }
  {
    SCOPED_TRACE("stack array of several pages");
    int stack_memory[8192];  // 32 KiB: whole pages inside
    std::fill_n(stack_memory, 8192, 5);
    check_user_memory(stack_memory + 4096, count);
    int changed = 0;
    for (int i = 0; i < 4096; ++i) changed += stack_memory[i] == 5 ? 0 : 1;
    EXPECT_EQ(changed, 0) << "stack memory below the window changed";
  }
}

// A stack array attached by its own thread: the pages wholly inside it move (those holding the
// thread's frames stay), node peers reach them, and detach gives them back with the stack
// around the region as it was.
TEST_F(Window, AttachExposesStackMemoryInPlace) {
  covers("WIN-14", "WIN-16");
  std::int64_t stack_memory[4096];  // 32 KiB
  std::fill_n(stack_memory, 4096, std::int64_t{5});
  constexpr std::size_t first = 1000, count = 2000;  // 16000 bytes: whole pages inside
  std::int64_t* const region = stack_memory + first;
  std::fill_n(region, count, std::int64_t{-1});
  rma::window w = rma::window::create_dynamic(world());
  w.attach(region, count * 8);
  const std::vector<std::uint64_t> at = addresses_of(region);
  barrier(world());
  const rank_t me = rank(), target = right(), origin = left();
  // An element on a whole page of the region at `address` (ranks' stacks differ in alignment).
  const auto inner_of = [](std::uintptr_t address) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    return static_cast<std::size_t>((((address + page - 1) & ~(page - 1)) - address) / 8 + 10);
  };
  const std::uint64_t there = at[static_cast<std::size_t>(target)];
  if (pages_move_fenced()) {
    EXPECT_EQ(page_perms(region + inner_of(reinterpret_cast<std::uintptr_t>(region))), "rw-s");
    EXPECT_NE(transport::current().direct(target, there + inner_of(there) * 8, 8), nullptr);
  }
  const auto d = [&](std::size_t e) {
    return static_cast<disp_t>(at[static_cast<std::size_t>(target)] + e * 8);
  };
  // The element next to e (inside the region).
  const auto beside = [](std::size_t e) { return e == count - 1 ? e - 1 : e + 1; };
  w.lock_all();
  for (const std::size_t e : {std::size_t{0}, inner_of(there), count - 1}) {
    w.put(std::int64_t{me + 1}, target, d(e));
    EXPECT_EQ(w.fetch_and_op(std::int64_t{1}, target, d(beside(e)), op::sum), -1);
  }
  w.unlock_all();
  settle(w);
  w.detach(region);
  const std::size_t inner = inner_of(reinterpret_cast<std::uintptr_t>(region));
  EXPECT_EQ(page_perms(region + inner), "rw-p");
  for (const std::size_t e : {std::size_t{0}, inner, count - 1}) {
    EXPECT_EQ(region[e], origin + 1) << "element " << e;
    EXPECT_EQ(region[beside(e)], 0) << "beside element " << e;
  }
  int changed = 0;
  for (std::size_t e = 0; e < 4096; ++e) {
    if (e < first || e >= first + count) changed += stack_memory[e] == 5 ? 0 : 1;
  }
  EXPECT_EQ(changed, 0) << "stack memory around the region changed";
  w.free();
}

// Attaches most of this call's stack frame and returns without detaching it (the program's
// mistake: memory should be detached before it goes, WIN-16).
[[gnu::noinline]] void attach_and_return(rma::window& w) {
  std::int64_t frame[2048];  // 16 KiB
  std::fill_n(frame, 2048, std::int64_t{3});
  w.attach(frame + 64, (2048 - 72) * sizeof(std::int64_t));
  EXPECT_EQ(frame[1000], 3);
}

// free() from 8 KiB further down the stack: its calls run where the region's frame was.
[[gnu::noinline]] void free_from_deeper(rma::window& w) {
  volatile char pad[8192];
  pad[0] = 1;
  pad[sizeof pad - 1] = 2;
  w.free();
  EXPECT_EQ(pad[0] + pad[sizeof pad - 1], 3);
}

// A window freed after the stack frame of an attached region is gone: its pages now hold the
// frames of the call that frees the window, which must not wait for ever on pages it is moving
// (they stay shared memory: correct for the program, which writes its frames there).
TEST_F(Window, FreeAfterAnAttachedStackFrameWentDoesNotHang) {
  covers("WIN-16", "WIN-17");
  rma::window w = rma::window::create_dynamic(world());
  attach_and_return(w);
  barrier(world());
  free_from_deeper(w);  // detaches the region whose frame is gone
  EXPECT_FALSE(w.is_valid());
}

// More windows over memory the runtime did not allocate than an MPI engine attaches to one
// window (Open MPI's osc ucx: 32 per rank), alive at once, then made again over fresh memory,
// plus a dynamic window with as many regions: every one is reached by put, get (contiguous
// and strided), accumulate and fetch_and_op on every transport, and nothing else changes.
TEST_F(Window, MoreUserMemoryWindowsThanAnEngineAttaches) {
  covers("WIN-2", "WIN-13", "WIN-14", "COM-1", "COM-2");
  constexpr int windows = 40;
  constexpr std::size_t n = 6;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const rank_t target = right();
  const rank_t origin = left();
  const datatype i64 = datatype::of<std::int64_t>();
  const datatype pair_stride = datatype::vector(2, 1, 2, i64);  // elements 0 and 2
  const auto value = [](rank_t r, int round, int k) {
    return std::int64_t{(r + 1) * 100000 + round * 1000 + k};
  };
  using buffer = std::unique_ptr<std::int64_t, decltype(&std::free)>;
  const auto fresh = [&] {
    // Pages of its own for each: no two exposures share a page.
    buffer b(static_cast<std::int64_t*>(std::aligned_alloc(page, 2 * page)), &std::free);
    std::fill_n(b.get(), 2 * page / sizeof(std::int64_t), std::int64_t{-1});
    return b;
  };
  // On window k at `target`: puts element 0, accumulates k into element 1, fetch_and_op 1
  // into element 3, a strided put into elements 2 and 4 (element 5 stays), then reads back.
  const auto exercise = [&](rma::window& w, int round, int k, const auto& disp) {
    w.lock_all();
    w.put(value(rank(), round, k), target, disp(0));
    const std::int64_t add = k;
    w.accumulate(std::span<const std::int64_t>(&add, 1), target, disp(1), op::sum);
    EXPECT_EQ(w.fetch_and_op(std::int64_t{1}, target, disp(3), op::sum), -1);
    const std::int64_t two[2] = {value(rank(), round, k) + 1, value(rank(), round, k) + 2};
    w.put(two, 2, i64, target, disp(2), 1, pair_stride);  // elements 2 and 4
    w.flush(target);
    std::int64_t back[n] = {};
    w.get(std::span<std::int64_t>(back, n), target, disp(0));
    std::int64_t strided[2] = {};
    w.get(strided, 2, i64, target, disp(2), 1, pair_stride);
    w.unlock_all();
    EXPECT_EQ(back[0], value(rank(), round, k)) << "window " << k;
    EXPECT_EQ(back[1], k - 1) << "window " << k;
    EXPECT_EQ(back[2], value(rank(), round, k) + 1) << "window " << k;
    EXPECT_EQ(back[3], 0) << "window " << k;
    EXPECT_EQ(back[4], value(rank(), round, k) + 2) << "window " << k;
    EXPECT_EQ(back[5], -1) << "window " << k;
    EXPECT_EQ(strided[0], value(rank(), round, k) + 1);
    EXPECT_EQ(strided[1], value(rank(), round, k) + 2);
  };
  const auto check_mine = [&](const std::int64_t* p, int round, int k) {
    const std::int64_t want[n] = {value(origin, round, k),     k - 1,
                                  value(origin, round, k) + 1, 0,
                                  value(origin, round, k) + 2, -1};
    for (std::size_t e = 0; e < n; ++e)
      EXPECT_EQ(p[e], want[e]) << "window " << k << " element " << e;
    EXPECT_EQ(p[n], -1) << "past window " << k;
  };
  for (int round = 0; round < 2; ++round) {
    std::vector<buffer> mem;
    std::vector<rma::window> wins;
    for (int k = 0; k < windows; ++k) {
      mem.push_back(fresh());
      wins.push_back(rma::window::create(world(), mem.back().get(), n * sizeof(std::int64_t),
                                         sizeof(std::int64_t)));
    }
    for (int k = 0; k < windows; ++k) {
      exercise(wins[static_cast<std::size_t>(k)], round, k,
               [](std::size_t e) { return static_cast<disp_t>(e); });
    }
    barrier(world());
    for (int k = 0; k < windows; ++k) check_mine(mem[static_cast<std::size_t>(k)].get(), round, k);
    for (rma::window& w : wins) w.free();
  }

  rma::window dyn = rma::window::create_dynamic(world());
  std::vector<buffer> regions;
  std::vector<std::vector<std::uint64_t>> where;
  for (int k = 0; k < windows; ++k) {
    regions.push_back(fresh());
    dyn.attach(regions.back().get(), n * sizeof(std::int64_t));
    where.push_back(addresses_of(regions.back().get()));
  }
  barrier(world());
  for (int k = 0; k < windows; ++k) {
    const std::uint64_t base = where[static_cast<std::size_t>(k)][static_cast<std::size_t>(target)];
    exercise(dyn, 2, k, [base](std::size_t e) {
      return static_cast<disp_t>(base + e * sizeof(std::int64_t));
    });
  }
  barrier(world());
  for (int k = 0; k < windows; ++k) check_mine(regions[static_cast<std::size_t>(k)].get(), 2, k);
  for (const buffer& b : regions) dyn.detach(b.get());
  dyn.free();
}

}  // namespace
}  // namespace oneside::test
