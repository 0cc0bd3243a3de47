// The two bootstraps of a single node: one process alone, or the ranks of oneside-run,
// which meet in the job's boot object.
#include "bootstrap/bootstrap.hpp"

#include <cstring>
#include <new>
#include <string>
#include <unistd.h>
#include <vector>

#include "bootstrap/boot_segment.hpp"
#include "progress/wait_watch.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::detail {

void init_boot_segment(void* mem, int size) noexcept {
  auto* h = static_cast<boot_header*>(mem);
  h->version = boot_version;
  h->size = size;
  h->slot_bytes = static_cast<std::uint32_t>(boot_slot_bytes);
  h->arrived.store(0, std::memory_order_relaxed);
  h->generation.store(0, std::memory_order_relaxed);
  for (int r = 0; r < size; ++r) new (&boot_rank_of(mem, size, r)) boot_rank{};
  std::atomic_ref<std::uint64_t>(h->magic).store(boot_magic, std::memory_order_release);
}

namespace {

class single_bootstrap final : public bootstrap {
 public:
  single_bootstrap() : job_(make_job_id()) {}
  std::string_view kind() const noexcept override { return "single"; }
  rank_t rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  rank_t local_rank() const noexcept override { return 0; }
  int local_size() const noexcept override { return 1; }
  const std::string& job_id() const noexcept override { return job_; }
  void allgather(const void* in, void* out, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(out, in, bytes);
  }
  void barrier() override {}

 private:
  std::string job_;
};

class launcher_bootstrap final : public bootstrap {
 public:
  launcher_bootstrap()
      : job_(setting_string("ONESIDE_JOB_ID")),
        rank_(static_cast<rank_t>(setting_int("ONESIDE_RANK"))),
        size_(static_cast<int>(setting_int("ONESIDE_SIZE"))),
        local_rank_(static_cast<rank_t>(setting_int("ONESIDE_LOCAL_RANK"))),
        local_size_(static_cast<int>(setting_int("ONESIDE_LOCAL_SIZE"))) {
    ONESIDE_CHECK(
        size_ > 0 && rank_ >= 0 && rank_ < size_, error_class::intern, {.call = "runtime"},
        "ONESIDE_RANK=" + std::to_string(rank_) + " and ONESIDE_SIZE=" + std::to_string(size_) +
            " do not describe a rank of a job");
    seg_ = shm_object(shm_name(job_, "boot"), 0, shm_object::mode::open);
    ONESIDE_CHECK(seg_.size() >= boot_segment_bytes(size_), error_class::intern,
                  {.call = "runtime"}, "the job's boot object " + seg_.name() + " is too small");
    hdr_ = static_cast<boot_header*>(seg_.data());
    const auto magic = std::atomic_ref<std::uint64_t>(hdr_->magic).load(std::memory_order_acquire);
    ONESIDE_CHECK(magic == boot_magic && hdr_->version == boot_version && hdr_->size == size_,
                  error_class::intern, {.call = "runtime"},
                  "the job's boot object " + seg_.name() +
                      " does not match this rank (another oneside version, or a stale job)");
  }

  // Takes this rank for this process: true when it was free or is this process's already (a
  // runtime opened again). False when another process joined as this rank: this one inherited
  // the launcher's variables from it (a program a rank started) and is not part of the job.
  bool claim() noexcept {
    std::atomic<std::int32_t>& owner = boot_rank_of(seg_.data(), size_, rank_).owner;
    const auto me = static_cast<std::int32_t>(::getpid());
    std::int32_t seen = 0;
    return owner.compare_exchange_strong(seen, me, std::memory_order_acq_rel) || seen == me;
  }

  ~launcher_bootstrap() override {
    if (!watched_) return;
    // A wait of another thread may still be counting itself in our record (it should not:
    // the runtime is closing); then the mapping stays for the process's life.
    if (!retire_wait_record(boot_rank_of(seg_.data(), size_, rank_).waits, 1'000'000'000)) {
      static std::vector<shm_object> kept;
      kept.push_back(std::move(seg_));
    }
  }

  // From now on this process's long waits report into its rank's record, where the launcher
  // reads them (hang check, --dump).
  void watch_waits() noexcept {
    set_wait_record(&boot_rank_of(seg_.data(), size_, rank_).waits, true);
    watched_ = true;
  }

  std::string_view kind() const noexcept override { return "launcher"; }
  void note_runtime(runtime_state s) noexcept override {
    boot_rank_of(seg_.data(), size_, rank_)
        .state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  rank_t local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const std::string& job_id() const noexcept override { return job_; }

  void barrier() override {
    const std::uint32_t gen = hdr_->generation.load(std::memory_order_acquire);
    if (hdr_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<std::uint32_t>(size_)) {
      cross_process_acquire();  // the last to arrive has seen everyone arrive
      hdr_->arrived.store(0, std::memory_order_relaxed);
      hdr_->generation.fetch_add(1, std::memory_order_release);
      notify(hdr_->bell);
      return;
    }
    wait_until(hdr_->bell, [&] { return hdr_->generation.load(std::memory_order_acquire) != gen; });
  }

  void allgather(const void* in, void* out, std::size_t bytes) override {
    const auto* src = static_cast<const std::byte*>(in);
    auto* dst = static_cast<std::byte*>(out);
    std::byte* slots = static_cast<std::byte*>(seg_.data()) + boot_slots_offset;
    for (std::size_t off = 0; off < bytes || off == 0; off += boot_slot_bytes) {
      const std::size_t n = std::min(boot_slot_bytes, bytes - off);
      if (n > 0)
        std::memcpy(slots + static_cast<std::size_t>(rank_) * boot_slot_bytes, src + off, n);
      barrier();
      for (int r = 0; r < size_; ++r) {
        if (n > 0) {
          std::memcpy(dst + static_cast<std::size_t>(r) * bytes + off,
                      slots + static_cast<std::size_t>(r) * boot_slot_bytes, n);
        }
      }
      barrier();
      if (bytes == 0) break;
    }
  }

 private:
  std::string job_;
  rank_t rank_;
  int size_;
  rank_t local_rank_;
  int local_size_;
  shm_object seg_;
  boot_header* hdr_ = nullptr;
  bool watched_ = false;
};

}  // namespace

std::unique_ptr<bootstrap> make_bootstrap() {
  if (setting_is_set("ONESIDE_JOB_ID") && !setting_string("ONESIDE_JOB_ID").empty()) {
    auto b = std::make_unique<launcher_bootstrap>();
    if (b->claim()) {
      b->watch_waits();
      return b;
    }
    // Started by a rank (it inherited the variables): a job of its own, of one rank.
    return std::make_unique<single_bootstrap>();
  }
  if (const int n = mpi_launcher_size(); n > 0) {
#if ONESIDE_HAVE_MPI
    return make_mpi_bootstrap();
#else
    ONESIDE_CHECK(n == 1, error_class::arg, {.call = "runtime"},
                  "an MPI launcher started " + std::to_string(n) +
                      " ranks, but this oneside was built without MPI (configure with "
                      "-DONESIDE_WITH_MPI=ON and an MPI installed, or start it with oneside-run)");
#endif
  }
  return std::make_unique<single_bootstrap>();
}

}  // namespace oneside::detail
