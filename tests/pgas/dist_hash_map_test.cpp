// dist_hash_map (dist_hash_map.hpp): random operations from every rank at once, in all three
// forms, against a std::unordered_map model that every rank rebuilds from every rank's seed and
// checks the whole map against; each form of each operation on keys of every owner; update
// by function pointer and lambda with arguments, and with a body that throws (error remote,
// nothing changed); string keys and values; maps on sub-teams; bad input refused with nothing
// changed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class DistHashMap : public PgasTest {};

using map_t = dist_hash_map<std::uint64_t, std::int64_t>;
using model_t = std::unordered_map<std::uint64_t, std::int64_t>;

// A function of the executable (not a lambda): update by function pointer.
std::int64_t add_and_get(std::int64_t& v, std::int64_t x) {
  v += x;
  return v;
}

// A key of `m` owned by team rank `owner`, the n-th one from `from` on.
template <class Map>
std::uint64_t key_owned_by(const Map& m, rank_t owner, std::uint64_t from = 0) {
  std::uint64_t k = from;
  while (m.owner(k) != owner) ++k;
  return k;
}

// The operations of the random test.
enum class op_kind { insert, assign, erase, update, find };
struct step {
  op_kind kind;
  std::uint64_t key;
  std::int64_t value;
};
// Rank r's steps of round `round`: keys r, r + n, r + 2n, … (each key has one writer, so the
// model is deterministic), each key at most once per round (ops in flight at once never share
// a key).
std::vector<step> steps_of(rank_t r, int n, int round, std::size_t count, std::uint64_t keys) {
  std::mt19937_64 gen(static_cast<std::uint64_t>(r) * 7919U + static_cast<std::uint64_t>(round));
  std::vector<std::uint64_t> mine;
  for (std::uint64_t k = static_cast<std::uint64_t>(r); k < keys;
       k += static_cast<std::uint64_t>(n)) {
    mine.push_back(k);
  }
  std::shuffle(mine.begin(), mine.end(), gen);
  std::vector<step> out;
  for (std::size_t i = 0; i < count && i < mine.size(); ++i) {
    const auto kind = static_cast<op_kind>(gen() % 5);
    out.push_back({kind, mine[i], static_cast<std::int64_t>(gen() % 1000) - 500});
  }
  return out;
}
// What a step does to the model, and what the blocking/future form returns (find: the value
// or -1'000'000 for none; the others: the bool or update's result).
std::int64_t apply_to_model(model_t& m, const step& s) {
  switch (s.kind) {
    case op_kind::insert:
      return m.emplace(s.key, s.value).second ? 1 : 0;
    case op_kind::assign:
      return m.insert_or_assign(s.key, s.value).second ? 1 : 0;
    case op_kind::erase:
      return m.erase(s.key) != 0 ? 1 : 0;
    case op_kind::update:
      return m[s.key] += s.value;
    case op_kind::find: {
      const auto it = m.find(s.key);
      return it == m.end() ? -1'000'000 : it->second;
    }
  }
  return 0;
}

