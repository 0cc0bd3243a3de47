// The names of this process's distributed containers (dist_hash_map, dist_bag) and the one
// aggregated handler that hands their fire-and-forget records to them
// (include/oneside/pgas/container/registry.hpp).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include <oneside/pgas/aggregator.hpp>
#include <oneside/pgas/container/registry.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>

#include "rpc/code_address.hpp"
#include "runtime/check.hpp"

namespace oneside::pgas::detail {
namespace {

struct entry {
  void* container;
  container_apply apply;
};

struct registry {
  std::shared_mutex lock;  // records look up (shared) far more often than containers come and go
  std::uint64_t next = 1;
  std::unordered_map<std::uint64_t, entry> containers;
};

registry& containers() {
  static registry r;
  return r;
}

// Runs in the target's message progress: one record for one container.
void apply_record(rank_t source, std::span<const std::byte> bytes) {
  constexpr const char* call = "dist container record";
  std::uint64_t id = 0;
  if (bytes.size() < sizeof id) abort_record(call, source, "a record shorter than its name");
  std::memcpy(&id, bytes.data(), sizeof id);
  entry e{};
  {
    registry& r = containers();
    const std::shared_lock lock(r.lock);
    const auto it = r.containers.find(id);
    if (it == r.containers.end()) {
      abort_record(call, source,
                   "a record for container " + std::to_string(id) +
                       ", which is not (or no longer) made on this rank");
    }
    e = it->second;
  }
  try {
    e.apply(e.container, source, bytes.subspan(sizeof id));
  } catch (const std::exception& ex) {
    abort_record(call, source, ex.what());
  } catch (...) {
    abort_record(call, source, "an exception that is no std::exception");
  }
}

const aggregated_handler_id g_handler =
    register_aggregated_handler("oneside.container.record", &apply_record);

}  // namespace

std::uint64_t register_container(const team& t, void* container, container_apply apply,
                                 const char* call) {
  ONESIDE_CHECK(t.is_valid(), error_class::comm, {.call = call},
                "the team is null (a split() that left this rank out)");
  registry& r = containers();
  std::uint64_t mine = 0;
  {
    const std::shared_lock lock(r.lock);
    mine = r.next;
  }
  // Every member's counter only grows, so the largest proposal is free on every member.
  const std::uint64_t id = allreduce(t, mine, op::max);
  {
    const std::unique_lock lock(r.lock);
    r.next = std::max(r.next, id + 1);
    r.containers.emplace(id, entry{container, apply});
  }
  // No member may reach another's container before that one registered it (an allreduce may
  // return on one member before another has its result).
  try {
    barrier(t);
  } catch (...) {
    unregister_container(id);
    throw;
  }
  return id;
}

void unregister_container(std::uint64_t id) noexcept {
  registry& r = containers();
  const std::unique_lock lock(r.lock);
  r.containers.erase(id);
}

void* find_container(std::uint64_t id, const char* call) {
  registry& r = containers();
  const std::shared_lock lock(r.lock);
  const auto it = r.containers.find(id);
  ONESIDE_CHECK(it != r.containers.end(), error_class::arg, {.call = call},
                "container " + std::to_string(id) + " is not (or no longer) made on this rank");
  return it->second.container;
}

aggregated_handler_id container_handler() {
  return g_handler;
}

code_ptr container_code_address(const code_id& id) {
  return code_address_of(id);
}

void abort_record(const char* call, rank_t source, std::string_view what) noexcept {
  int rank = -1;
  try {
    rank = world().rank();
  } catch (...) {
    // Closed already: the message says "-1".
  }
  std::fprintf(stderr, "oneside: rank %d: %s from rank %d threw: %.*s\n", rank, call, source,
               static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace oneside::pgas::detail
