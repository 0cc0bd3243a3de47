// The router's calls that reach both backends (see router.hpp).
#include "transport/router.hpp"

#include <algorithm>
#include <atomic>

#include <oneside/runtime/wait.hpp>

#include "bootstrap/bootstrap.hpp"
#include "transport/am_registry.hpp"

namespace oneside::transport {

router::router(rank_t rank, int size, std::vector<rank_t> node_members, std::string name)
    : rank_(rank),
      size_(size),
      on_node_(static_cast<std::size_t>(size), 0),
      name_(std::move(name)) {
  for (rank_t r : node_members) on_node_[static_cast<std::size_t>(r)] = 1;
}

router::~router() {
  // The network backend's memory lives in the node backend's segments: it goes first.
  net_.reset();
  node_.reset();
}

void router::attach(std::unique_ptr<oneside::detail::bootstrap> node_boot,
                    std::unique_ptr<runtime_backend> node, std::unique_ptr<runtime_backend> net) {
  node_boot_ = std::move(node_boot);
  node_ = std::move(node);
  net_ = std::move(net);
  // What the layers above may count on: what both backends give.
  const transport_caps& a = node_->caps();
  const transport_caps& b = net_->caps();
  caps_ = a;
  caps_.atomics_coherent_with_cpu = a.atomics_coherent_with_cpu && b.atomics_coherent_with_cpu;
  caps_.max_inline_put = std::min(a.max_inline_put, b.max_inline_put);
  caps_.max_am_payload = std::min(a.max_am_payload, b.max_am_payload);
  caps_.unified_memory = a.unified_memory && b.unified_memory;
  caps_.gets_complete_at_once = a.gets_complete_at_once && b.gets_complete_at_once;
  caps_.group_memory_faster = a.group_memory_faster || b.group_memory_faster;
}

void router::close() {
  // Everything this rank issued completes first, through both; then the network backend's
  // collective close (no rank sends anything after it), then the node's.
  flush_all();
  net_->close();
  node_->close();
}

void router::abandon() noexcept {
  net_->abandon();
  node_->abandon();
}

void router::flush_all() {
  node_->flush_all();
  net_->flush_all();
}

void router::flush_local_all() {
  node_->flush_local_all();
  net_->flush_local_all();
}

bool router::test(completion& c) {
  return test_entries(c);
}

void router::wait(completion& c) {
  wait_entries(c);
}

void router::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                     completion* c) {
  detail::check_am_payload(dst, payload.size(), caps_.max_am_payload);
  pick(dst).am_send(dst, handler, payload, c);
}

void router::progress() {
  node_->progress();
  net_->progress();
}

void router::wake(std::span<const rank_t> ranks) noexcept {
  node_->wake(ranks);  // the node backend wakes its own ranks and skips the others
  for (rank_t r : ranks) {
    if (!is_node(r)) net_->wake(r);
  }
}

}  // namespace oneside::transport
