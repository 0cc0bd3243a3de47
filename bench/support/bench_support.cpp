// The oneside side of the lockstep measurement and the ring of segments.
#include "bench_support.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <oneside/oneside.hpp>

#include "runtime/transport.hpp"

namespace oneside::bench {

double slowest_rank(double seconds) {
  return allreduce(world(), seconds, op::max);
}

ring_memory::ring_memory(std::size_t bytes)
    : backend(transport::current()),
      local(backend.allocate_segment(bytes)),
      next((world().rank() + 1) % world().size()) {
  const std::vector<std::uint64_t> addresses = allgather(world(), std::uint64_t{local.address()});
  next_address = static_cast<std::uintptr_t>(addresses[static_cast<std::size_t>(next)]);
  // Warm up: map the next rank's segment and fault in every page of this mapping.
  page_buffer scratch(bytes);
  backend.put(next, next_address, std::span<const std::byte>(scratch.data(), bytes));
  backend.flush(next);
  backend.get(next, next_address, std::span<std::byte>(scratch.data(), bytes));
  backend.flush(next);
  barrier(world());
}

}  // namespace oneside::bench
