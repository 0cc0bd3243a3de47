// dist_array::save / save_async / load and read_array_header: one file per array, a 4096-byte
// header and the elements in global row-major order (docs/file_format.md). Each member sets a
// view of its own elements — nested hindexed types of the datatype engine: its runs of the last
// dimension, copied at each of its indices of the outer dimensions — and moves its block with
// one collective access (write_at_all / write_at_all_begin / read_at_all), so every
// distribution and rank count reads and writes the same file.
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <oneside/pgas/array_file.hpp>
#include <oneside/pgas/dist_array.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/file.hpp>
#include <oneside/runtime/info.hpp>
#include <oneside/runtime/op.hpp>

namespace oneside {
namespace {

using oneside::detail::raise;

// ---- the header (docs/file_format.md) ------------------------------------------------------

constexpr std::size_t header_bytes = 4096;
constexpr char file_magic[8] = {'O', 'S', 'D', 'A', 'R', 'R', 'A', 'Y'};
constexpr std::uint32_t format_version = 1;
constexpr std::uint32_t endian_mark = 0x01020304;
constexpr std::size_t max_dims = 3;
constexpr std::size_t type_name_bytes = 64;
constexpr std::size_t max_metadata = 1024;
// Byte offsets of the fields.
constexpr std::size_t at_magic = 0;
constexpr std::size_t at_version = 8;
constexpr std::size_t at_endian = 12;
constexpr std::size_t at_data_offset = 16;
constexpr std::size_t at_element_size = 24;
constexpr std::size_t at_type_name = 32;
constexpr std::size_t at_rank = 96;
constexpr std::size_t at_ranks = 100;
constexpr std::size_t at_extents = 104;  // 3 x u64
constexpr std::size_t at_kinds = 128;    // 3 x u8 (+ 1 unused)
constexpr std::size_t at_grid = 132;     // 3 x i32
constexpr std::size_t at_blocks = 144;   // 3 x u64 (block_cyclic's block size, else 0)
constexpr std::size_t at_data_bytes = 168;
constexpr std::size_t at_metadata_len = 176;
constexpr std::size_t at_metadata = 184;  // max_metadata bytes
constexpr std::size_t at_checksum = header_bytes - 8;

using header_block = std::array<std::byte, header_bytes>;

template <class V>
void store(header_block& h, std::size_t at, V v) {
  std::memcpy(h.data() + at, &v, sizeof v);
}
template <class V>
V load_field(const header_block& h, std::size_t at) {
  V v{};
  std::memcpy(&v, h.data() + at, sizeof v);
  return v;
}

// FNV-1a over the header before its checksum.
std::uint64_t checksum(const header_block& h) {
  std::uint64_t x = 14695981039346656037ULL;
  for (std::size_t i = 0; i < at_checksum; ++i) {
    x ^= static_cast<std::uint64_t>(h[i]);
    x *= 1099511628211ULL;
  }
  return x;
}

std::uint8_t kind_code(distribution::kind k) {
  switch (k) {
    case distribution::kind::none:
      return 0;
    case distribution::kind::block:
      return 1;
    case distribution::kind::cyclic:
      return 2;
    case distribution::kind::block_cyclic:
      return 3;
  }
  return 0;
}

std::uint64_t product(std::span<const dim_map> dims) {
  std::uint64_t n = 1;
  for (const auto& d : dims) n *= d.extent;
  return n;
}

header_block encode(const pgas::detail::array_io& a, std::string_view metadata) {
  header_block h{};
  std::memcpy(h.data() + at_magic, file_magic, sizeof file_magic);
  store(h, at_version, format_version);
  store(h, at_endian, endian_mark);
  store(h, at_data_offset, static_cast<std::uint64_t>(header_bytes));
  store(h, at_element_size, static_cast<std::uint64_t>(a.element));
  std::memcpy(h.data() + at_type_name, a.type_name.data(),
              std::min(a.type_name.size(), type_name_bytes - 1));
  store(h, at_rank, static_cast<std::uint32_t>(a.dims.size()));
  store(h, at_ranks, static_cast<std::uint32_t>(a.t->size()));
  for (std::size_t d = 0; d < a.dims.size(); ++d) {
    store(h, at_extents + 8 * d, static_cast<std::uint64_t>(a.dims[d].extent));
    store(h, at_kinds + d, kind_code(a.dists[d].how));
    store(h, at_grid + 4 * d, static_cast<std::int32_t>(a.grid[d]));
    store(h, at_blocks + 8 * d, static_cast<std::uint64_t>(a.dists[d].block_size));
  }
  store(h, at_data_bytes, product(a.dims) * a.element);
  store(h, at_metadata_len, static_cast<std::uint32_t>(metadata.size()));
  std::memcpy(h.data() + at_metadata, metadata.data(), metadata.size());
  store(h, at_checksum, checksum(h));
  return h;
}

// Decodes `h` into `out`; returns what is wrong (empty: a valid header).
std::string decode(const header_block& h, array_file_header& out) {
  if (std::memcmp(h.data() + at_magic, file_magic, sizeof file_magic) != 0) {
    return "not a oneside array file (no OSDARRAY magic)";
  }
  if (load_field<std::uint32_t>(h, at_endian) != endian_mark) {
    return "written on a machine of another byte order";
  }
  out.version = load_field<std::uint32_t>(h, at_version);
  if (out.version != format_version) {
    return "format version " + std::to_string(out.version) + " (this build reads version " +
           std::to_string(format_version) + ")";
  }
  if (load_field<std::uint64_t>(h, at_checksum) != checksum(h)) {
    return "its header is corrupt (checksum mismatch)";
  }
  out.data_offset = load_field<std::uint64_t>(h, at_data_offset);
  out.element_size = load_field<std::uint64_t>(h, at_element_size);
  const char* name = reinterpret_cast<const char*>(h.data() + at_type_name);
  out.element_type.assign(name, strnlen(name, type_name_bytes));
  const std::uint32_t n = load_field<std::uint32_t>(h, at_rank);
  if (n < 1 || n > max_dims || out.data_offset < header_bytes || out.element_size == 0) {
    return "its header is inconsistent (rank, element size or data offset)";
  }
  out.ranks = static_cast<int>(load_field<std::uint32_t>(h, at_ranks));
  out.extents.clear();
  out.distributions.clear();
  out.grid.clear();
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < n; ++d) {
    out.extents.push_back(load_field<std::uint64_t>(h, at_extents + 8 * d));
    elements *= out.extents.back();
    static constexpr distribution::kind kinds[4] = {
        distribution::kind::none, distribution::kind::block, distribution::kind::cyclic,
        distribution::kind::block_cyclic};
    const std::uint8_t k = load_field<std::uint8_t>(h, at_kinds + d);
    out.distributions.push_back(
        {kinds[k < 4 ? k : 1], load_field<std::uint64_t>(h, at_blocks + 8 * d)});
    out.grid.push_back(load_field<std::int32_t>(h, at_grid + 4 * d));
  }
  out.data_bytes = load_field<std::uint64_t>(h, at_data_bytes);
  if (out.data_bytes != elements * out.element_size) {
    return "its header is inconsistent (data bytes " + std::to_string(out.data_bytes) + " for " +
           std::to_string(elements) + " elements of " + std::to_string(out.element_size) +
           " bytes)";
  }
  const std::uint32_t meta = load_field<std::uint32_t>(h, at_metadata_len);
  if (meta > max_metadata) return "its header is inconsistent (metadata length)";
  out.metadata.assign(reinterpret_cast<const char*>(h.data() + at_metadata), meta);
  return {};
}

std::string quoted_file(std::string_view path) {
  return "file '" + std::string(path) + "'";
}
std::string quoted_array(std::string_view name) {
  return "array '" + std::string(name) + "'";
}

std::string extents_text(std::span<const std::size_t> e) {
  std::string s;
  for (std::size_t d = 0; d < e.size(); ++d) s += (d == 0 ? "" : " x ") + std::to_string(e[d]);
  return s;
}

// ---- what each member moves -----------------------------------------------------------------

struct member_plan {
  datatype element = datatype::of<std::byte>();   // the view's etype: one element
  datatype filetype = datatype::of<std::byte>();  // this member's elements in the file
  datatype memtype = datatype::of<std::byte>();   // … in its block
  count_t count = 0;                              // of memtype
  std::uint64_t bytes = 0;                        // this member's data bytes
};

member_plan plan_of(const pgas::detail::array_io& a) {
  const std::size_t n = a.dims.size();
  const auto e = static_cast<std::ptrdiff_t>(a.element);
  member_plan p;
  p.element = datatype::contiguous(static_cast<count_t>(a.element), datatype::of<std::byte>());
  // This member's grid coordinates (row-major over the grid) and local extents.
  std::array<std::size_t, max_dims> c{};
  std::array<std::size_t, max_dims> local{};
  auto rest = static_cast<std::size_t>(a.me);
  for (std::size_t d = n; d-- > 0;) {
    c[d] = rest % a.dims[d].procs;
    rest /= a.dims[d].procs;
  }
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < n; ++d) {
    local[d] = a.dims[d].local_extent(c[d]);
    elements *= local[d];
  }
  p.bytes = elements * a.element;
  if (elements == 0) {
    p.filetype = p.element;  // a view is needed for the collective calls; nothing moves
    p.memtype = p.element;
    return p;
  }
  // Element strides of the file's row-major order.
  std::array<std::ptrdiff_t, max_dims> stride{};
  stride[n - 1] = 1;
  for (std::size_t d = n - 1; d-- > 0;) {
    stride[d] = stride[d + 1] * static_cast<std::ptrdiff_t>(a.dims[d + 1].extent);
  }
  // The runs of dimension d this member owns, in global order: blocks of b at (k·P + c)·b.
  auto runs = [&](std::size_t d, auto&& each) {
    const dim_map& m = a.dims[d];
    for (std::size_t k = 0;; ++k) {
      const std::size_t g = (k * m.procs + c[d]) * m.block;
      if (g >= m.extent) break;
      each(g, std::min(m.block, m.extent - g));
    }
  };
  std::vector<count_t> lengths;
  std::vector<std::ptrdiff_t> disps;
  runs(n - 1, [&](std::size_t g, std::size_t len) {
    lengths.push_back(static_cast<count_t>(len));
    disps.push_back(static_cast<std::ptrdiff_t>(g) * e);
  });
  datatype t = datatype::hindexed(lengths, disps, p.element);
  for (std::size_t d = n - 1; d-- > 0;) {
    disps.clear();
    runs(d, [&](std::size_t g, std::size_t len) {
      for (std::size_t i = 0; i < len; ++i) {
        disps.push_back(static_cast<std::ptrdiff_t>(g + i) * stride[d] * e);
      }
    });
    t = datatype::hindexed_block(1, disps, t);
  }
  p.filetype = datatype::resized(t, 0, static_cast<std::ptrdiff_t>(product(a.dims)) * e);
  if (a.halo.empty()) {
    p.memtype = p.element;
    p.count = static_cast<count_t>(elements);
  } else {
    std::vector<count_t> sizes(n), subsizes(n), starts(n);
    for (std::size_t d = 0; d < n; ++d) {
      sizes[d] = static_cast<count_t>(local[d] + 2 * a.halo[d]);
      subsizes[d] = static_cast<count_t>(local[d]);
      starts[d] = static_cast<count_t>(a.halo[d]);
    }
    p.memtype = datatype::subarray(sizes, subsizes, starts, datatype::array_order::c, p.element);
    p.count = 1;
  }
  return p;
}

