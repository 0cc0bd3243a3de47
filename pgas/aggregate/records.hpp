// The wire format of an aggregator's buffer (internal): a run of records, each a 24-byte head
// followed, for rputs, messages and runs of calls, by its bytes padded to 8. One buffer is the
// payload of one active message (handler "oneside.aggregator.batch"), applied in order by
// apply_batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <oneside/pgas/aggregator.hpp>

#include "runtime/transport.hpp"

namespace oneside::pgas::detail {

// calls: a run of rpc_ff calls to one function (rpc_wire.hpp's layout of its bytes), extended
// in place while the calls that follow in the buffer name the same function.
enum class record_kind : std::uint8_t { atomic = 1, put = 2, message = 3, calls = 4 };

struct record_head {
  record_kind kind;
  std::uint8_t op;      // atomic: transport::amo_op
  std::uint8_t type;    // atomic: transport::amo_type
  std::uint8_t flags;   // atomic: record_plain
  std::int32_t rank;    // the final destination (a node peer of the receiver, or itself)
  std::uint64_t where;  // atomic, put: the address there; message: the handler id; calls:
                        // how many
  std::uint64_t value;  // atomic: the operand's bits; put, message, calls: the bytes that
                        // follow (before their padding)
};
static_assert(sizeof(record_head) == 24);

// An atomic applied with a plain load and store (aggregator_options::atomic_apply = false).
constexpr std::uint8_t record_plain = 1;
// Calls whose arguments vary in size: each carries its length (rpc_wire.hpp).
constexpr std::uint8_t record_sized = 2;

constexpr std::size_t record_align = 8;
constexpr std::size_t padded(std::size_t n) noexcept {
  return (n + record_align - 1) & ~(record_align - 1);
}

// The handler every batch is sent to (registered when the library loads).
transport::am_handler_id batch_handler();

// Applies a buffer's records in order, as the destination's handler does and as an origin
// that loads and stores the destination's memory may do itself: atomics with the CPU atomics
// every oneside atomic on that memory uses (transport::detail::amo_apply), rputs by copy,
// messages by their handlers; memory not mapped here goes through the transport. Then, with
// `wake`, wakes each rank whose memory changed (an origin wakes its destination once per flush
// instead: a wake-up is a system call when somebody sleeps). Never waits (aborts the job on a
// malformed buffer: senders check everything first).
void apply_records(transport::backend& t, rank_t source, std::span<const std::byte> payload,
                   bool wake);
// Wakes the threads of `rank` (this process or a node peer) sleeping on changed memory.
void wake_rank(transport::backend& t, rank_t rank) noexcept;

// The id under which aggregators send rpc_ff records (aggregator.cpp): apply_records hands a
// buffer's rpc_ff records to one task of the arena (execute_rpc_ff_batch) instead of running
// a handler for each.
aggregated_handler_id rpc_ff_handler() noexcept;

// The handler registered under `id` for aggregated messages, or null. Lock-free.
aggregated_handler find_aggregated_handler(aggregated_handler_id id) noexcept;

}  // namespace oneside::pgas::detail
