// Futures and promises of the PGAS layer, after UPC++: a future<T> is a cheap copyable handle
// on a shared state that becomes ready once, with a T or with an exception; copies see the
// same state. A future ready from the start with a small trivially copyable value (16 bytes
// at most: rget of a value, the atomics, make_future) holds it in itself instead, without
// allocating a state; nothing else about it differs. promise<T> counts the operations a future
// waits for; then() chains work onto a future, when_all() joins futures, async() runs work on this
// rank's task arena, and progress() drives the operations that complete by being polled.
//
// Where continuations run: a continuation attached to a ready future runs at once, in then(),
// on the calling thread; otherwise it runs on the thread that makes the future ready (inside
// promise::fulfill/finalize/set_exception, progress(), wait() or is_ready(), or the arena
// thread of an async). A continuation that readies further futures does not nest their
// continuations: they run on the same thread right after it returns (or earlier, when it
// waits), so long chains need no deep stack.
//
// Thread-safety: any thread may wait on, poll, attach continuations to or complete any future
// and promise, concurrently; each continuation runs exactly once.
//
// This is the header to include for futures; it brings each part, one concept per header:
//   future/state.hpp   the shared state a future and its promise point at (pgas::detail)
//   future/then.hpp    how continuations run and what then() returns (pgas::detail)
//   future/polled.hpp  futures of operations completed by polling, and progress()
//   future/future.hpp  future<T>, make_future, make_exception_future
//   future/request.hpp to_future(rma::request&&): an rma request as a future<>
//   promise.hpp        promise<T>
//   when_all.hpp       when_all over futures and rma requests
//   async.hpp          async and async_on: work on a task arena
#pragma once

#include <oneside/pgas/async.hpp>
#include <oneside/pgas/future/future.hpp>
#include <oneside/pgas/future/polled.hpp>
#include <oneside/pgas/future/request.hpp>
#include <oneside/pgas/promise.hpp>
#include <oneside/pgas/when_all.hpp>