// Every member learns whether every member's step succeeded. When one failed, `f` is closed
// (collectively) and each member raises: the failed one its own error, the others io.
void agree(const team& t, file& f, const std::exception_ptr& mine, std::string_view call,
           std::string_view path) {
  const int bad = allreduce(t, mine ? 1 : 0, op::max);
  if (bad == 0) return;
  if (f.is_open()) f.close();
  if (mine) std::rethrow_exception(mine);
  raise(error_class::io, {.call = call},
        quoted_file(path) + ": the access failed on another member (see its error)");
}

void check_array(const pgas::detail::array_io& a, std::string_view call) {
  if (!a.valid) raise(error_class::arg, {.call = call}, quoted_array(a.name) + " was moved from");
}

// Opens `path` for writing, empties it and writes the header (member 0). Collective.
// `independent_end`: no collective buffering, so the split collective's end waits only for this
// member's own writes (a save_async future's poll may end it whenever this member's part is done;
// a collective-buffered end agrees on errors with an allreduce, which a poll must not start).
file open_for_save(const pgas::detail::array_io& a, std::string_view path, const save_options& o,
                   std::string_view call, bool independent_end = false) {
  check_array(a, call);
  if (o.metadata.size() > max_metadata) {
    raise(error_class::arg, {.call = call},
          quoted_array(a.name) + ": the metadata holds " + std::to_string(o.metadata.size()) +
              " bytes, more than the header's " + std::to_string(max_metadata));
  }
  info hints;
  if (independent_end) hints.set("collective_buffering", "false");
  file f = file::open(*a.t, path, file_mode::create | file_mode::wronly, hints);
  f.set_size(0);  // an older, longer file leaves nothing behind
  std::exception_ptr failed;
  if (a.t->rank() == 0) {
    try {
      const header_block h = encode(a, o.metadata);
      const io_status st =
          f.write_at(0, h.data(), static_cast<count_t>(h.size()), datatype::of<std::byte>());
      if (st.bytes != static_cast<count_t>(h.size())) {
        raise(error_class::io, {.call = call}, quoted_file(path) + ": the header was cut short");
      }
    } catch (...) {
      failed = std::current_exception();
    }
  }
  agree(*a.t, f, failed, call, path);
  return f;
}

