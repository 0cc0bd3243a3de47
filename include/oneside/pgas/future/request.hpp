// Joining the lower layers' requests with futures: a request-based rput/rget/raccumulate's
// rma::request, or a nonblocking file access's file_request (iwrite_at, iread, …), becomes a
// future<> (to_future), and when_all (when_all.hpp) takes rma requests beside futures. The
// conversions live here because rma and runtime never include pgas.
#pragma once

#include <oneside/pgas/future/future.hpp>
#include <oneside/rma/request.hpp>
#include <oneside/runtime/file.hpp>

namespace oneside {

// A future<> ready when `r` completes, with the request's meaning of completion: local (an
// rput's origin buffer may be reused, an rget's data is in place; remote completion still
// needs a flush or the epoch's end, as for the request). The future owns the request: it is
// polled by is_ready(), wait() and progress() (from any thread, one at a time), and fails
// with what the request's test() raises. A null request gives a ready future. Complete it (or
// quiet the window) before the window is freed or the runtime closes.
future<> to_future(rma::request&& r);
// A future<> ready when the file access of `r` completed (its data is in the file or in the
// buffer): polled by is_ready(), wait() and progress() from any thread, one at a time; fails
// with the access's error (what file_request::wait() rethrows). The status is dropped (ask the
// file's size, or keep the request, when a read's count matters). An empty request gives a
// ready future. The buffer belongs to the access until the future is ready.
future<> to_future(file_request&& r);

}  // namespace oneside