TEST_F(DistHashMap, RandomOperationsFromEveryRankMatchAModelInEveryForm) {
  const std::uint64_t keys = 64 * static_cast<std::uint64_t>(size()) + 37;
  const std::size_t per_round = 48;
  const int rounds = 6;  // round % 3: blocking, futures, fire-and-forget
  map_t m;
  std::vector<model_t> models(static_cast<std::size_t>(size()));  // every rank's, replayed here
  for (int round = 0; round < rounds; ++round) {
    const std::vector<step> mine = steps_of(rank(), size(), round, per_round, keys);
    model_t& my_model = models[static_cast<std::size_t>(rank())];
    if (round % 3 == 0) {
      for (const step& s : mine) {
        const std::int64_t want = apply_to_model(my_model, s);
        std::int64_t got = 0;
        switch (s.kind) {
          case op_kind::insert:
            got = m.insert(s.key, s.value) ? 1 : 0;
            break;
          case op_kind::assign:
            got = m.insert_or_assign(s.key, s.value) ? 1 : 0;
            break;
          case op_kind::erase:
            got = m.erase(s.key) ? 1 : 0;
            break;
          case op_kind::update:
            got = m.update(s.key, &add_and_get, s.value);
            break;
          case op_kind::find:
            got = m.find(s.key).value_or(-1'000'000);
            break;
        }
        EXPECT_EQ(got, want) << "blocking op " << static_cast<int>(s.kind) << " on key " << s.key;
      }
    } else if (round % 3 == 1) {
      // All of the round's futures in flight at once (distinct keys).
      std::vector<future<std::int64_t>> got;
      std::vector<std::int64_t> want;
      for (const step& s : mine) {
        want.push_back(apply_to_model(my_model, s));
        const auto as_int = [](bool b) -> std::int64_t { return b ? 1 : 0; };
        switch (s.kind) {
          case op_kind::insert:
            got.push_back(m.insert_async(s.key, s.value).then(as_int));
            break;
          case op_kind::assign:
            got.push_back(m.insert_or_assign_async(s.key, s.value).then(as_int));
            break;
          case op_kind::erase:
            got.push_back(m.erase_async(s.key).then(as_int));
            break;
          case op_kind::update:
            got.push_back(m.update_async(
                s.key, [](std::int64_t& v, std::int64_t x) { return v += x; }, s.value));
            break;
          case op_kind::find:
            got.push_back(m.find_async(s.key).then(
                [](const std::optional<std::int64_t>& v) { return v.value_or(-1'000'000); }));
            break;
        }
      }
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].wait(), want[i])
            << "future op " << static_cast<int>(mine[i].kind) << " on key " << mine[i].key;
      }
    } else {
      aggregator agg({.buffer_bytes = 1024, .buffers = 2});  // ships while filling
      for (const step& s : mine) {
        apply_to_model(my_model, s);
        switch (s.kind) {
          case op_kind::insert:
            m.insert_ff(agg, s.key, s.value);
            break;
          case op_kind::assign:
            m.insert_or_assign_ff(agg, s.key, s.value);
            break;
          case op_kind::erase:
            m.erase_ff(agg, s.key);
            break;
          case op_kind::update:
            m.update_ff(agg, s.key, &add_and_get, s.value);
            break;
          case op_kind::find:
            break;  // no fire-and-forget read
        }
      }
      if (round == 2) {
        agg.flush();
      } else {
        quiet();  // flushes every live aggregator of this rank
      }
    }
    // Every rank's operations of the round are applied once all flushed and met.
    barrier(world());
    for (rank_t r = 0; r < size(); ++r) {
      if (r == rank()) continue;
      for (const step& s : steps_of(r, size(), round, per_round, keys)) {
        apply_to_model(models[static_cast<std::size_t>(r)], s);
      }
    }
  }
  // Every rank checks the whole map: each key's value, the global size, its own part.
  model_t all;
  for (const model_t& mm : models) all.insert(mm.begin(), mm.end());
  std::vector<future<std::optional<std::int64_t>>> found;
  for (std::uint64_t k = 0; k < keys; ++k) found.push_back(m.find_async(k));
  for (std::uint64_t k = 0; k < keys; ++k) {
    const std::optional<std::int64_t> got = found[k].wait();
    const auto it = all.find(k);
    if (it == all.end()) {
      EXPECT_FALSE(got.has_value()) << "key " << k << " should be absent";
    } else {
      EXPECT_EQ(got, std::optional<std::int64_t>(it->second)) << "key " << k;
    }
  }
  EXPECT_EQ(m.size(), all.size());
  std::size_t mine = 0;
  m.for_each_local([&](const std::uint64_t& k, std::int64_t& v) {
    ++mine;
    EXPECT_EQ(m.owner(k), rank()) << "key " << k << " is in the wrong rank's part";
    const auto it = all.find(k);
    EXPECT_TRUE(it != all.end() && it->second == v) << "key " << k << " holds " << v;
  });
  EXPECT_EQ(mine, m.local_size());
  barrier(world());
}

