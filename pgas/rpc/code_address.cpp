// Names of code that mean the same in every process of a job (rpc.hpp: code_id). Ranks run
// the same executable and load the same shared libraries from the same paths, but at
// addresses of their own (PIE, ASLR): code is named by its object (a hash of the name the
// dynamic loader gives it, "" for the executable) and its offset from the object's load
// address. dl_iterate_phdr lists the objects; the table is read again when an address or a
// name is not in it (a library loaded since), and both directions are cached per thread.
#include "rpc/code_address.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <link.h>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <oneside/runtime/error.hpp>

#include "runtime/hex.hpp"

namespace oneside::pgas::detail {
namespace {

struct loaded_object {
  std::uint64_t key;     // hash of its name
  std::uintptr_t base;   // its load address (dlpi_addr)
  std::uintptr_t begin;  // [begin, end): its loaded segments' span
  std::uintptr_t end;
};

std::uint64_t name_key(std::string_view name) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h | 1;  // never 0, the name of "no function" (lambdas)
}

class object_table {
 public:
  code_id find(std::uintptr_t address) {
    const std::lock_guard<std::mutex> hold(lock_);
    for (int pass = 0; pass < 2; ++pass) {
      for (const loaded_object& o : objects_) {
        if (address >= o.begin && address < o.end) return {o.key, address - o.base};
      }
      reload();
    }
    oneside::detail::raise(
        error_class::arg, {.call = "rpc"},
        "the function at " + oneside::detail::hex(address) + " lies in no loaded object");
  }
  std::uintptr_t resolve(const code_id& id) {
    const std::lock_guard<std::mutex> hold(lock_);
    for (int pass = 0; pass < 2; ++pass) {
      for (const loaded_object& o : objects_) {
        if (o.key == id.object && id.offset < o.end - o.base) return o.base + id.offset;
      }
      reload();
    }
    oneside::detail::raise(error_class::arg, {.call = "rpc"},
                           "the function's object (" + oneside::detail::hex(id.object) +
                               ") is not loaded in this process");
  }

 private:
  void reload() {
    objects_.clear();
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) -> int {
          auto& out = *static_cast<std::vector<loaded_object>*>(data);
          std::uintptr_t begin = UINTPTR_MAX;
          std::uintptr_t end = 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            begin = std::min(begin, lo);
            end = std::max(end, lo + ph.p_memsz);
          }
          if (end != 0) {
            const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
            out.push_back({name_key(name), info->dlpi_addr, begin, end});
          }
          return 0;
        },
        &objects_);
  }

  std::mutex lock_;
  std::vector<loaded_object> objects_;
};

object_table& table() {
  static object_table t;
  return t;
}

// A direct-mapped per-thread cache of either direction.
template <class Key, class Value>
struct small_cache {
  static constexpr std::size_t slots = 16;
  struct slot {
    Key key{};
    Value value{};
    bool used = false;
  };
  std::array<slot, slots> entries{};
};

bool same(const code_id& a, const code_id& b) noexcept {
  return a.object == b.object && a.offset == b.offset;
}

}  // namespace

code_id code_id_of(code_ptr fn) {
  thread_local small_cache<std::uintptr_t, code_id> cache;
  const auto address = reinterpret_cast<std::uintptr_t>(fn);
  auto& s = cache.entries[(address >> 4) % cache.slots];
  if (s.used && s.key == address) return s.value;
  const code_id id = table().find(address);
  s = {address, id, true};
  return id;
}

code_ptr code_address_of(const code_id& id) {
  thread_local small_cache<code_id, std::uintptr_t> cache;
  auto& s = cache.entries[(id.offset ^ id.object) % cache.slots];
  if (s.used && same(s.key, id)) return reinterpret_cast<code_ptr>(s.value);
  const std::uintptr_t address = table().resolve(id);
  s = {id, address, true};
  return reinterpret_cast<code_ptr>(address);
}

}  // namespace oneside::pgas::detail
