// The shm backend's data movement: put/get and their iovec forms (load/store where the peer's
// memory is mapped, cross-memory attach elsewhere) and atomics (CPU atomics on mapped memory,
// the owner's agent otherwise).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <sys/uio.h>
#include <vector>

#include <oneside/runtime/copy.hpp>

#include "runtime/amo_local.hpp"
#include "runtime/check.hpp"
#include "transport/iov_match.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::transport {

using oneside::detail::raise;
using namespace shm_detail;

namespace {

// Cross-memory attach of (local, remote) pairs of equal length, in batches of IOV_MAX. Writes
// are counted in at `owner` (the target's page header) while they run.
class cma_batch {
 public:
  cma_batch(pid_t pid, page_header* owner, bool write, rank_t peer, std::string_view call)
      : pid_(pid), owner_(owner), write_(write), peer_(peer), call_(call) {}
  void add(const void* local, std::uintptr_t remote, std::size_t n) {
    local_.push_back(iovec{const_cast<void*>(local), n});
    remote_.push_back(iovec{reinterpret_cast<void*>(remote), n});
    if (local_.size() == IOV_MAX) run();
  }
  void run() {
    std::optional<counted_write> counted;
    if (write_ && !local_.empty()) counted.emplace(*owner_);
    std::size_t i = 0;
    while (i < local_.size()) {
      const std::size_t cnt = std::min<std::size_t>(local_.size() - i, IOV_MAX);
      const ssize_t done = write_ ? ::process_vm_writev(pid_, &local_[i], cnt, &remote_[i], cnt, 0)
                                  : ::process_vm_readv(pid_, &local_[i], cnt, &remote_[i], cnt, 0);
      if (done <= 0) fail(done < 0 ? errno : EFAULT, i);
      // Advance past what moved: whole pairs, then part of one.
      auto left = static_cast<std::size_t>(done);
      while (left > 0 && i < local_.size()) {
        if (left >= local_[i].iov_len) {
          left -= local_[i].iov_len;
          ++i;
        } else {
          local_[i].iov_base = static_cast<std::byte*>(local_[i].iov_base) + left;
          remote_[i].iov_base = static_cast<std::byte*>(remote_[i].iov_base) + left;
          local_[i].iov_len -= left;
          remote_[i].iov_len -= left;
          left = 0;
        }
      }
    }
    local_.clear();
    remote_.clear();
  }

 private:
  [[noreturn]] void fail(int err, std::size_t i) {
    std::string what = write_ ? "cannot write " : "cannot read ";
    what.append(std::to_string(remote_[i].iov_len)).append(" bytes at ");
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", remote_[i].iov_base);
    what.append(addr).append(" of rank ").append(std::to_string(peer_)).append(": ");
    what.append(std::strerror(err));
    error_class ec = error_class::intern;
    if (err == EFAULT) {
      ec = error_class::arg;
      what.append(" (the address is not mapped in that process)");
    } else if (err == EPERM) {
      what.append(
          " (cross-memory attach is not permitted between the ranks; check "
          "/proc/sys/kernel/yama/ptrace_scope)");
    } else if (err == ESRCH) {
      what.append(" (that rank's process has exited)");
    }
    raise(ec, {.call = call_, .target = peer_}, what);
  }

  pid_t pid_;
  page_header* owner_;
  bool write_;
  rank_t peer_;
  std::string_view call_;
  std::vector<iovec> local_;
  std::vector<iovec> remote_;
};

}  // namespace