TEST_F(DistHashMap, EachFormOfEachOperationOnKeysOfEveryOwner) {
  map_t m;
  for (rank_t o = 0; o < size(); ++o) {
    // Keys of owner o only this rank uses: three per form.
    std::uint64_t k = key_owned_by(m, o, 1'000'000 * static_cast<std::uint64_t>(rank() + 1));
    const auto next = [&] { return k = key_owned_by(m, o, k + 1); };
    // Blocking.
    std::uint64_t a = k;
    EXPECT_TRUE(m.insert(a, 1));
    EXPECT_FALSE(m.insert(a, 2)) << "insert replaced an entry";
    EXPECT_EQ(m.find(a), std::optional<std::int64_t>(1));
    EXPECT_FALSE(m.insert_or_assign(a, 3));
    EXPECT_EQ(m.find(a), std::optional<std::int64_t>(3));
    EXPECT_EQ(m.update(a, &add_and_get, 4), 7);
    m.update(a, [](std::int64_t& v) { v *= 2; });  // void fn
    EXPECT_EQ(m.find(a), std::optional<std::int64_t>(14));
    EXPECT_TRUE(m.erase(a));
    EXPECT_FALSE(m.erase(a));
    EXPECT_EQ(m.find(a), std::nullopt);
    EXPECT_EQ(m.update(a, &add_and_get, 5), 5) << "update of an absent key starts from V{}";
    // Futures.
    std::uint64_t b = next();
    EXPECT_TRUE(m.insert_async(b, 10).wait());
    EXPECT_FALSE(m.insert_async(b, 11).wait());
    const std::uint64_t e = next();
    EXPECT_TRUE(m.insert_or_assign_async(e, 12).wait());
    EXPECT_EQ(m.find_async(e).wait(), std::optional<std::int64_t>(12));
    EXPECT_EQ(m.update_async(b, &add_and_get, 1).wait(), 11);
    m.update_async(
         b, [](std::int64_t& v, std::int32_t x) { v -= x; }, 1)
        .wait();
    EXPECT_EQ(m.find_async(b).wait(), std::optional<std::int64_t>(10));
    EXPECT_TRUE(m.erase_async(b).wait());
    EXPECT_EQ(m.find_async(b).wait(), std::nullopt);
    // Fire-and-forget: nothing happens before the flush (a default buffer holds them all).
    std::uint64_t c = next();
    std::uint64_t d = next();
    {
      aggregator agg;
      m.insert_ff(agg, c, 20);
      m.insert_ff(agg, c, 21);  // kept out: insert keeps the entry
      m.insert_or_assign_ff(agg, d, 30);
      m.insert_or_assign_ff(agg, d, 31);
      m.update_ff(agg, c, &add_and_get, 2);
      m.update_ff(
          agg, d, [](std::int64_t& v, std::int64_t x) { v *= x; }, 2);
      m.erase_ff(agg, a);
      if (o != rank()) {
        EXPECT_EQ(m.find(c), std::nullopt) << "an insert_ff was applied before its flush";
      }
      agg.flush();
      EXPECT_EQ(m.find(c), std::optional<std::int64_t>(22));
      EXPECT_EQ(m.find(d), std::optional<std::int64_t>(62));
      EXPECT_EQ(m.find(a), std::nullopt);
    }
    // What stayed: c, d and e (a and b erased).
    EXPECT_TRUE(m.erase(e));
    EXPECT_TRUE(m.erase(c));
    EXPECT_TRUE(m.erase(d));
  }
  barrier(world());
  EXPECT_EQ(m.size(), 0U);
  barrier(world());
}

TEST_F(DistHashMap, UpdateWhoseBodyThrowsFailsWithRemoteAndChangesNothing) {
  map_t m;
  const auto boom = [](std::int64_t& v, std::int64_t x) -> std::int64_t {
    if (x < 0) throw std::runtime_error("negative step " + std::to_string(x));
    return v += x;
  };
  for (rank_t o = 0; o < size(); ++o) {
    const std::uint64_t k = key_owned_by(m, o, 5'000'000 * static_cast<std::uint64_t>(rank() + 1));
    const std::uint64_t absent = key_owned_by(m, o, k + 1);
    EXPECT_TRUE(m.insert(k, 40));
    // Blocking and future forms, owner here and elsewhere: error(remote) naming the call.
    expect_error(error_class::remote, "dist_hash_map::update", [&] { m.update(k, boom, -2); });
    future<std::int64_t> f = m.update_async(k, boom, -3);
    try {
      f.wait();
      ADD_FAILURE() << "a throwing update's future did not fail";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::remote);
      EXPECT_NE(std::string(e.what()).find("negative step -3"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(o)), std::string::npos)
          << "the message names the owner: " << e.what();
    }
    expect_error(error_class::remote, "dist_hash_map::update", [&] { m.update(absent, boom, -1); });
    EXPECT_EQ(m.find(k), std::optional<std::int64_t>(40)) << "a throwing update changed the value";
    EXPECT_EQ(m.find(absent), std::nullopt) << "a throwing update left the key it created";
    EXPECT_EQ(m.update(k, boom, 2), 42) << "the map works after a throwing update";
    EXPECT_TRUE(m.erase(k));
  }
  barrier(world());
  EXPECT_EQ(m.size(), 0U);
  barrier(world());
}

