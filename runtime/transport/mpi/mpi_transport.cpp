// The MPI backend's setup and teardown, its error translation and its progress thread. See
// mpi_transport.hpp for the design.
#include <cstdio>
#include <ctime>
#include <pthread.h>
#include <string>
#include <sys/prctl.h>

#include <oneside/runtime/wait.hpp>

#include "bootstrap/bootstrap.hpp"
#include "runtime/amo_local.hpp"
#include "transport/mpi/mpi_backend.hpp"

namespace oneside::transport {

using namespace mpi_detail;

namespace mpi_detail {

void mpi_failed(int rc, std::string_view call, rank_t target) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  // Bad addresses and ranges are the caller's; anything else is the transport's.
  const bool caller = cls == MPI_ERR_RMA_RANGE || cls == MPI_ERR_DISP || cls == MPI_ERR_ARG ||
                      cls == MPI_ERR_COUNT || cls == MPI_ERR_RMA_ATTACH;
  std::string what = "MPI failed: ";
  what.append(text, static_cast<std::size_t>(len));
  oneside::detail::raise(caller ? error_class::arg : error_class::intern,
                         {.call = call, .target = target}, what);
}

}  // namespace mpi_detail

namespace {

std::int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

mpi::mpi(oneside::detail::bootstrap& boot, const mpi_options& opts)
    : boot_(boot),
      opts_(opts),
      rank_(boot.rank()),
      size_(boot.size()),
      memory_(*opts.memory),
      bell_(*opts.bell),
      front_(opts.front != nullptr ? *opts.front : *this) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &am_comm_), "runtime");
  MPI_Comm_set_errhandler(am_comm_, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &win_comm_), "runtime");
  MPI_Comm_set_errhandler(win_comm_, MPI_ERRORS_RETURN);
  peers_ = std::make_unique<peer_state[]>(static_cast<std::size_t>(size_));

  (void)detail::amo_message_handler();  // registered before any peer may send one

  // One dynamic window for the job, locked for the backend's life.
  check(MPI_Win_create_dynamic(MPI_INFO_NULL, win_comm_, &win_), "runtime");
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "runtime");
  attach_sentinel();
  int* model = nullptr;
  int found = 0;
  MPI_Win_get_attr(win_, MPI_WIN_MODEL, &model, &found);

  caps_.atomics_coherent_with_cpu = true;  // remote atomics run at the owner, on the CPU
  caps_.max_inline_put = stage_limit;
  caps_.group_memory_faster = true;  // a window of its own: no region table fetched per access
  caps_.max_am_payload = max_piece - sizeof(am_header);
  caps_.unified_memory = found != 0 && model != nullptr && *model == MPI_WIN_UNIFIED;

  progress_ = std::thread([this] { progress_main(); });
}

void mpi::stop_progress() noexcept {
  if (!progress_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  parked_.store(0, std::memory_order_seq_cst);
  parked_.notify_one();
  progress_.join();
}

void mpi::close() {
  if (closed_.load(std::memory_order_acquire)) return;
  flush_all();
  check(MPI_Barrier(am_comm_), "runtime");  // nobody sends to this rank any more
  stop_progress();
  while (poll()) {
  }
  {
    std::lock_guard lock(sends_mutex_);
    MPI_Waitall(static_cast<int>(send_requests_.size()), send_requests_.data(),
                MPI_STATUSES_IGNORE);
    send_requests_.clear();
    send_buffers_.clear();
  }
  MPI_Win_unlock_all(win_);
  {
    std::lock_guard lock(memory_mutex_);
    for (const range& r : attached_) MPI_Win_detach(win_, reinterpret_cast<void*>(r.lo));
    attached_.clear();
    // Group windows still there (their segments outlive the runtime): freed by every member
    // together, in the order they were made.
    for (auto& [id, g] : groups_) free_group(*g, true);
    groups_.clear();
  }
  MPI_Win_free(&win_);
  closed_.store(true, std::memory_order_release);
  {
    std::lock_guard lock(memory_mutex_);
    carved_.clear();
    chunks_.clear();
    exposures_.clear();
  }
  MPI_Comm_free(&win_comm_);
  MPI_Comm_free(&am_comm_);
}

void mpi::abandon() noexcept {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  stop_progress();
  boot_.abandon();
  std::lock_guard lock(memory_mutex_);
  for (auto& [id, g] : groups_) free_group(*g, false);
  groups_.clear();
  carved_.clear();
  chunks_.clear();
  exposures_.clear();
}

void mpi::park_while_busy() noexcept {
  parked_.store(1, std::memory_order_seq_cst);
  while (in_mpi_.load(std::memory_order_seq_cst) > 0 && !stop_.load(std::memory_order_acquire)) {
    parked_.wait(1, std::memory_order_seq_cst);
    if (parked_.load(std::memory_order_seq_cst) == 1) continue;  // woken for nothing
    parked_.store(1, std::memory_order_seq_cst);                 // a thread may be in again
  }
  parked_.store(0, std::memory_order_relaxed);
}

void mpi::progress_main() noexcept {
  ::pthread_setname_np(::pthread_self(), "oneside-mpi");
  oneside::detail::mark_runtime_thread();
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // short sleeps really are short
  std::int64_t idle_since = now_ns();
  std::int64_t sleep_ns = 1000;
  while (!stop_.load(std::memory_order_acquire)) {
    if (in_mpi_.load(std::memory_order_acquire) > 0) {
      park_while_busy();
      // MPI was progressed until a moment ago: the next poll is due a longest sleep later.
      const timespec ts{0, static_cast<long>(std::max<std::int64_t>(opts_.poll_max_ns, 1000))};
      ::nanosleep(&ts, nullptr);
      continue;
    }
    if (poll()) {
      idle_since = now_ns();
      sleep_ns = 1000;
      continue;
    }
    const std::int64_t idle = now_ns() - idle_since;
    if (idle < opts_.spin_ns) continue;
    // Idle: sleep between polls, doubling up to poll_max_ns. Never longer: one-sided traffic
    // into this rank (on engines without hardware offload) moves only while someone polls.
    const std::int64_t cap = std::max<std::int64_t>(opts_.poll_max_ns, 1000);
    sleep_ns = std::min(sleep_ns, cap);
    timespec ts{0, static_cast<long>(sleep_ns)};
    ::nanosleep(&ts, nullptr);
    sleep_ns = std::min(sleep_ns * 2, cap);
  }
}

std::unique_ptr<runtime_backend> make_mpi_backend(oneside::detail::bootstrap& boot,
                                                  const mpi_options& opts) {
  return std::make_unique<mpi>(boot, opts);
}

}  // namespace oneside::transport