io_status checked_status(io_status st, std::uint64_t bytes, std::string_view call,
                         std::string_view path) {
  if (static_cast<std::uint64_t>(st.bytes) != bytes) {
    raise(error_class::io, {.call = call},
          quoted_file(path) + ": moved " + std::to_string(st.bytes) + " of this member's " +
              std::to_string(bytes) + " bytes");
  }
  return st;
}

// The state of one save_async on one member, kept by its future's poll.
struct async_save {
  file f;
  const void* buf = nullptr;
  std::uint64_t bytes = 0;
  std::thread::id owner;
  std::string path;
};

}  // namespace

namespace pgas::detail {

void save_array(const array_io& a, std::string_view path, const save_options& o) {
  constexpr std::string_view call = "dist_array::save";
  const member_plan p = plan_of(a);
  file f = open_for_save(a, path, o, call);
  f.set_view(static_cast<offset_t>(header_bytes), p.element, p.filetype);
  std::exception_ptr failed;
  try {
    checked_status(f.write_at_all(0, a.block, p.count, p.memtype), p.bytes, call, path);
  } catch (...) {
    failed = std::current_exception();
  }
  agree(*a.t, f, failed, call, path);
  if (o.sync) f.sync();
  f.close();  // a barrier: every member's part is written
}

future<> save_array_async(const array_io& a, std::string_view path, const save_options& o) {
  constexpr std::string_view call = "dist_array::save_async";
  if (o.sync) {
    raise(error_class::arg, {.call = call},
          quoted_array(a.name) +
              ": save_options::sync is for save(); sync the file after the "
              "futures are ready");
  }
  const member_plan p = plan_of(a);
  file f = open_for_save(a, path, o, call, /*independent_end=*/true);
  f.set_view(static_cast<offset_t>(header_bytes), p.element, p.filetype);
  std::exception_ptr failed;
  try {
    f.write_at_all_begin(0, a.block, p.count, p.memtype);
  } catch (...) {
    failed = std::current_exception();
  }
  if (allreduce(*a.t, failed ? 1 : 0, op::max) != 0) {
    if (!failed) (void)f.write_at_all_end(a.block);  // the others' begin was rejected
    agree(*a.t, f, failed, call, path);
  }
  auto s = std::make_shared<async_save>();
  s->f = std::move(f);
  s->buf = a.block;
  s->bytes = p.bytes;
  s->owner = std::this_thread::get_id();
  s->path = std::string(path);
  return make_pending_future([s]() -> bool {
    // The end belongs to the thread of the begin (IO-12); others only look.
    if (std::this_thread::get_id() != s->owner || !s->f.split_test()) return false;
    file done = std::move(s->f);  // released (not a collective close) on every path
    checked_status(done.write_at_all_end(s->buf), s->bytes, "dist_array::save_async", s->path);
    return true;
  });
}

void load_array(const array_io& a, std::string_view path) {
  constexpr std::string_view call = "dist_array::load";
  check_array(a, call);
  const member_plan p = plan_of(a);
  file f = file::open(*a.t, path, file_mode::rdonly);
  // Member 0 reads the header and the size; every member judges the same bytes.
  header_block h{};
  std::int64_t got[2] = {0, 0};  // header bytes read (-1: failed), the file's size
  std::string read_error;
  if (a.t->rank() == 0) {
    try {
      got[0] =
          f.read_at(0, h.data(), static_cast<count_t>(h.size()), datatype::of<std::byte>()).bytes;
      got[1] = f.get_size();
    } catch (const std::exception& e) {
      got[0] = -1;
      read_error = e.what();
    }
  }
  broadcast(*a.t, got, 2, datatype::of<std::int64_t>(), 0);
  broadcast(*a.t, h.data(), static_cast<count_t>(h.size()), datatype::of<std::byte>(), 0);
  array_file_header head;
  error_class ec = error_class::io;
  std::string problem;
  if (got[0] < 0) {
    problem = "cannot read its header" + (read_error.empty() ? "" : ": " + read_error);
  } else if (got[0] < static_cast<std::int64_t>(header_bytes)) {
    problem = "not a oneside array file (" + std::to_string(got[0]) +
              " bytes, shorter than a "
              "header)";
  } else {
    problem = decode(h, head);
  }
  if (problem.empty()) {
    const std::uint64_t need = head.data_offset + head.data_bytes;
    std::vector<std::size_t> mine(a.dims.size());
    for (std::size_t d = 0; d < a.dims.size(); ++d) mine[d] = a.dims[d].extent;
    if (head.element_type != a.type_name || head.element_size != a.element) {
      ec = error_class::type;
      problem = "holds elements of type " + head.element_type + " (" +
                std::to_string(head.element_size) + " bytes), the array's are " +
                std::string(a.type_name) + " (" + std::to_string(a.element) + " bytes)";
    } else if (head.extents != mine) {
      ec = error_class::arg;
      problem = "holds a " + std::to_string(head.extents.size()) + "-d array of " +
                extents_text(head.extents) + " elements, the array is " +
                std::to_string(mine.size()) + "-d of " + extents_text(mine);
    } else if (static_cast<std::uint64_t>(got[1]) < need) {
      problem = "is truncated: it holds " + std::to_string(got[1]) + " bytes, its header says " +
                std::to_string(need);
    }
  }
  if (!problem.empty()) {
    f.close();
    raise(ec, {.call = call},
          quoted_file(path) + " does not load into " + quoted_array(a.name) + ": it " + problem);
  }
  f.set_view(static_cast<offset_t>(head.data_offset), p.element, p.filetype);
  std::exception_ptr failed;
  try {
    checked_status(f.read_at_all(0, a.block, p.count, p.memtype), p.bytes, call, path);
  } catch (...) {
    failed = std::current_exception();
  }
  agree(*a.t, f, failed, call, path);
  f.close();
}

}  // namespace pgas::detail