// Run by pgas.dist_hash_map.np2.ff_throws only: the job must end with the message.
TEST_F(DistHashMap, DISABLED_AFireAndForgetUpdateThatThrowsAbortsTheOwner) {
  map_t m;
  if (rank() == 0) {
    aggregator agg;
    m.update_ff(
        agg, key_owned_by(m, 1),
        [](std::int64_t&, std::int64_t x) {
          throw std::runtime_error("ff update boom " + std::to_string(x));
        },
        std::int64_t{31});
    agg.flush();
  }
  barrier(world());  // rank 1 aborts before it gets here, which ends the job
  ADD_FAILURE() << "the job went on after an update_ff body threw";
}

TEST_F(DistHashMap, StringKeysAndValuesInEveryForm) {
  dist_hash_map<std::string, std::string> m;
  const auto key = [](int r, int i) {
    return "key/" + std::to_string(r) + "/" + std::to_string(i);
  };
  const auto value = [](int r, int i) {
    return std::string(static_cast<std::size_t>(i % 50), static_cast<char>('a' + (r + i) % 26));
  };
  const int n = 60;
  {
    aggregator agg({.buffer_bytes = 512, .buffers = 2});
    for (int i = 0; i < n; ++i) {
      if (i % 3 == 0) {
        EXPECT_TRUE(m.insert(key(rank(), i), value(rank(), i)));
      } else if (i % 3 == 1) {
        EXPECT_TRUE(m.insert_async(key(rank(), i), value(rank(), i)).wait());
      } else {
        m.insert_ff(agg, key(rank(), i), value(rank(), i));
      }
    }
    agg.flush();
  }
  barrier(world());
  EXPECT_EQ(m.size(), static_cast<std::size_t>(n * size()));
  // Append to everybody's strings (a lambda with a string argument), read them all back.
  const auto append = [](std::string& v, const std::string& tail) { v += tail; };
  for (rank_t r = 0; r < size(); ++r) m.update(key(r, 7), append, "+" + std::to_string(rank()));
  barrier(world());
  std::string tails;
  for (rank_t r = 0; r < size(); ++r) tails += "+" + std::to_string(r);
  for (rank_t r = 0; r < size(); ++r) {
    for (int i = 0; i < n; ++i) {
      const std::optional<std::string> got = m.find_async(key(r, i)).wait();
      ASSERT_TRUE(got.has_value()) << key(r, i);
      if (i == 7) {
        // The appends of the ranks arrive in any order: same length, same characters.
        EXPECT_EQ(got->size(), value(r, i).size() + tails.size()) << *got;
      } else {
        EXPECT_EQ(*got, value(r, i));
      }
    }
  }
  EXPECT_EQ(m.find("no such key"), std::nullopt);
  barrier(world());
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(m.erase(key(rank(), i)));
  }
  barrier(world());
  EXPECT_EQ(m.size(), 0U);
  barrier(world());
}

// The README's example (quoted there: tests/style's readme_snippets checks it).
TEST_F(DistHashMap, CountsKeysFromEveryRankAsTheReadmeShows) {
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 100; ++i) keys.push_back(i % 10);
  oneside::dist_hash_map<std::uint64_t, std::int64_t> counts;
  oneside::aggregator agg;
  for (std::uint64_t k : keys) counts.update_ff(agg, k, [](std::int64_t& v) { ++v; });
  agg.flush();
  oneside::barrier(oneside::world());  // every rank's updates are applied
  for (std::uint64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(counts.find(k), std::optional<std::int64_t>(10 * size())) << "key " << k;
  }
  EXPECT_EQ(counts.size(), 10U);
}

