// File views: the filetype's data runs, flattened once by the datatype engine, tiled from the
// view's displacement; the map from data positions to pieces of the file and back.
#include <algorithm>
#include <string>

#include "io/file_impl.hpp"
#include "runtime/check.hpp"
#include "runtime/layout.hpp"

namespace oneside::detail {

file_view::file_view()
    : disp_(0), etype_(datatype::of<std::byte>()), filetype_(datatype::of<std::byte>()) {
  init("file::open");
}

file_view::file_view(offset_t disp, const datatype& etype, const datatype& filetype,
                     std::string_view call)
    : disp_(disp), etype_(etype), filetype_(filetype) {
  init(call);
}

void file_view::init(std::string_view call) {
  const error_context where{.call = call, .disp = disp_};
  ONESIDE_CHECK(disp_ >= 0, error_class::arg, where, "the view's displacement is negative");
  ONESIDE_CHECK(etype_.size() > 0, error_class::type, where,
                "the etype " + std::string(etype_.name()) + " has no data");
  ONESIDE_CHECK(
      filetype_.size() > 0 && filetype_.size() % etype_.size() == 0, error_class::type, where,
      "the filetype " + std::string(filetype_.name()) + " (" + std::to_string(filetype_.size()) +
          " bytes of data) is not a whole number of etypes " + std::string(etype_.name()) + " (" +
          std::to_string(etype_.size()) + " bytes)");
  ONESIDE_CHECK(filetype_.extent() > 0, error_class::type, where,
                "the filetype " + std::string(filetype_.name()) + " has no positive extent");
  runs_.clear();
  before_.clear();
  std::uint64_t data = 0;
  for_each_byte_run(filetype_, 1, [&](std::ptrdiff_t off, std::size_t len) {
    runs_.push_back({off, len});
    before_.push_back(data);
    data += len;
  });
  // MPI's rule for filetypes: displacements non-negative and monotonically nondecreasing, also
  // from one tile to the next (the last byte of a tile before the first of the next).
  std::ptrdiff_t end = 0;
  for (const file_piece& r : runs_) {
    ONESIDE_CHECK(r.at >= end, error_class::type, where,
                  "the filetype " + std::string(filetype_.name()) +
                      " has data at a negative or decreasing displacement (" +
                      std::to_string(r.at) + ")");
    end = r.at + static_cast<std::ptrdiff_t>(r.len);
  }
  ONESIDE_CHECK(end <= runs_.front().at + filetype_.extent(), error_class::type, where,
                "the tiles of the filetype " + std::string(filetype_.name()) +
                    " overlap (its data reaches past its extent)");
  tile_bytes_ = data;
  tile_extent_ = filetype_.extent();
  contiguous_ = runs_.size() == 1 && static_cast<std::int64_t>(runs_[0].len) == tile_extent_;
  // A cheap fingerprint of the view for IO-15: the displacement and the two layouts.
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint64_t>(disp_));
  for (const datatype* t : {&etype_, &filetype_}) {
    for (std::byte b : encode_layout(*t)) mix(static_cast<std::uint64_t>(b));
    mix(0xffU);
  }
  signature_ = h;
}

void file_view::pieces(std::uint64_t pos, std::uint64_t n, std::vector<file_piece>& out) const {
  auto add = [&out](offset_t at, std::size_t len) {
    if (len == 0) return;
    if (!out.empty() && out.back().at + static_cast<offset_t>(out.back().len) == at) {
      out.back().len += len;
    } else {
      out.push_back({at, len});
    }
  };
  if (n == 0) return;
  if (contiguous_) {
    add(disp_ + runs_[0].at + static_cast<offset_t>(pos), n);
    return;
  }
  // Room for every piece at once (up to 1 Mi of them): growing a vector of a hundred thousand
  // pieces copies it over and over, into fresh pages each time (a page fault each, a hypervisor
  // exit on some VMs: 12 ms of a 0.12 s write of 1 GiB in 4 KiB pieces).
  const std::uint64_t estimate = (n / tile_bytes_ + 2) * runs_.size();
  out.reserve(out.size() + static_cast<std::size_t>(std::min<std::uint64_t>(estimate, 1U << 20)));
  std::uint64_t tile = pos / tile_bytes_;
  std::uint64_t in_tile = pos % tile_bytes_;
  std::size_t i = static_cast<std::size_t>(
      std::upper_bound(before_.begin(), before_.end(), in_tile) - before_.begin() - 1);
  while (n > 0) {
    const file_piece& r = runs_[i];
    const std::uint64_t within = in_tile - before_[i];
    const std::uint64_t take = std::min<std::uint64_t>(r.len - within, n);
    add(disp_ + static_cast<offset_t>(tile) * tile_extent_ + r.at + static_cast<offset_t>(within),
        take);
    n -= take;
    in_tile += take;
    if (in_tile == before_[i] + r.len && ++i == runs_.size()) {
      i = 0;
      ++tile;
      in_tile = 0;
    }
  }
}

offset_t file_view::byte_of(std::uint64_t pos) const {
  const std::uint64_t tile = pos / tile_bytes_;
  const std::uint64_t in_tile = pos % tile_bytes_;
  const std::size_t i = static_cast<std::size_t>(
      std::upper_bound(before_.begin(), before_.end(), in_tile) - before_.begin() - 1);
  return disp_ + static_cast<offset_t>(tile) * tile_extent_ + runs_[i].at +
         static_cast<offset_t>(in_tile - before_[i]);
}

std::uint64_t file_view::data_before(offset_t b) const {
  const offset_t rel = b - disp_ - runs_.front().at;
  if (rel <= 0) return 0;
  const std::uint64_t tile = static_cast<std::uint64_t>(rel / tile_extent_);
  std::uint64_t data = tile * tile_bytes_;
  const offset_t base = disp_ + static_cast<offset_t>(tile) * tile_extent_;
  for (const file_piece& r : runs_) {
    const offset_t in = std::clamp<offset_t>(b - (base + r.at), 0, static_cast<offset_t>(r.len));
    data += static_cast<std::uint64_t>(in);
  }
  return data;
}

}  // namespace oneside::detail