template <bool Write, class Iov>
void shm::transfer(rank_t target, std::span<const Iov> local, std::span<const remote_iov> remote,
                   std::string_view call) {
  const int i = checked_index(target, call);
  ONESIDE_CHECK(detail::stream_bytes(local) == detail::stream_bytes(remote), error_class::arg,
                {.call = call, .target = target}, "local and remote byte counts differ");
  // Pieces in memory mapped here are copied at once; the others go together, inline when
  // they are few bytes, else by cross-memory attach.
  std::vector<Iov> far_local;
  std::vector<remote_iov> far_remote;
  std::size_t far_bytes = 0;
  detail::match_streams(local, remote, [&](auto* l, std::uintptr_t r, std::size_t n) {
    if (void* p = direct_at(i, r, n)) {
      if constexpr (Write) {
        oneside::detail::copy_bytes(p, l, n);
      } else {
        oneside::detail::copy_bytes(l, p, n);
      }
    } else {
      far_local.push_back(Iov{l, n});
      far_remote.push_back(remote_iov{r, n});
      far_bytes += n;
    }
  });
  if (far_remote.empty()) return;
  const bool exposed = std::all_of(far_remote.begin(), far_remote.end(), [&](const remote_iov& r) {
    return find(target, r.addr, r.len).has_value();
  });
  if (exposed && fits_inline(Write, far_bytes, far_remote.size())) {
    if constexpr (Write) {
      (void)put_inline(i, far_local, far_remote);
    } else {
      get_inline(i, far_local, far_remote);
    }
    return;
  }
  cma_batch b(peer_at(i).pid, peer_at(i).page.header, Write, target, call);
  for (std::size_t k = 0; k < far_remote.size(); ++k) {
    b.add(far_local[k].base, far_remote[k].addr, far_remote[k].len);
  }
  b.run();
}

bool shm::fits_inline(bool write, std::size_t bytes, std::size_t pieces) const noexcept {
  if (bytes > opts_.inline_bytes || t_serving) return false;
  const std::size_t head = sizeof(inline_head) + pieces * sizeof(inline_piece);
  return write ? head + bytes <= caps_.max_am_payload
               : head <= caps_.max_am_payload && bytes <= reply_bytes;
}

void shm::put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src, completion* c) {
  if (const int i = index_of(dst);
      i >= 0 && !src.empty() && !closed_.load(std::memory_order_relaxed)) {
    if (void* p = direct_at(i, addr, src.size())) {  // the load/store fast path
      oneside::detail::copy_bytes(p, src.data(), src.size());
      return;
    }
    // Exposed memory of the target: a message, no allocation, no system call.
    if (fits_inline(true, src.size(), 1) && find(dst, addr, src.size()).has_value()) {
      const const_iov l{src.data(), src.size()};
      const remote_iov r{addr, src.size()};
      const std::uint64_t ticket = put_inline(i, std::span(&l, 1), std::span(&r, 1));
      if (c != nullptr && c != deferred()) c->entries().push_back({dst, ticket});
      return;
    }
  }
  const const_iov l{src.data(), src.size()};
  const remote_iov r{addr, src.size()};
  transfer<true>(dst, std::span(&l, 1), std::span(&r, 1), "put");
}

void shm::get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion*) {
  if (const int i = index_of(src);
      i >= 0 && !dst.empty() && !closed_.load(std::memory_order_relaxed)) {
    if (const void* p = direct_at(i, addr, dst.size())) {
      oneside::detail::copy_bytes(dst.data(), p, dst.size());
      return;
    }
    if (fits_inline(false, dst.size(), 1) && find(src, addr, dst.size()).has_value()) {
      const mutable_iov l{dst.data(), dst.size()};
      const remote_iov r{addr, dst.size()};
      get_inline(i, std::span(&l, 1), std::span(&r, 1));
      return;
    }
  }
  const mutable_iov l{dst.data(), dst.size()};
  const remote_iov r{addr, dst.size()};
  transfer<false>(src, std::span(&l, 1), std::span(&r, 1), "get");
}

void shm::putv(rank_t dst, std::span<const const_iov> local, std::span<const remote_iov> remote,
               completion*) {
  transfer<true>(dst, local, remote, "putv");
}

void shm::getv(rank_t src, std::span<const mutable_iov> local, std::span<const remote_iov> remote,
               completion*) {
  transfer<false>(src, local, remote, "getv");
}

void shm::amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result, completion* c) {
  const int i = checked_index(dst, "amo");
  detail::check_amo(dst, addr, args);
  if (void* p = direct_at(i, addr, amo_type_size(args.type))) {
    detail::amo_apply(p, args, result);
    return;
  }
  amo_inline(i, addr, args, result, c, dst);  // run by the owner's agent
}

}  // namespace oneside::transport
