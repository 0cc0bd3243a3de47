// Moving a process's own pages between private and shared memory in place, for windows over
// user memory (window::create, regions attached to dynamic windows): the pages keep their
// address and contents, so every pointer into them stays valid, and node peers that map the
// shared-memory object load and store the same bytes.
//
// A move copies the pages and then maps the new memory over them. A store by another thread
// of this process between the copy and the mapping would be lost, so while the pages move they
// are write-protected with userfaultfd: a thread that stores to them meanwhile waits in the
// kernel and retries on the new pages once the move is done (no store is lost, nothing
// faults). Where the kernel refuses userfaultfd (unprivileged, vm.unprivileged_userfaultfd=0)
// the caller moves only pages no other data shares and documents that other threads must not
// store to the window's own memory while create() and free() run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace oneside::transport::shm_detail {

// True when every page of [begin, end) belongs to an anonymous private read-write mapping (the
// heap, a stack, anonymous mmap): pages that can move into shared memory without changing what
// the program sees. File mappings and shared mappings are not.
bool anonymous_private(std::uintptr_t begin, std::uintptr_t end);

// The calling thread's stack, [lo, hi) ({0, 0} when unknown).
struct stack_range {
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
};
stack_range this_thread_stack() noexcept;

// True when this process may write-protect its pages with userfaultfd, kernel accesses
// included (checked once).
bool can_fence_writes() noexcept;

// Moves the pages [begin, begin + len) onto the shared-memory file `fd` (of at least `len`
// bytes): copies them into it and maps it over them. With `fenced`, stores by other threads
// during the move wait and land in the new pages (the calling thread must not store to them
// meanwhile, which rules out pages of its own stack). False when nothing changed (the pages stay
// private); the caller then does not use the file.
bool move_to_shared(int fd, std::uintptr_t begin, std::size_t len, bool fenced) noexcept;

// Gives [begin, begin + len), which move_to_shared mapped from the shared-memory object named
// `object` (a name of shm_open), private anonymous pages with the same contents again (fenced
// like move_to_shared). Pages that no longer map that object are left alone: the program
// unmapped or replaced them meanwhile (memory freed while a window still exposed it), and what
// lies there now is not this call's to move. Pages of the calling thread's own stack at or below
// its current frame stay shared too (the thread writes its live frames there; they are dead
// memory of a window that outlived them). On failure the pages stay shared, which is still
// correct for the program.
void move_to_private(std::uintptr_t begin, std::size_t len, bool fenced,
                     std::string_view object) noexcept;

}  // namespace oneside::transport::shm_detail
