// The target's side of rpc_ff messages, for senders that carry them other than one active
// message each (an aggregator batching the bytes pgas::detail::encode_rpc_ff appends), and the
// sender's means to make such a message small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::pgas::detail {

// Runs one rpc_ff message from `source` as its active message would: copies it and queues the
// call on this rank's task arena (so it may be called on an agent; it does not block). The
// message is exactly what encode_rpc_ff appended. error(arg) for bytes that are no rpc_ff
// message (checked before anything is queued). Not counted for quiet() (the source's ledger
// never counted it as issued).
void execute_rpc_ff_message(rank_t source, std::span<const std::byte> message);

// What run_rpc_ff_here remembers between the calls of one batch (which mostly name one
// function): the code the last call named.
struct rpc_ff_code_cache {
  code_id invoker{};
  code_id fn{};
  invoker_ptr invoke = nullptr;
  code_ptr address = nullptr;
  bool known = false;
};

// Runs one rpc_ff message from `source` in the calling task (its body may wait), as the task
// its active message queues would, without counting it (count_rpc_ff_run). For a batch's
// task: a sender checked the bytes; a malformed message or a body that throws aborts the job
// (with the message naming rpc_ff and the source).
void run_rpc_ff_here(rank_t source, std::span<const std::byte> message,
                     rpc_ff_code_cache& cache) noexcept;

// A run of rpc_ff calls to one function, as an aggregator's buffer carries them: the code
// (rpc_ff_code, 32 bytes), then each call's serialized arguments; with `sized`, each call is
// an 8-byte length followed by that many bytes padded to 8, else the calls' arguments all
// take the same bytes and follow back to back (their count divides what follows the code).
inline constexpr std::size_t rpc_ff_run_head_bytes = sizeof(rpc_ff_code);
inline constexpr std::size_t rpc_ff_call_length_bytes = sizeof(std::uint64_t);

// Runs the `count` calls of a run (`bytes`: the code and the calls) from `source` in the
// calling task, one after another in order, the code resolved once (kept in `cache` for the
// next run); not counted (count_rpc_ff_run). Aborts the job on a malformed run or a body that
// throws, as run_rpc_ff_here.
void run_rpc_ff_calls(rank_t source, std::uint64_t count, bool sized,
                      std::span<const std::byte> bytes, rpc_ff_code_cache& cache) noexcept;

// Counts `count` calls from `source` as run here (call it in a task, after they returned):
// what the source's quiet() waits for (it acknowledges a pending query of the source).
void count_rpc_ff_run(rank_t source, std::uint64_t count);

// Counts `count` rpc_ff to `target` as issued by this rank, for quiet() (before they are sent).
void count_rpc_ff_issued(rank_t target, std::uint64_t count) noexcept;

// The size of a message whose arguments are parked: its header and the rendezvous.
inline constexpr std::size_t rpc_parked_message_bytes = 72;

// Parks the arguments of an encoded message in this rank's global heap (a rendezvous, as for a
// message beyond one active message), so that it takes rpc_parked_message_bytes; nothing for
// one parked already. error(arg) for bytes that are no rpc message.
void park_rpc_arguments(std::vector<std::byte>& message);

// Frees what an encoded message that will not be sent parked.
void discard_rpc_message(std::span<const std::byte> message) noexcept;

}  // namespace oneside::pgas::detail
