// Checkpoints of the stencil app (--checkpoint-every K --checkpoint PATH, --restart PATH,
// --save-final PATH): the state after an iteration — every owned cell of `in` and `out` — is
// one 2 x n x n dist_array<double, 3> (dimension 0: in, out; block x block over the ranks'
// tiles) saved with dist_array::save_async, so a checkpoint is one file in global row-major
// order that any rank count and any variant restarts from. Each rank puts its tile of both
// arrays into the checkpoint array (a region put), then the save starts and the run goes on
// while the file's I/O thread writes; the next checkpoint (or the end of the run) commits it:
// wait, sync the file, and rank 0 renames PATH.tmp to PATH once every rank is done — so a
// crash in the middle of a checkpoint leaves the previous one intact. Unlike the other
// stencil_*.hpp headers this one uses oneside (the MPI peer has no checkpoints).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "stencil_cli.hpp"
#include "stencil_kernel.hpp"

namespace oneside::apps::stencil {

class checkpointer {
 public:
  // Collective: builds the checkpoint array when any checkpoint option is given.
  checkpointer(const options& o, int px, int py) : o_(o) {
    if (o.checkpoint.empty() && o.restart.empty() && o.save_final.empty()) return;
    const auto n = static_cast<std::size_t>(o.n);
    array_.emplace(oneside::world(), std::array<std::size_t, 3>{2, n, n},
                   std::array<oneside::distribution, 3>{oneside::dist::none, oneside::dist::block,
                                                        oneside::dist::block},
                   std::array<int, 3>{1, py, px}, "stencil checkpoint");
  }

  // With --restart: loads the checkpoint into g's owned cells and returns the number of
  // iterations it holds (the first iteration to run); 0 otherwise. Collective.
  int restore(const grid& g) {
    if (o_.restart.empty()) return 0;
    const oneside::array_file_header h = oneside::read_array_header(o_.restart);
    const long long n = field(h.metadata, "n=");
    const long long r = field(h.metadata, "radius=");
    const long long done = field(h.metadata, "done=");
    if (n != o_.n || r != o_.radius || done < 0 || done > o_.iterations + 1) {
      throw std::runtime_error("checkpoint " + o_.restart + " (" + h.metadata +
                               ") does not fit this run (n = " + std::to_string(o_.n) +
                               ", radius = " + std::to_string(o_.radius) + ", " +
                               std::to_string(o_.iterations + 1) + " iterations)");
    }
    array_->load(o_.restart);
    const block& b = *g.b;
    std::vector<double> cells(static_cast<std::size_t>(b.w * b.h));
    array_->get(tile(0, b), cells);
    for (index_t y = 0; y < b.h; ++y) {
      for (index_t x = 0; x < b.w; ++x) g.in[b.at(x, y)] = cells[cell(b, x, y)];
    }
    array_->get(tile(1, b), std::span<double>(g.out, cells.size()));
    if (oneside::world().rank() == 0) {
      std::printf("Restarted from         = %s after %lld iterations\n", o_.restart.c_str(), done);
      std::fflush(stdout);
    }
    return static_cast<int>(done);
  }

  // After iteration `it` (0 is the warm-up): starts a checkpoint when K iterations more are
  // done, and it is not the last one. Collective.
  void after_iteration(const grid& g, int it) {
    const int done = it + 1;
    if (o_.checkpoint_every == 0 || done % o_.checkpoint_every != 0 || it >= o_.iterations) return;
    commit();  // the previous checkpoint, before the array is overwritten
    const double t0 = seconds();
    fill(g);
    ++started_;
    meta_ = metadata(done);
    pending_ = array_->save_async(o_.checkpoint + ".tmp", {.metadata = meta_});
    has_pending_ = true;
    begin_seconds_ = seconds() - t0;
    if (o_.crash_in_checkpoint == started_ &&
        oneside::world().rank() == std::min(1, oneside::world().size() - 1)) {
      // Testing only: die after the write began and before its commit, as a crash would.
      std::fprintf(stderr, "stencil: rank %d: --crash-in-checkpoint %d: exiting mid-checkpoint\n",
                   oneside::world().rank(), started_);
      std::fflush(stderr);
      ::_exit(86);
    }
  }

