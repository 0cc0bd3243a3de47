// Pooled fiber stacks with guard pages (stack_pool.hpp).
#include "fiber/stack_pool.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include <oneside/runtime/error.hpp>

namespace oneside::detail {
namespace {

constexpr std::uint64_t canary_value = 0x6f6e657369646521ULL;  // "oneside!"

std::size_t page_bytes() noexcept {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Stacks are mapped at page boundaries, so every fiber's saved registers would sit at the same
// offset in its page and compete for one set of the L1 cache (16 fibers switching in turn ran
// 2× slower). Each stack's top is moved down by a "colour" of up to 31 cache lines; the page
// boundary above it is the real top.
constexpr std::size_t colours = 32;
constexpr std::size_t colour_bytes = 64;
thread_local std::size_t t_next_colour = 0;

void* real_top(void* sp) noexcept {
  const std::size_t page = page_bytes();
  const auto p = reinterpret_cast<std::uintptr_t>(sp);
  return reinterpret_cast<void*>((p + page - 1) & ~(page - 1));
}

// The canary word: just below the shallow part of the stack that hangs from `top`.
std::uint64_t* canary_of(void* top) noexcept {
  return reinterpret_cast<std::uint64_t*>(static_cast<char*>(top) - stack_pool::shallow_bytes) - 1;
}

void unmap(void* top) noexcept {
  const std::size_t guard = page_bytes();
  ::munmap(static_cast<char*>(top) - stack_pool::reserved_bytes - guard,
           stack_pool::reserved_bytes + guard);
}

}  // namespace

stack_pool::~stack_pool() {
  for (void* top : idle_) unmap(top);
}

boost::context::stack_context stack_pool::allocate() {
  boost::context::stack_context sc;
  const std::size_t colour = (t_next_colour++ % colours) * colour_bytes;
  sc.size = reserved_bytes - colour;
  if (!idle_.empty()) {
    sc.sp = static_cast<char*>(idle_.back()) - colour;
    idle_.pop_back();
    return sc;
  }
  const std::size_t guard = page_bytes();
  void* base = ::mmap(nullptr, reserved_bytes + guard, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base == MAP_FAILED || ::mprotect(base, guard, PROT_NONE) != 0) {
    const int err = errno;
    if (base != MAP_FAILED) ::munmap(base, reserved_bytes + guard);
    raise(error_class::no_mem, error_context{.call = "fiber::spawn"},
          "no fiber stack could be mapped (" + std::to_string(reserved_bytes / 1024) +
              " KiB + a guard page): " + std::strerror(err));
  }
  void* top = static_cast<char*>(base) + guard + reserved_bytes;
  *canary_of(top) = canary_value;
  sc.sp = static_cast<char*>(top) - colour;
  return sc;
}

void stack_pool::deallocate(boost::context::stack_context& sc) noexcept {
  void* top = real_top(sc.sp);
  if (idle_.size() >= max_idle) {
    unmap(top);
    return;
  }
  if (*canary_of(top) != canary_value) {
    // The stack went deep: give its deep pages (the canary's included) back to the system.
    char* low = static_cast<char*>(top) - reserved_bytes;
    ::madvise(low, reserved_bytes - shallow_bytes, MADV_DONTNEED);
    *canary_of(top) = canary_value;
  }
  try {
    idle_.push_back(top);
  } catch (...) {
    unmap(top);  // no memory for the pool's list: the stack goes
  }
}

}  // namespace oneside::detail
