// Joining the rma layer's requests with futures: a request-based rput/rget/raccumulate's
// rma::request becomes a future<> (to_future), and when_all (when_all.hpp) takes requests
// beside futures. The conversion lives here because rma never includes pgas.
#pragma once

#include <oneside/pgas/future/future.hpp>
#include <oneside/rma/request.hpp>

namespace oneside {

// A future<> ready when `r` completes, with the request's meaning of completion: local (an
// rput's origin buffer may be reused, an rget's data is in place; remote completion still
// needs a flush or the epoch's end, as for the request). The future owns the request: it is
// polled by is_ready(), wait() and progress() (from any thread, one at a time), and fails
// with what the request's test() raises. A null request gives a ready future. Complete it (or
// quiet the window) before the window is freed or the runtime closes.
future<> to_future(rma::request&& r);

}  // namespace oneside
