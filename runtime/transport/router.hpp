// The router: the transport of a job that spans nodes. It holds two independent backends,
// one for the ranks of this node (shared memory) and one for every other rank (the network),
// and sends each call to the one that serves its peer, as Sandia OpenSHMEM's shmem_comm.h
// chooses between on-node and network transports in one place above both. Neither backend
// knows of the other or of the router: both address peers by job rank, and active-message
// handlers receive the router (options' `front`), so what a handler sends is routed too.
//
// Memory comes from the node backend (node peers load and store it) through the network
// backend, which makes it reachable over the network as well; calls that span both backends
// (flush_all, progress, wake of several ranks, close) go to both.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/runtime_backend.hpp"

namespace oneside::detail {
class bootstrap;
}

namespace oneside::transport {

class router final : public runtime_backend {
 public:
  // `node_members`: the job ranks the node backend serves, ascending (this rank among them).
  router(rank_t rank, int size, std::vector<rank_t> node_members, std::string name);
  ~router() override;

  // Hands over the backends (made with this router as their front) and the node's bootstrap,
  // which the node backend uses until it closes.
  void attach(std::unique_ptr<oneside::detail::bootstrap> node_boot,
              std::unique_ptr<runtime_backend> node, std::unique_ptr<runtime_backend> net);

  void close() override;
  void abandon() noexcept override;
  bool is_complete(const completion::pending& p) override { return pick(p.target).is_complete(p); }
  bool in_use() const noexcept override {
    return (node_ && node_->in_use()) || (net_ && net_->in_use());
  }

  std::string_view name() const noexcept override { return name_; }
  const transport_caps& caps() const noexcept override { return caps_; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::span<const rank_t> node_ranks() const noexcept override { return node_->node_ranks(); }

  using backend::allocate_segment;
  segment allocate_segment(std::size_t bytes, const segment_request& how) override {
    return net_->allocate_segment(bytes, how);
  }
  segment allocate_group(std::span<const rank_t> members, std::size_t bytes,
                         const segment_request& how) override {
    return net_->allocate_group(members, bytes, how);
  }
  void reserve(const segment& s, std::size_t offset, std::size_t bytes,
               std::string_view call) override {
    net_->reserve(s, offset, bytes, call);
  }
  exposure expose(void* base, std::size_t bytes) override { return net_->expose(base, bytes); }
  exposure expose_optional(void* base, std::size_t bytes) override {
    return net_->expose_optional(base, bytes);
  }

  void put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src,
           completion* c) override {
    pick(dst).put(dst, addr, src, c);
  }
  void get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion* c) override {
    pick(src).get(src, addr, dst, c);
  }
  void putv(rank_t dst, std::span<const const_iov> local, std::span<const remote_iov> remote,
            completion* c) override {
    pick(dst).putv(dst, local, remote, c);
  }
  void getv(rank_t src, std::span<const mutable_iov> local, std::span<const remote_iov> remote,
            completion* c) override {
    pick(src).getv(src, local, remote, c);
  }
  void amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
           completion* c) override {
    pick(dst).amo(dst, addr, args, result, c);
  }

  void flush(rank_t target) override { pick(target).flush(target); }
  void flush_all() override;
  void flush_local(rank_t target) override { pick(target).flush_local(target); }
  void flush_local_all() override;
  bool test(completion& c) override;
  void wait(completion& c) override;

  void* direct(rank_t r, std::uintptr_t addr, std::size_t len) noexcept override {
    return is_node(r) ? node_->direct(r, addr, len) : nullptr;
  }
  pinned pin(rank_t r, std::uintptr_t addr, std::size_t len) override {
    return pick(r).pin(r, addr, len);
  }
  pinned pin_exposure(rank_t r, std::uint64_t exposure_id, std::uintptr_t addr,
                      std::size_t len) override {
    return pick(r).pin_exposure(r, exposure_id, addr, len);
  }
  reach_table& reach() noexcept override { return node_->reach(); }
  bool exposes(rank_t r, std::uintptr_t addr, std::size_t len) override {
    return pick(r).exposes(r, addr, len);
  }
  // Payloads are held to the smaller limit of the two backends (caps()).
  void am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
               completion* c) override;
  void progress() override;
  void wake(rank_t r) noexcept override { pick(r).wake(r); }
  void wake(std::span<const rank_t> ranks) noexcept override;
  oneside::detail::doorbell& local_doorbell() noexcept override { return node_->local_doorbell(); }
  oneside::detail::doorbell* peer_doorbell(rank_t r) noexcept override {
    return is_node(r) ? node_->peer_doorbell(r) : nullptr;
  }
  // Segments and exposures are made (and so released) by the backends themselves.
  void release(segment&) noexcept override {}
  void release(exposure&) noexcept override {}

 private:
  bool is_node(rank_t r) const noexcept {
    return r >= 0 && r < size_ && on_node_[static_cast<std::size_t>(r)] != 0;
  }
  // The backend serving `r`: the node's for its ranks, the network's for every other (which
  // also raises the errors of ranks outside the job).
  runtime_backend& pick(rank_t r) noexcept { return is_node(r) ? *node_ : *net_; }

  rank_t rank_;
  int size_;
  std::vector<char> on_node_;  // by job rank
  std::string name_;
  transport_caps caps_{};
  std::unique_ptr<oneside::detail::bootstrap> node_boot_;
  std::unique_ptr<runtime_backend> node_;
  std::unique_ptr<runtime_backend> net_;
};

}  // namespace oneside::transport
