// What the distributed containers (dist_hash_map.hpp, dist_bag.hpp) share, not for
// applications: a name for each container that is the same on every member of its team, the
// one aggregated handler that hands their fire-and-forget records to the named container at
// the target, and the translation of code names (rpc.hpp's code_id) back to addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <oneside/pgas/aggregator.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::pgas::detail {

// Applies a fire-and-forget record (the bytes after the container's name) to `container` at
// its owner; runs in the owner's message progress, so it must not wait. `source` is the world
// rank that sent it.
using container_apply = void (*)(void* container, rank_t source, std::span<const std::byte> bytes);

// Collective over `t`: a name for `container`, the same on every member (the largest of the
// members' next free names), registered here with `apply` until unregister_container, and on
// every member before any member returns (a barrier closes it).
// error(comm) for a null team, naming `call`.
std::uint64_t register_container(const team& t, void* container, container_apply apply,
                                 const char* call);
void unregister_container(std::uint64_t id) noexcept;
// The container registered here under `id`; error(arg) naming `call` and the name when none is
// (destroyed already, or a name from another program).
void* find_container(std::uint64_t id, const char* call);

// The aggregated handler (aggregator.hpp) of every container's records: a record is the
// container's name (8 bytes) then what its container_apply reads. A record whose container
// throws ends the job, as a throwing rpc_ff body does: the message names `what` the container
// said (its call), the source and the exception.
aggregated_handler_id container_handler();

// Where code named by `id` (rpc.hpp: code_id_of at the sender) lies in this process.
// error(arg) when its object is not loaded here.
code_ptr container_code_address(const code_id& id);

// The failure of a record run in message progress: prints it (naming `call`, the source and
// `what`) and aborts the job, as a throwing rpc_ff body does.
[[noreturn]] void abort_record(const char* call, rank_t source, std::string_view what) noexcept;

}  // namespace oneside::pgas::detail