// A trivially copyable key with a user hash, and vector values.
struct cell {
  std::int32_t x;
  std::int32_t y;
  bool operator==(const cell&) const = default;
};
struct cell_hash {
  std::size_t operator()(const cell& c) const noexcept {
    return std::hash<std::int64_t>{}((std::int64_t{c.x} << 32) ^ c.y);
  }
};

TEST_F(DistHashMap, StructKeysWithAUserHashAndVectorValues) {
  dist_hash_map<cell, std::vector<std::int32_t>, cell_hash> m;
  const auto push = [](std::vector<std::int32_t>& v, std::int32_t x) { v.push_back(x); };
  {
    aggregator agg;
    for (std::int32_t i = 0; i < 20; ++i) {
      m.update_ff(agg, cell{i, i % 3}, push, static_cast<std::int32_t>(rank()));
    }
    agg.flush();
  }
  barrier(world());
  EXPECT_EQ(m.size(), 20U);
  for (std::int32_t i = 0; i < 20; ++i) {
    std::optional<std::vector<std::int32_t>> v = m.find(cell{i, i % 3});
    ASSERT_TRUE(v.has_value()) << "cell " << i;
    std::sort(v->begin(), v->end());
    std::vector<std::int32_t> want(static_cast<std::size_t>(size()));
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(*v, want) << "every rank appended once to cell " << i;
    EXPECT_EQ(m.find(cell{i, i % 3 + 1}), std::nullopt);
  }
  barrier(world());
  if (rank() == 0) {
    EXPECT_FALSE(m.insert_or_assign(cell{0, 0}, std::vector<std::int32_t>(5000, 7)))
        << "a value beyond one active message (rendezvous)";
  }
  barrier(world());
  EXPECT_EQ(m.find(cell{0, 0}),
            std::optional<std::vector<std::int32_t>>(std::vector<std::int32_t>(5000, 7)));
  barrier(world());
}

TEST_F(DistHashMap, MapsOnSubTeamsOwnKeysAmongTheirMembersOnly) {
  const team half = world().split(rank() % 2, rank());
  dist_hash_map<std::uint64_t, std::int64_t> m(half);
  EXPECT_EQ(m.team(), half);
  for (std::uint64_t k = 0; k < 40; ++k) {
    EXPECT_LT(m.owner(k), half.size());
    m.update(
        k, [](std::int64_t& v, std::int64_t x) { v += x; }, std::int64_t{1});
  }
  barrier(half);
  // Each key was bumped once by every member of this half, by no one of the other.
  for (std::uint64_t k = 0; k < 40; ++k) {
    EXPECT_EQ(m.find(k), std::optional<std::int64_t>(half.size())) << "key " << k;
  }
  EXPECT_EQ(m.size(), 40U);
  m.for_each_local(
      [&](const std::uint64_t& k, const std::int64_t&) { EXPECT_EQ(m.owner(k), half.rank()); });
  barrier(world());
}

TEST_F(DistHashMap, BadInputIsRefusedAndChangesNothing) {
  expect_error(error_class::comm, "dist_hash_map", [] { map_t bad(team{}); });
  dist_hash_map<std::uint64_t, std::string> m;
  {
    aggregator agg({.buffer_bytes = 256, .buffers = 2});
    const std::string big(agg.max_message_bytes(), 'x');
    expect_error(error_class::arg, "dist_hash_map::insert_ff", [&] { m.insert_ff(agg, 1, big); });
    expect_error(error_class::arg, "dist_hash_map::insert_or_assign_ff",
                 [&] { m.insert_or_assign_ff(agg, 1, big); });
    expect_error(error_class::arg, "dist_hash_map::update_ff", [&] {
      m.update_ff(
          agg, 1, [](std::string& v, const std::string& s) { v = s; }, big);
    });
    agg.flush();
    // The same value through the blocking form, which has no size limit.
    if (rank() == 0) {
      EXPECT_TRUE(m.insert(1, big + big));
    }
  }
  barrier(world());
  EXPECT_EQ(m.size(), 1U) << "a refused _ff record was applied";
  barrier(world());
}

}  // namespace
}  // namespace oneside::test
