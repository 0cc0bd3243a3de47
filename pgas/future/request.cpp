// to_future(rma::request&&), to_future(file_request&&): a request becomes a future<> that
// progress() polls.
#include <utility>

#include <oneside/pgas/future.hpp>

namespace oneside {

future<> to_future(rma::request&& r) {
  if (r.is_null()) return {};
  return pgas::detail::make_pending_future([req = std::move(r)]() mutable { return req.test(); });
}

future<> to_future(file_request&& r) {
  if (!r.is_valid()) return {};
  return pgas::detail::make_pending_future([req = std::move(r)]() mutable {
    if (!req.test()) return false;
    req.wait();  // complete: returns at once, or rethrows the access's error
    return true;
  });
}

}  // namespace oneside
