// The dist_objects of this process by name (dist_object.hpp), so that an rpc naming one finds
// the target's own instance. Every rank makes its dist_objects in the same order, so the n-th
// one has the same name on every rank.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <oneside/pgas/dist_object.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/error.hpp>

namespace oneside::pgas::detail {
namespace {

struct registry {
  std::mutex lock;
  std::uint64_t next = 1;
  std::unordered_map<std::uint64_t, void*> objects;
};

registry& objects() {
  static registry r;
  return r;
}

}  // namespace

std::uint64_t register_dist_object(void* object) {
  registry& r = objects();
  const std::lock_guard<std::mutex> hold(r.lock);
  const std::uint64_t id = r.next++;
  r.objects.emplace(id, object);
  return id;
}

void unregister_dist_object(std::uint64_t id) noexcept {
  registry& r = objects();
  const std::lock_guard<std::mutex> hold(r.lock);
  r.objects.erase(id);
}

void* find_dist_object(std::uint64_t id) {
  registry& r = objects();
  const std::lock_guard<std::mutex> hold(r.lock);
  const auto it = r.objects.find(id);
  if (it == r.objects.end()) {
    oneside::detail::raise(error_class::arg, {.call = "rpc"},
                           "dist_object #" + std::to_string(id) +
                               " does not exist on this rank (destroyed, or never made here)");
  }
  return it->second;
}

}  // namespace oneside::pgas::detail