array_file_header read_array_header(std::string_view path) {
  constexpr std::string_view call = "read_array_header";
  const std::string p(path);
  if (p.empty()) raise(error_class::bad_file, {.call = call}, "the path is empty");
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const error_class ec = err == ENOENT || err == ENOTDIR ? error_class::no_such_file
                           : err == EACCES || err == EPERM ? error_class::access
                                                           : error_class::io;
    raise(ec, {.call = call}, quoted_file(path) + ": cannot open: " + std::strerror(err));
  }
  header_block h{};
  std::size_t got = 0;
  int err = 0;
  while (got < h.size()) {
    const ssize_t n = ::pread(fd, h.data() + got, h.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  struct stat st {};
  if (err == 0 && ::fstat(fd, &st) != 0) err = errno;
  ::close(fd);
  if (err != 0) {
    raise(error_class::io, {.call = call}, quoted_file(path) + ": " + std::strerror(err));
  }
  array_file_header head;
  std::string problem =
      got < h.size() ? "not a oneside array file (shorter than a header)" : decode(h, head);
  if (problem.empty() &&
      static_cast<std::uint64_t>(st.st_size) < head.data_offset + head.data_bytes) {
    problem = "truncated: it holds " + std::to_string(st.st_size) + " bytes, its header says " +
              std::to_string(head.data_offset + head.data_bytes);
  }
  if (!problem.empty()) raise(error_class::io, {.call = call}, quoted_file(path) + ": " + problem);
  return head;
}

}  // namespace oneside