  // At the end of the run: commits the last checkpoint, saves --save-final. Collective.
  void finish(const grid& g) {
    commit();
    if (o_.save_final.empty()) return;
    fill(g);
    array_->save(o_.save_final, {.metadata = metadata(o_.iterations + 1)});
  }

 private:
  static double seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static long long field(const std::string& meta, const char* key) {
    const std::size_t at = meta.find(std::string(" ") + key);
    if (at == std::string::npos) return -1;
    return std::strtoll(meta.c_str() + at + 1 + std::char_traits<char>::length(key), nullptr, 10);
  }
  std::string metadata(int done) const {
    return "oneside-stencil n=" + std::to_string(o_.n) + " radius=" + std::to_string(o_.radius) +
           " done=" + std::to_string(done);
  }
  static std::size_t cell(const block& b, index_t x, index_t y) {
    return static_cast<std::size_t>(y * b.w + x);
  }
  static oneside::region<3> tile(std::size_t which, const block& b) {
    return {{which, static_cast<std::size_t>(b.gy), static_cast<std::size_t>(b.gx)},
            {1, static_cast<std::size_t>(b.h), static_cast<std::size_t>(b.w)}};
  }
  // Puts this rank's owned cells of in and out into the checkpoint array; returns once every
  // rank's are there.
  void fill(const grid& g) {
    const block& b = *g.b;
    std::vector<double> cells(static_cast<std::size_t>(b.w * b.h));
    for (index_t y = 0; y < b.h; ++y) {
      for (index_t x = 0; x < b.w; ++x) cells[cell(b, x, y)] = g.in[b.at(x, y)];
    }
    array_->put(tile(0, b), cells);
    array_->put(tile(1, b), std::span<const double>(g.out, cells.size()));
    oneside::barrier(oneside::world());
  }
  // Completes the pending checkpoint: every rank's part written and synced, then rank 0
  // renames PATH.tmp to PATH (and syncs the directory) while the others wait.
  void commit() {
    if (!has_pending_) return;
    has_pending_ = false;
    const double t0 = seconds();
    pending_.wait();
    const double waited = seconds() - t0;
    const std::string tmp = o_.checkpoint + ".tmp";
    {
      oneside::file f = oneside::file::open(oneside::world(), tmp, oneside::file_mode::rdonly);
      f.sync();   // every rank's part is on the device
      f.close();  // a barrier
    }
    if (oneside::world().rank() == 0) {
      std::error_code ec;
      std::filesystem::rename(tmp, o_.checkpoint, ec);
      if (ec) throw std::runtime_error("renaming " + tmp + ": " + ec.message());
      std::filesystem::path dir = std::filesystem::path(o_.checkpoint).parent_path();
      if (dir.empty()) dir = ".";
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        (void)::fsync(fd);  // the rename itself reaches the device
        ::close(fd);
      }
      // Rank 0's times: copying into the checkpoint array and starting the write (the run
      // stops for it), waiting for the rest of the write at the commit, and sync + rename.
      std::printf(
          "Checkpoint             = %s (%s; copy+begin %.3f s, wait %.3f s, sync+commit "
          "%.3f s)\n",
          o_.checkpoint.c_str(), meta_.c_str(), begin_seconds_, waited, seconds() - t0 - waited);
      std::fflush(stdout);
    }
    oneside::barrier(oneside::world());
  }

  const options& o_;
  std::optional<oneside::dist_array<double, 3>> array_;
  oneside::future<> pending_;
  bool has_pending_ = false;
  int started_ = 0;
  std::string meta_;
  double begin_seconds_ = 0;
};

}  // namespace oneside::apps::stencil
