// to_future(rma::request&&): a request becomes a future<> that progress() polls.
#include <utility>

#include <oneside/pgas/future.hpp>

namespace oneside {

future<> to_future(rma::request&& r) {
  if (r.is_null()) return {};
  return pgas::detail::make_pending_future([req = std::move(r)]() mutable { return req.test(); });
}

}  // namespace oneside
