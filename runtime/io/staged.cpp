// Staged access: a blocking access of large contiguous runs goes through a reused buffer of two
// halves, the file's I/O thread moving one half while the calling thread copies the other.
// Reads: the I/O thread reads the next two halves ahead, the caller copies each out as it
// lands. Writes: the caller copies the next half in while the I/O thread writes the previous.
//
// Why (bench/RESULTS.md, "Staged writes"; strace and perf on this VM's 6.18 kernel): a
// buffered write holds the file's inode lock for its whole length (ext4 and tmpfs alike), so
// two members' large writes into one file run one after the other, and a lock holder that is
// preempted stalls the other for the rest of its copy. Through a half that stays in the cache
// each hold is short, the kernel's copy reads from the cache, and the caller's copy of the next
// half runs on the other core meanwhile. Each half is a handoff between the two threads, which
// costs a time slice when ranks outnumber cores: the automatic rule (stages) leaves those
// nodes, and reads, unstaged.
#include <algorithm>
#include <cstring>

#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "io/file_impl.hpp"

namespace oneside::detail {

std::atomic<std::int64_t> staged_accesses_for_testing{0};

namespace {

// cb_buffer_size's default, for staged accesses and collective buffering alike: ROMIO's is
// 16 MiB, but halves that stay in the cache while they are filled and the I/O thread writes
// them out measured 2-3x faster here (512 KiB - 1 MiB against 4-16 MiB, bench/run_io.py).
constexpr std::size_t default_stage_half = std::size_t{1} << 20;

// The halves of a staged access: one file_op per half-sized chunk of the access's data bytes.
class stager {
 public:
  stager(file_impl& f, file_op& op, std::byte* buf, std::size_t half)
      : f_(f), op_(op), buf_(buf), half_(half) {}

  // Submits chunk k (data bytes [k·half, …)) through half k % 2; writes copy it in first.
  void submit(std::uint64_t k) {
    const std::uint64_t from = k * half_;
    const std::size_t len =
        static_cast<std::size_t>(std::min<std::uint64_t>(half_, op_.bytes - from));
    std::byte* half = buf_ + (k % 2) * half_;
    auto c = std::make_shared<file_op>();
    c->write = op_.write;
    c->fd = op_.fd;
    c->call = op_.call;
    c->path = op_.path;
    c->bytes = op_.bytes;  // errors name the call's size, as an unstaged access does
    c->count = static_cast<count_t>(len);
    c->direct = half;
    // The pieces holding data bytes [from, from + len): the op's pieces from the cursor on.
    std::size_t left = len;
    while (left > 0) {
      const file_piece& p = op_.pieces[piece_];
      const std::size_t take = std::min(left, p.len - in_piece_);
      c->pieces.push_back({p.at + static_cast<offset_t>(in_piece_), take});
      in_piece_ += take;
      left -= take;
      if (in_piece_ == p.len) {
        ++piece_;
        in_piece_ = 0;
      }
    }
    if (op_.write) std::memcpy(half, op_.direct + from, len);
    f_.worker.submit(c);
    slot_[k % 2] = std::move(c);
  }

  // Waits for the chunk in half h; returns it (null when none).
  std::shared_ptr<file_op> wait(std::size_t h) {
    std::shared_ptr<file_op> c = std::move(slot_[h]);
    if (!c) return c;
    file_op* p = c.get();
    wait_until([p] { return p->done.load(std::memory_order_acquire); });
    return c;
  }

 private:
  file_impl& f_;
  file_op& op_;
  std::byte* buf_;
  std::size_t half_;
  std::size_t piece_ = 0;     // the op's piece the next chunk starts in
  std::size_t in_piece_ = 0;  // and how far into it
  std::shared_ptr<file_op> slot_[2];
};

}  // namespace

std::size_t stage_half(const file_impl& f) {
  if (auto v = f.hints.get("cb_buffer_size")) return static_cast<std::size_t>(std::stoll(*v));
  return default_stage_half;
}

bool stages(const file_impl& f, const file_op& op) {
  if (op.direct == nullptr || op.atomic || op.pieces.empty()) return false;
  const auto hint = f.hints.get("staged_io");
  if (hint && *hint == "false") return false;
  const std::uint64_t half = stage_half(f);
  if (op.bytes <= 2 * half) return false;  // one or two halves: nothing to overlap
  if (hint && *hint == "true") return true;
  // Automatic: writes of large runs only (many small pieces gain nothing from the copy), of at
  // least eight halves, while this node's ranks do not outnumber its cores (each half is a
  // handoff to the I/O thread, which costs a time slice when every core is taken). Reads stay
  // one pread per piece: they need the I/O thread at every half too and measured slower on
  // the loaded machine (bench/RESULTS.md).
  const context* c = current_context();
  if (c == nullptr || c->oversubscribed) return false;
  return op.write && op.bytes >= 8 * half && op.bytes / op.pieces.size() >= half;
}

io_status run_staged(file_impl& f, file_op& op) {
  std::unique_lock<std::mutex> g(f.stage_mu, std::try_to_lock);
  if (!g.owns_lock()) {  // another thread's staged access holds the buffer: move it directly
    run_file_op(op);
    if (op.error) std::rethrow_exception(op.error);
    return op.status;
  }
  const std::size_t half = stage_half(f);
  if (f.stage_buffer.size() != 2 * half) f.stage_buffer.assign(2 * half, std::byte{0});
  staged_accesses_for_testing.fetch_add(1, std::memory_order_relaxed);
  stager s(f, op, f.stage_buffer.data(), half);
  const std::uint64_t chunks = (op.bytes + half - 1) / half;
  std::exception_ptr failed;
  std::uint64_t done = 0;
  if (op.write) {
    for (std::uint64_t k = 0; k < chunks && !failed; ++k) {
      if (auto c = s.wait(k % 2); c && c->error) failed = c->error;
      if (!failed) s.submit(k);
    }
    for (std::size_t h = 0; h < 2; ++h) {
      if (auto c = s.wait(h); c && c->error && !failed) failed = c->error;
    }
    // The chunks go out in order and the first error stops the rest (as an unstaged access
    // stops at its first failing piece).
    if (failed) std::rethrow_exception(failed);
    done = op.bytes;
  } else {
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(2, chunks); ++k) s.submit(k);
    for (std::uint64_t k = 0; k < chunks; ++k) {
      std::shared_ptr<file_op> c = s.wait(k % 2);
      if (c->error) {
        failed = c->error;
        break;
      }
      const auto got = static_cast<std::uint64_t>(c->status.bytes);
      std::memcpy(op.direct + done, c->direct, got);
      done += got;
      if (got < static_cast<std::uint64_t>(c->count)) break;  // the end of the file (IO-14)
      if (k + 2 < chunks) s.submit(k + 2);
    }
    for (std::size_t h = 0; h < 2; ++h) (void)s.wait(h);  // nothing may still use the buffer
    if (failed) std::rethrow_exception(failed);
  }
  op.status = make_status(op.type, done);
  return op.status;
}

}  // namespace oneside::detail
