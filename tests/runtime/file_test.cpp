// oneside::file against a serial model of the file: every access form (explicit offset,
// individual and shared pointer; blocking, nonblocking, collective, split collective) with
// random views and datatypes, file contents compared byte by byte; every rule IO-1 … IO-17 of
// the checklist with its ID; the erroneous programs the rules name, and bad input (missing
// files, permissions, bad modes and views), each raising its error and changing nothing.
// Files live in a per-test temporary directory that member 0 removes afterwards.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <linux/io_uring.h>
#include <poll.h>
#include <random>
#include <set>
#include <signal.h>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "context/context.hpp"
#include "expect_error.hpp"
#include "file_test_dir.hpp"
#include "io/file_impl.hpp"
#include "rank_test.hpp"
#include "runtime/settings.hpp"
#include "topology/index_list.hpp"

namespace oneside::test {
namespace {

using bytes = std::vector<std::byte>;

class File : public FileTestDir {
 protected:
  File() : FileTestDir("oneside-file") {}
};

// The whole file as bytes (empty when it does not exist).
bytes contents(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes out(c.size());
  if (!c.empty())
    std::memcpy(out.data(), c.data(), c.size());  // an empty vector's data() may be null
  return out;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

void put_file(const std::string& p, const bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::byte tag(int r, std::size_t i) {
  return static_cast<std::byte>((r * 37 + static_cast<int>(i) * 11 + 1) & 0xff);
}

const datatype& byte_t() {
  return datatype::of<std::byte>();
}
const datatype& int_t() {
  return datatype::of<int>();
}

constexpr file_mode rw_create = file_mode::rdwr | file_mode::create;

// ---- the serial model of a view ---------------------------------------------------------

// One member's view as the test builds it: tiles of `extent` bytes from `disp`, the member's
// data in `blocks` (byte offset in the tile, length), in order.
struct model_view {
  offset_t disp = 0;
  std::size_t es = 1;
  std::ptrdiff_t extent = 1;
  std::vector<std::pair<std::ptrdiff_t, std::size_t>> blocks{{0, 1}};

  std::size_t tile_bytes() const {
    std::size_t n = 0;
    for (auto& b : blocks) n += b.second;
    return n;
  }
  // File byte of data byte p.
  offset_t byte_of(std::size_t p) const {
    const std::size_t t = p / tile_bytes();
    std::size_t q = p % tile_bytes();
    for (auto& b : blocks) {
      if (q < b.second) {
        return disp + static_cast<offset_t>(t) * extent + b.first + static_cast<offset_t>(q);
      }
      q -= b.second;
    }
    return -1;
  }
};

// Writes `data` at view position `pos` (etypes) of `v` into the model file.
void model_write(bytes& file, const model_view& v, offset_t pos, const bytes& data) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto at = static_cast<std::size_t>(v.byte_of(static_cast<std::size_t>(pos) * v.es + i));
    if (file.size() <= at) file.resize(at + 1);
    file[at] = data[i];
  }
}

// What a read of n data bytes at `pos` gets from the model file: the bytes up to the first one
// past the end.
bytes model_read(const bytes& file, const model_view& v, offset_t pos, std::size_t n) {
  bytes out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(v.byte_of(static_cast<std::size_t>(pos) * v.es + i));
    if (at >= file.size()) break;
    out.push_back(file[at]);
  }
  return out;
}

// The memory side: `count` elements of vector(2, 1, 2, etype): two etypes with an etype-sized
// hole between them; packed data byte i lives at mem_offset(i).
std::size_t mem_offset(std::size_t i, std::size_t es) {
  const std::size_t e = i / es;  // etype index in the packed stream
  const std::size_t element = e / 2;
  const std::size_t in_element = e % 2;
  return element * 3 * es + in_element * 2 * es + i % es;
}

// ---- management ---------------------------------------------------------------------------

TEST_F(File, OpenChecksModesAndReportsMissingOrExistingFiles) {
  covers("IO-17");
  const std::string p = path("a");
  expect_error(error_class::no_such_file, "file::open",
               [&] { (void)file::open(world(), p, file_mode::rdonly); });
  EXPECT_FALSE(exists(p)) << "a failed open created the file";
  expect_error(error_class::amode, "file::open",
               [&] { (void)file::open(world(), p, file_mode::rdonly | file_mode::create); });
  expect_error(error_class::amode, "file::open",
               [&] { (void)file::open(world(), p, file_mode::rdwr | file_mode::wronly); });
  expect_error(error_class::amode, "file::open",
               [&] { (void)file::open(world(), p, file_mode::create); });
  expect_error(error_class::amode, "file::open",
               [&] { (void)file::open(world(), p, file_mode::rdwr | file_mode::excl); });
  expect_error(error_class::bad_file, "file::open",
               [&] { (void)file::open(world(), "", rw_create); });
  EXPECT_FALSE(exists(p)) << "a rejected open created the file";

  file f = file::open(world(), p, rw_create | file_mode::excl);
  EXPECT_TRUE(f.is_open());
  EXPECT_EQ(f.amode(), rw_create | file_mode::excl);
  EXPECT_EQ(f.team(), world());
  EXPECT_EQ(f.get_size(), 0);
  EXPECT_EQ(f.error_handler(), file::errors::throws) << "files return errors by default (IO-17)";
  f.close();
  EXPECT_FALSE(f.is_open());
  expect_error(error_class::file, "file", [&] { (void)f.get_size(); });
  expect_error(error_class::file_exists, "file::open",
               [&] { (void)file::open(world(), p, rw_create | file_mode::excl); });

  if (size() > 1) {  // every member must pass the same mode
    const file_mode m = rank() == 0 ? file_mode::rdwr : file_mode::rdonly;
    expect_error(error_class::not_same, "file::open", [&] { (void)file::open(world(), p, m); });
  }
  barrier(world());
  if (rank() == 0) file::remove(p);
  barrier(world());
  EXPECT_FALSE(exists(p));
  expect_error(error_class::no_such_file, "file::remove", [&] { file::remove(p); });
  expect_error(error_class::bad_file, "file::remove", [&] { file::remove(""); });
}

// Member 0 holds the shared file pointer's word; when it cannot allocate it (forced here by a
// test hook, as a heap at its cap would), every member's open fails with member 0's class
// instead of the others waiting for a word that never comes, and the file it created is gone.
TEST_F(File, OpenFailsEverywhereWhenMemberZeroCannotHoldTheSharedPointer) {
  const std::string p = path("no-shared-word");
  if (rank() == 0) detail::fail_shared_pointer_for_testing = true;
  std::string message;
  expect_error(error_class::no_mem, "file::open", [&] {
    try {
      (void)file::open(world(), p, rw_create);
    } catch (const oneside::error& e) {
      message = e.what();
      throw;
    }
  });
  EXPECT_NE(message.find("member 0 cannot allocate the shared file pointer"), std::string::npos)
      << message;
  EXPECT_NE(message.find(p), std::string::npos) << "the message names the file: " << message;
  EXPECT_FALSE(detail::fail_shared_pointer_for_testing.load()) << "the hook fired once";
  barrier(world());
  EXPECT_FALSE(exists(p)) << "the failed open left the file it created";
  // The team is in step afterwards: the next open works everywhere.
  file f = file::open(world(), p, rw_create);
  EXPECT_TRUE(f.is_open());
  f.close();
}

TEST_F(File, PermissionsAreCheckedAndNothingIsWritten) {
  ONESIDE_SKIP_UNLESS_ALL(::geteuid() != 0, "root ignores file permissions");
  const std::string p = path("locked");
  if (rank() == 0) {
    put_file(p, bytes(16, std::byte{7}));
    ::chmod(p.c_str(), 0400);
  }
  barrier(world());
  expect_error(error_class::access, "file::open",
               [&] { (void)file::open(world(), p, file_mode::rdwr); });
  file f = file::open(world(), p, file_mode::rdonly);
  int x = 1;
  expect_error(error_class::read_only, "file::write_at",
               [&] { (void)f.write_at(0, &x, 1, int_t()); });
  expect_error(error_class::read_only, "file::set_size", [&] { f.set_size(0); });
  f.close();
  EXPECT_EQ(contents(p), bytes(16, std::byte{7}));
}

TEST_F(File, AccessModesLimitWhatTheHandleDoes) {
  const std::string p = path("modes");
  if (rank() == 0) put_file(p, bytes(32, std::byte{9}));
  barrier(world());
  {
    file f = file::open(world(), p, file_mode::rdonly);
    std::byte b[4];
    expect_error(error_class::read_only, "file::write", [&] { (void)f.write(b, 4, byte_t()); });
    expect_error(error_class::read_only, "file::write_all_begin",
                 [&] { f.write_all_begin(b, 4, byte_t()); });
    EXPECT_EQ(f.get_position(), 0) << "a rejected write moved the pointer";
    EXPECT_EQ(f.read(b, 4, byte_t()).bytes, 4);
    f.close();
  }
  {
    file f = file::open(world(), p, file_mode::wronly);
    std::byte b[4];
    expect_error(error_class::access, "file::read_at", [&] { (void)f.read_at(0, b, 4, byte_t()); });
    f.close();
  }
  EXPECT_EQ(contents(p), bytes(32, std::byte{9}));
  {
    // append: every pointer starts at the end.
    file f = file::open(world(), p, file_mode::wronly | file_mode::append);
    EXPECT_EQ(f.get_position(), 32);
    EXPECT_EQ(f.get_position_shared(), 32);
    f.close();
  }
  {
    file f = file::open(world(), path("tmp"), rw_create | file_mode::delete_on_close);
    EXPECT_TRUE(exists(path("tmp")));
    f.close();
    EXPECT_FALSE(exists(path("tmp"))) << "delete_on_close kept the file";
  }
  file null;
  expect_error(error_class::file, "file", [&] { (void)null.get_position(); });
}

TEST_F(File, SizePreallocateSyncAtomicityAndHints) {
  const std::string p = path("size");
  info hints{{"cb_nodes", "2"},
             {"cb_buffer_size", "huge"},
             {"collective_buffering", "true"},
             {"striping_unit", "65536"},
             {"my_key", "x"}};
  file f = file::open(world(), p, rw_create, hints);
  const info got = f.get_info();
  EXPECT_EQ(got.get("cb_nodes"), "2");
  EXPECT_EQ(got.get("striping_unit"), "65536");
  EXPECT_EQ(got.get("collective_buffering"), "true");
  EXPECT_FALSE(got.contains("cb_buffer_size")) << "a bad value of a known hint is ignored";
  EXPECT_EQ(got.get("my_key"), "x");

  f.set_size(100);
  EXPECT_EQ(f.get_size(), 100);
  barrier(world());
  EXPECT_EQ(contents(p), bytes(100, std::byte{0}));
  barrier(world());
  f.set_size(10);
  EXPECT_EQ(f.get_size(), 10);
  expect_error(error_class::arg, "file::set_size", [&] { f.set_size(-1); });
  EXPECT_EQ(f.get_size(), 10) << "a rejected set_size changed the size";
  f.preallocate(4096);
  EXPECT_GE(f.get_size(), 4096);
  f.sync();
  EXPECT_FALSE(f.get_atomicity());
  f.set_atomicity(true);
  EXPECT_TRUE(f.get_atomicity());
  if (size() > 1) {
    expect_error(error_class::not_same, "file::set_atomicity",
                 [&] { f.set_atomicity(rank() == 0); });
    EXPECT_TRUE(f.get_atomicity());
  }
  f.close();
}

// ---- views and bad input ------------------------------------------------------------------

TEST_F(File, BadViewsAndArgumentsAreRejectedAndChangeNothing) {
  const std::string p = path("bad");
  file f = file::open(world(), p, rw_create);
  f.set_view(8, int_t(), int_t());
  f.seek(3);
  const datatype three_bytes = datatype::contiguous(3, byte_t());
  // A filetype that is not a whole number of etypes.
  expect_error(error_class::type, "file::set_view", [&] { f.set_view(0, int_t(), three_bytes); });
  // Data at decreasing displacements.
  const count_t bl[] = {1, 1};
  const count_t down[] = {4, 0};
  expect_error(error_class::type, "file::set_view",
               [&] { f.set_view(0, int_t(), datatype::indexed(bl, down, int_t())); });
  expect_error(error_class::arg, "file::set_view", [&] { f.set_view(-4, int_t(), int_t()); });
  expect_error(error_class::unsupported_datarep, "file::set_view",
               [&] { f.set_view(0, int_t(), int_t(), "external32"); });
  EXPECT_EQ(f.view_disp(), 8) << "a rejected set_view changed the view";
  EXPECT_EQ(f.view_etype(), int_t());
  EXPECT_EQ(f.get_position(), 3) << "a rejected set_view moved the pointer";
  if (size() > 1) {  // one member's rejection leaves every member's view as it was
    const datatype ft = rank() == 0 ? three_bytes : int_t();
    const error_class want = rank() == 0 ? error_class::type : error_class::io;
    expect_error(want, "file::set_view", [&] { f.set_view(0, int_t(), ft); });
    EXPECT_EQ(f.view_disp(), 8);
  }
  int v[4] = {1, 2, 3, 4};
  expect_error(error_class::count, "file::write", [&] { (void)f.write(v, -1, int_t()); });
  expect_error(error_class::arg, "file::write_at", [&] { (void)f.write_at(-1, v, 1, int_t()); });
  expect_error(error_class::type, "file::write", [&] { (void)f.write(v, 1, three_bytes); });
  expect_error(error_class::arg, "file::write", [&] { (void)f.write(nullptr, 1, int_t()); });
  expect_error(error_class::arg, "file::seek", [&] { f.seek(-4); });
  expect_error(error_class::type, "file::write_all_begin",
               [&] { f.write_all_begin(v, 1, three_bytes); });
  EXPECT_EQ(f.get_position(), 3) << "a rejected access moved the pointer";
  barrier(world());
  EXPECT_EQ(f.get_size(), 0) << "a rejected access wrote";
  barrier(world());
  // A rejected begin leaves no split collective active.
  f.write_all_begin(v, 1, int_t());
  EXPECT_EQ(f.write_all_end(v).count, 1);
  f.close();
}

TEST_F(File, ByteOffsetsAndPositionsFollowTheView) {
  const std::string p = path("offsets");
  file f = file::open(world(), p, rw_create);
  // Blocks of 2 ints every 5 ints, from byte 12.
  const datatype ft = datatype::resized(datatype::contiguous(2, int_t()), 0, 20);
  f.set_view(12, int_t(), ft);
  EXPECT_EQ(f.get_byte_offset(0), 12);
  EXPECT_EQ(f.get_byte_offset(1), 16);
  EXPECT_EQ(f.get_byte_offset(2), 32);
  EXPECT_EQ(f.get_byte_offset(5), 56);
  f.set_size(12 + 20 + 4);  // ends inside the second tile's first int: 3 ints before the end
  f.seek(0, seek_from::end);
  EXPECT_EQ(f.get_position(), 3);
  f.seek(-1, seek_from::current);
  EXPECT_EQ(f.get_position(), 2);
  f.seek_shared(4);
  EXPECT_EQ(f.get_position_shared(), 4);
  f.seek_shared(1, seek_from::current);
  EXPECT_EQ(f.get_position_shared(), 5);
  f.seek_shared(0, seek_from::end);
  EXPECT_EQ(f.get_position_shared(), 3);
  // Offsets are 64-bit (IO-16's part that fits a test disk): a sparse file past 4 GiB.
  f.set_view(0, byte_t(), byte_t());
  const offset_t far = (offset_t{5} << 30) + 3;
  if (rank() == 0) {
    const int x = 0x5a5a5a5a;
    EXPECT_EQ(f.write_at(far, &x, 1, int_t()).bytes, 4);
  }
  f.sync();
  barrier(world());
  EXPECT_EQ(f.get_size(), far + 4);
  int y = 0;
  EXPECT_EQ(f.read_at(far, &y, 1, int_t()).count, 1);
  EXPECT_EQ(y, 0x5a5a5a5a);
  f.close();
}

TEST_F(File, ReadmeExample) {
  covers("IO-1", "IO-14");
  const std::string name = path("checkpoint.bin");
  // readme:file begin
  const oneside::team& world = oneside::world();
  std::vector<double> block(1000, world.rank());  // this rank's part of the data
  auto mode = oneside::file_mode::create | oneside::file_mode::rdwr;
  oneside::file f = oneside::file::open(world, name, mode);
  const oneside::datatype& dbl = oneside::datatype::of<double>();
  f.set_view(world.rank() * 8000, dbl, dbl);   // a view of this rank's 8000 bytes
  f.write_all_begin(block.data(), 1000, dbl);  // starts the write and returns
  // … compute here while the file's I/O thread writes …
  oneside::io_status st = f.write_all_end(block.data());  // st.count == 1000
  f.close();
  // readme:file end
  EXPECT_EQ(st.count, 1000);
  barrier(world);
  const bytes all = contents(name);
  ASSERT_EQ(all.size(), 1000 * sizeof(double) * static_cast<std::size_t>(size()));
  std::vector<double> got(1000);
  std::memcpy(got.data(), all.data() + 1000 * sizeof(double) * static_cast<std::size_t>(rank()),
              1000 * sizeof(double));
  EXPECT_EQ(got, block);
}

// ---- every access form against the model ------------------------------------------------

enum class form {
  write_at,
  write,
  write_at_all,
  write_all,
  iwrite_at,
  iwrite,
  wat_split,
  wall_split
};
constexpr int form_count = 8;

TEST_F(File, RandomViewsAndDatatypesMatchTheSerialModel) {
  covers("IO-1", "IO-4", "IO-13");
  const std::string p = path("model");
  std::mt19937 rng(1234);  // the same stream on every rank: collective choices agree
  const datatype etypes[] = {byte_t(), datatype::of<std::int16_t>(), int_t(),
                             datatype::of<double>(),
                             datatype::contiguous(3, datatype::of<std::int16_t>())};
  // The I/O thread's engine alternates (ONESIDE_IO_ENGINE's threads and uring).
  struct engine_reset {
    ~engine_reset() { detail::io_engine_for_testing = 0; }
  } reset_engine;
  for (int iter = 0; iter < 48; ++iter) {
    detail::io_engine_for_testing = 1 + iter % 2;
    const datatype& et = etypes[rng() % 5];
    const std::size_t es = et.size();
    // Tiles: nb blocks; block i is (size() × bl[i]) etypes, member r holding the r-th slice.
    const std::size_t nb = 1 + rng() % 3;
    std::vector<std::size_t> bl(nb);
    for (auto& b : bl) b = 1 + rng() % 3;
    const std::size_t trailing = rng() % 3;  // etypes of hole at the end of the tile
    model_view views[16];
    std::ptrdiff_t pos = 0;
    for (int r = 0; r < size(); ++r) views[r].blocks.clear();
    for (std::size_t i = 0; i < nb; ++i) {
      for (int r = 0; r < size(); ++r) {
        views[r].blocks.push_back({pos, bl[i] * es});
        pos += static_cast<std::ptrdiff_t>(bl[i] * es);
      }
    }
    const std::ptrdiff_t extent = pos + static_cast<std::ptrdiff_t>(trailing * es);
    const offset_t disp = static_cast<offset_t>(rng() % 20);
    for (int r = 0; r < size(); ++r) {
      views[r].disp = disp;
      views[r].es = es;
      views[r].extent = extent;
    }
    const model_view& mine = views[rank()];
    std::vector<count_t> lens;
    std::vector<std::ptrdiff_t> displs;
    for (auto& b : mine.blocks) {
      lens.push_back(static_cast<count_t>(b.second / es));
      displs.push_back(b.first);
    }
    const datatype ft = datatype::resized(datatype::hindexed(lens, displs, et), 0, extent);
    const datatype mt = datatype::vector(2, 1, 2, et);  // two etypes, one hole

    const form how = static_cast<form>(rng() % form_count);
    const offset_t at = static_cast<offset_t>(rng() % 4);
    std::vector<count_t> counts(static_cast<std::size_t>(size()));
    for (auto& c : counts) c = static_cast<count_t>(rng() % 5);
    const count_t count = counts[static_cast<std::size_t>(rank())];

    // Half the iterations go through collective buffering, with the default aggregators or
    // cb_nodes of them, domains on stripe boundaries or not, and half of those with buffers
    // of a few bytes: many rounds through both halves, the write's buffer reused by the read.
    // A quarter turn it off, a quarter leave it to the views (on when they interleave).
    info hints;
    const unsigned cb = rng() % 4;
    if (cb >= 2) hints.set("collective_buffering", "true");
    if (cb == 0) hints.set("collective_buffering", "false");
    if (cb == 3) hints.set("cb_nodes", std::to_string(1 + rng() % static_cast<unsigned>(size())));
    if (rng() % 2 == 0) hints.set("striping_unit", std::to_string(1 + rng() % 64));
    if (cb >= 2 && rng() % 2 == 0) hints.set("cb_buffer_size", std::to_string(1 + rng() % 48));
    file f = file::open(world(), p, rw_create, hints);
    f.set_size(0);
    f.set_view(disp, et, ft);
    f.seek(at);
    // This member's data, packed and in memory.
    const std::size_t n = static_cast<std::size_t>(count) * 2 * es;
    bytes data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = tag(rank() + iter, i);
    bytes mem(static_cast<std::size_t>(count) * 3 * es + 1, std::byte{0xEE});
    for (std::size_t i = 0; i < n; ++i) mem[mem_offset(i, es)] = data[i];

    io_status st;
    switch (how) {
      case form::write_at:
        st = f.write_at(at, mem.data(), count, mt);
        break;
      case form::write:
        st = f.write(mem.data(), count, mt);
        break;
      case form::write_at_all:
        st = f.write_at_all(at, mem.data(), count, mt);
        break;
      case form::write_all:
        st = f.write_all(mem.data(), count, mt);
        break;
      case form::iwrite_at:
        st = f.iwrite_at(at, mem.data(), count, mt).wait();
        break;
      case form::iwrite: {
        file_request r = f.iwrite(mem.data(), count, mt);
        st = r.wait();
        EXPECT_TRUE(r.test());
        break;
      }
      case form::wat_split:
        f.write_at_all_begin(at, mem.data(), count, mt);
        EXPECT_EQ(f.get_position(), at) << "write_at_all moved the pointer (IO-4)";
        st = f.write_at_all_end(mem.data());
        break;
      case form::wall_split:
        f.write_all_begin(mem.data(), count, mt);
        EXPECT_EQ(f.get_position(), at + 2 * count) << "the pointer moves at begin (IO-13)";
        st = f.write_all_end(mem.data());
        break;
    }
    EXPECT_EQ(st.bytes, static_cast<count_t>(n)) << "iteration " << iter;
    EXPECT_EQ(st.count, count);
    const bool moves = how == form::write || how == form::write_all || how == form::iwrite ||
                       how == form::wall_split;
    EXPECT_EQ(f.get_position(), at + (moves ? 2 * count : 0)) << "iteration " << iter;
    f.sync();
    barrier(world());
    f.sync();

    // The model: every member's data at its view's positions.
    bytes model;
    for (int r = 0; r < size(); ++r) {
      const std::size_t nr = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]) * 2 * es;
      bytes dr(nr);
      for (std::size_t i = 0; i < nr; ++i) dr[i] = tag(r + iter, i);
      model_write(model, views[r], at, dr);
    }
    if (rank() == 0) {
      const bytes got = contents(p);
      EXPECT_EQ(got.size(), model.size()) << "iteration " << iter;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < std::min(got.size(), model.size()); ++i)
        bad += got[i] != model[i];
      EXPECT_EQ(bad, 0U) << "iteration " << iter << ": bytes differ from the model";
    }

    // Read back with another member's view and a longer count (reads past the end stop early).
    const int other = (rank() + 1) % size();
    const count_t rc = counts[static_cast<std::size_t>(other)] + 2;
    std::vector<count_t> olens;
    std::vector<std::ptrdiff_t> odispls;
    for (auto& b : views[other].blocks) {
      olens.push_back(static_cast<count_t>(b.second / es));
      odispls.push_back(b.first);
    }
    // Changing views is collective: every member takes its neighbour's.
    f.set_view(disp, et, datatype::resized(datatype::hindexed(olens, odispls, et), 0, extent));
    bytes back(static_cast<std::size_t>(rc) * 3 * es + 1, std::byte{0xAB});
    const int read_form = static_cast<int>(rng() % 6);
    f.seek(at);
    switch (read_form) {
      case 0:
        st = f.read_at(at, back.data(), rc, mt);
        break;
      case 1:
        st = f.read(back.data(), rc, mt);
        break;
      case 2:
        st = f.read_at_all(at, back.data(), rc, mt);
        break;
      case 3:
        f.read_all_begin(back.data(), rc, mt);
        st = f.read_all_end(back.data());
        break;
      case 4:
        f.read_at_all_begin(at, back.data(), rc, mt);
        st = f.read_at_all_end(back.data());
        break;
      default:
        st = f.iread(back.data(), rc, mt).wait();
        break;
    }
    const bytes want = model_read(model, views[other], at, static_cast<std::size_t>(rc) * 2 * es);
    EXPECT_EQ(st.bytes, static_cast<count_t>(want.size())) << "iteration " << iter;
    EXPECT_EQ(st.count, static_cast<count_t>(want.size() / (2 * es)));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) bad += back[mem_offset(i, es)] != want[i];
    // Holes of the memory type and bytes past what was read are untouched.
    for (std::size_t e = 0; e < static_cast<std::size_t>(rc); ++e) {
      for (std::size_t b = 0; b < es; ++b) bad += back[e * 3 * es + es + b] != std::byte{0xAB};
    }
    for (std::size_t i = want.size(); i < static_cast<std::size_t>(rc) * 2 * es; ++i) {
      bad += back[mem_offset(i, es)] != std::byte{0xAB};
    }
    EXPECT_EQ(bad, 0U) << "iteration " << iter << " (read form " << read_form << ")";
    f.close();
  }
}

// ---- the shared file pointer ------------------------------------------------------------

TEST_F(File, SharedPointerGivesEveryAccessItsOwnRegion) {
  const std::string p = path("shared");
  file f = file::open(world(), p, rw_create);
  constexpr std::size_t chunk = 8;
  constexpr int per_rank = 6;
  for (int i = 0; i < per_rank; ++i) {
    bytes c(chunk);
    c[0] = static_cast<std::byte>(rank());
    c[1] = static_cast<std::byte>(i);
    for (std::size_t k = 2; k < chunk; ++k) c[k] = tag(rank(), static_cast<std::size_t>(i));
    if (i % 2 == 0) {
      EXPECT_EQ(f.write_shared(c.data(), chunk, byte_t()).bytes, static_cast<count_t>(chunk));
    } else {
      EXPECT_EQ(f.iwrite_shared(c.data(), chunk, byte_t()).wait().bytes,
                static_cast<count_t>(chunk));
    }
  }
  f.sync();
  barrier(world());
  f.sync();
  const auto total = static_cast<offset_t>(chunk) * per_rank * size();
  EXPECT_EQ(f.get_position_shared(), total);
  EXPECT_EQ(f.get_size(), total);
  const bytes all = contents(p);
  std::set<std::pair<int, int>> seen;
  for (std::size_t at = 0; at + chunk <= all.size(); at += chunk) {
    const int r = static_cast<int>(all[at]);
    const int i = static_cast<int>(all[at + 1]);
    bool intact = true;
    for (std::size_t k = 2; k < chunk; ++k) {
      intact = intact && all[at + k] == tag(r, static_cast<std::size_t>(i));
    }
    EXPECT_TRUE(intact) << "chunk at " << at << " was torn";
    EXPECT_TRUE(seen.insert({r, i}).second) << "chunk (" << r << ", " << i << ") twice";
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(per_rank * size()));
  // Reading through the shared pointer hands each chunk to exactly one member.
  f.seek_shared(0);
  EXPECT_EQ(f.get_position_shared(), 0);
  barrier(world());  // every member saw 0 before any reads
  std::vector<int> got;
  for (int i = 0; i < per_rank; ++i) {
    bytes c(chunk);
    const io_status st = i % 2 == 0 ? f.read_shared(c.data(), chunk, byte_t())
                                    : f.iread_shared(c.data(), chunk, byte_t()).wait();
    EXPECT_EQ(st.bytes, static_cast<count_t>(chunk));
    got.push_back(static_cast<int>(c[0]) * 256 + static_cast<int>(c[1]));
  }
  std::vector<int> everyone(got.size() * static_cast<std::size_t>(size()));
  allgather(world(), got.data(), static_cast<count_t>(got.size()), int_t(), everyone.data());
  std::sort(everyone.begin(), everyone.end());
  EXPECT_EQ(std::adjacent_find(everyone.begin(), everyone.end()), everyone.end())
      << "a chunk was read twice";
  // Past the end: nothing more to read.
  barrier(world());
  bytes c(chunk);
  EXPECT_EQ(f.read_shared(c.data(), chunk, byte_t()).bytes, 0);
  f.close();
}

TEST_F(File, OrderedFormsPlaceMembersInRankOrder) {
  covers("IO-1", "IO-13");
  const std::string p = path("ordered");
  file f = file::open(world(), p, rw_create);
  f.set_view(0, int_t(), int_t());
  std::vector<int> mine(static_cast<std::size_t>(rank() + 1), rank());
  f.write_ordered_begin(mine.data(), rank() + 1, int_t());
  const offset_t total = static_cast<offset_t>(size()) * (size() + 1) / 2;
  EXPECT_EQ(f.get_position_shared(), total) << "the shared pointer moves at begin (IO-13)";
  EXPECT_EQ(f.write_ordered_end(mine.data()).count, rank() + 1);
  // After the ordered part, each member writes its rank through its individual pointer.
  f.seek(total + rank());
  f.write_all_begin(mine.data(), 1, int_t());
  EXPECT_EQ(f.get_position(), total + rank() + 1)
      << "the individual pointer moves at begin (IO-13)";
  EXPECT_EQ(f.write_all_end(mine.data()).count, 1);
  f.sync();
  barrier(world());
  f.sync();
  std::vector<int> want;
  for (int r = 0; r < size(); ++r) want.insert(want.end(), static_cast<std::size_t>(r + 1), r);
  for (int r = 0; r < size(); ++r) want.push_back(r);
  std::vector<int> all(want.size(), -1);
  EXPECT_EQ(f.read_at(0, all.data(), static_cast<count_t>(all.size()), int_t()).count,
            static_cast<count_t>(want.size()));
  EXPECT_EQ(all, want);
  // Read them back in order: each member gets its own.
  f.seek_shared(0);
  std::vector<int> back(static_cast<std::size_t>(rank() + 1), -1);
  f.read_ordered_begin(back.data(), rank() + 1, int_t());
  EXPECT_EQ(f.read_ordered_end(back.data()).count, rank() + 1);
  EXPECT_EQ(back, mine);
  f.seek_shared(0);
  std::fill(back.begin(), back.end(), -1);
  EXPECT_EQ(f.read_ordered(back.data(), rank() + 1, int_t()).count, rank() + 1);
  EXPECT_EQ(back, mine);
  EXPECT_EQ(f.get_position_shared(), total);
  f.close();
}

// ---- split collectives: IO-1 … IO-17 ---------------------------------------------------

// Each rank's 64 ints: (rank, i) encoded.
std::vector<int> pattern(int r, int salt) {
  std::vector<int> v(64);
  for (int i = 0; i < 64; ++i) v[static_cast<std::size_t>(i)] = r * 100000 + i * 10 + salt;
  return v;
}

TEST_F(File, EachSplitPairMatchesItsBlockingCollective) {
  covers("IO-1", "IO-6");
  file a = file::open(world(), path("split"), rw_create);
  file b = file::open(world(), path("blocking"), rw_create);
  const datatype ft = datatype::resized(datatype::contiguous(8, int_t()), 0,
                                        static_cast<std::ptrdiff_t>(8 * sizeof(int)) * size());
  for (file* f : {&a, &b})
    f->set_view(static_cast<offset_t>(8 * sizeof(int)) * rank(), int_t(), ft);
  const std::vector<int> mine = pattern(rank(), 1);
  const std::vector<int> ordered = pattern(rank(), 2);
  // Different delays per rank: begins match by order, not timing (IO-6).
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * rank()));
  a.write_at_all_begin(0, mine.data(), 16, int_t());
  (void)a.write_at_all_end(mine.data());
  (void)b.write_at_all(0, mine.data(), 16, int_t());
  a.seek(16);
  b.seek(16);
  a.write_all_begin(mine.data() + 16, 16, int_t());
  (void)a.write_all_end(mine.data() + 16);
  (void)b.write_all(mine.data() + 16, 16, int_t());
  for (file* f : {&a, &b}) f->set_view(4096, int_t(), int_t());
  a.write_ordered_begin(ordered.data(), rank() + 1, int_t());
  (void)a.write_ordered_end(ordered.data());
  (void)b.write_ordered(ordered.data(), rank() + 1, int_t());
  for (file* f : {&a, &b}) f->sync();
  barrier(world());
  for (file* f : {&a, &b}) f->sync();
  EXPECT_EQ(contents(path("split")), contents(path("blocking")));
  EXPECT_GT(contents(path("split")).size(), 4096U);

  // The reads.
  for (file* f : {&a, &b}) {
    f->set_view(static_cast<offset_t>(8 * sizeof(int)) * rank(), int_t(), ft);
  }
  std::vector<int> ra(32, -1);
  std::vector<int> rb(32, -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * (size() - rank())));
  a.read_at_all_begin(0, ra.data(), 16, int_t());
  EXPECT_EQ(a.read_at_all_end(ra.data()).count, 16);
  EXPECT_EQ(b.read_at_all(0, rb.data(), 16, int_t()).count, 16);
  a.seek(16);
  b.seek(16);
  a.read_all_begin(ra.data() + 16, 16, int_t());
  EXPECT_EQ(a.read_all_end(ra.data() + 16).count, 16);
  EXPECT_EQ(b.read_all(rb.data() + 16, 16, int_t()).count, 16);
  EXPECT_EQ(ra, rb);
  EXPECT_EQ(ra, std::vector<int>(mine.begin(), mine.begin() + 32));
  std::vector<int> oa(static_cast<std::size_t>(rank() + 1), -1);
  std::vector<int> ob(oa);
  for (file* f : {&a, &b}) f->set_view(4096, int_t(), int_t());
  a.read_ordered_begin(oa.data(), rank() + 1, int_t());
  (void)a.read_ordered_end(oa.data());
  (void)b.read_ordered(ob.data(), rank() + 1, int_t());
  EXPECT_EQ(oa, ob);
  EXPECT_EQ(oa, std::vector<int>(ordered.begin(), ordered.begin() + rank() + 1));
  a.close();
  b.close();
}

TEST_F(File, BufferMayBeReusedOnceEndReturned) {
  covers("IO-2", "IO-8");
  file f = file::open(world(), path("reuse"), rw_create);
  f.set_view(static_cast<offset_t>(sizeof(int)) * 1024 * rank(), int_t(), int_t());
  auto buf = std::make_unique<std::vector<int>>(pattern(rank(), 3));
  f.write_all_begin(buf->data(), 64, int_t());
  // Computation while the I/O thread writes (IO-8 allows either; oneside's begin returns).
  volatile double x = 0;
  for (int i = 0; i < 100000; ++i) x = x + 1.0;
  (void)f.write_all_end(buf->data());
  std::fill(buf->begin(), buf->end(), -7);
  buf.reset();
  std::vector<int> back(64, -1);
  EXPECT_EQ(f.read_at(0, back.data(), 64, int_t()).count, 64);
  EXPECT_EQ(back, pattern(rank(), 3));
  f.close();
}

TEST_F(File, AtomicModeMakesABeginEndPairOneAccess) {
  covers("IO-3");
  file f = file::open(world(), path("atomic"), rw_create);
  f.set_atomicity(true);
  // Every member writes the same 64 KiB region through a view with a hole every 4 bytes, so
  // each access is many separate writes: without the lock they would interleave.
  const datatype ft = datatype::resized(int_t(), 0, 8);
  f.set_view(0, int_t(), ft);
  std::vector<int> mine(16384, rank() + 1);
  for (int round = 0; round < 3; ++round) {
    f.write_at_all_begin(0, mine.data(), static_cast<count_t>(mine.size()), int_t());
    (void)f.write_at_all_end(mine.data());
  }
  f.sync();
  barrier(world());
  std::vector<int> back(mine.size(), -1);
  (void)f.read_at_all(0, back.data(), static_cast<count_t>(back.size()), int_t());
  const int first = back[0];
  EXPECT_GE(first, 1);
  EXPECT_EQ(std::count(back.begin(), back.end(), first), static_cast<long>(back.size()))
      << "the region holds more than one member's data";
  f.close();
}

TEST_F(File, ExplicitOffsetSplitCollectivesLeaveThePointers) {
  covers("IO-4");
  file f = file::open(world(), path("explicit"), rw_create);
  f.set_view(static_cast<offset_t>(sizeof(int)) * 512 * rank(), int_t(), int_t());
  std::vector<int> head = pattern(rank(), 4);
  (void)f.write(head.data(), 8, int_t());
  f.seek(2);
  const std::vector<int> far(8, 99);
  f.write_at_all_begin(100, far.data(), 8, int_t());
  (void)f.write_at_all_end(far.data());
  EXPECT_EQ(f.get_position(), 2);
  std::vector<int> got(4, -1);
  f.read_all_begin(got.data(), 4, int_t());
  (void)f.read_all_end(got.data());
  EXPECT_EQ(got, std::vector<int>(head.begin() + 2, head.begin() + 6));
  std::vector<int> back(8, -1);
  EXPECT_EQ(f.read_at(100, back.data(), 8, int_t()).count, 8);
  EXPECT_EQ(back, far);
  f.close();
}

TEST_F(File, OneSplitCollectivePerHandle) {
  covers("IO-5", "IO-11");
  file f = file::open(world(), path("one"), rw_create);
  std::vector<int> v = pattern(rank(), 5);
  f.set_view(static_cast<offset_t>(sizeof(int)) * 64 * rank(), int_t(), int_t());
  (void)f.write_at(0, v.data(), 64, int_t());
  std::vector<int> r(8, -1);
  f.read_all_begin(r.data(), 8, int_t());
  // A second begin of any kind on this handle (IO-5) and any other collective call (IO-11).
  std::vector<int> w(8, 1);
  expect_error(error_class::io, "file::write_all_begin",
               [&] { f.write_all_begin(w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::read_at_all_begin",
               [&] { f.read_at_all_begin(0, w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::read_ordered_begin",
               [&] { f.read_ordered_begin(w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::read_all", [&] { (void)f.read_all(w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::write_at_all",
               [&] { (void)f.write_at_all(0, w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::read_ordered",
               [&] { (void)f.read_ordered(w.data(), 8, int_t()); });
  expect_error(error_class::io, "file::set_view", [&] { f.set_view(0, int_t(), int_t()); });
  expect_error(error_class::io, "file::seek_shared", [&] { f.seek_shared(0); });
  expect_error(error_class::io, "file::sync", [&] { f.sync(); });
  expect_error(error_class::io, "file::set_size", [&] { f.set_size(0); });
  expect_error(error_class::io, "file::preallocate", [&] { f.preallocate(0); });
  expect_error(error_class::io, "file::set_atomicity", [&] { f.set_atomicity(true); });
  expect_error(error_class::io, "file::close", [&] { f.close(); });
  EXPECT_EQ(f.get_position(), 8) << "a rejected call moved the pointer";
  // Independent accesses are allowed meanwhile (IO-11).
  std::vector<int> ind(4, -1);
  EXPECT_EQ(f.read_at(10, ind.data(), 4, int_t()).count, 4);
  EXPECT_EQ(ind, std::vector<int>(v.begin() + 10, v.begin() + 14));
  // A second handle on the same file may run its own split collective (IO-5).
  file g = file::open(world(), path("one"), file_mode::rdonly);
  g.set_view(static_cast<offset_t>(sizeof(int)) * 64 * rank(), int_t(), int_t());
  std::vector<int> r2(8, -1);
  g.read_at_all_begin(8, r2.data(), 8, int_t());
  EXPECT_EQ(g.read_at_all_end(r2.data()).count, 8);
  EXPECT_EQ(r2, std::vector<int>(v.begin() + 8, v.begin() + 16));
  EXPECT_EQ(f.read_all_end(r.data()).count, 8);
  EXPECT_EQ(r, std::vector<int>(v.begin(), v.begin() + 8));
  g.close();
  f.close();
}

TEST_F(File, EndsMustMatchTheirBegin) {
  covers("IO-7", "IO-10", "IO-17");
  file f = file::open(world(), path("match"), rw_create);
  std::vector<int> v = pattern(rank(), 6);
  f.set_view(static_cast<offset_t>(sizeof(int)) * 64 * rank(), int_t(), int_t());
  (void)f.write_at(0, v.data(), 64, int_t());
  std::vector<int> r(8, -1);
  // An end without a begin returns an error (it throws; the default handler is not fatal).
  expect_error(error_class::io, "file::read_all_end", [&] { (void)f.read_all_end(r.data()); });
  f.read_all_begin(r.data(), 8, int_t());
  expect_error(error_class::io, "file::write_all_end", [&] { (void)f.write_all_end(r.data()); });
  expect_error(error_class::io, "file::read_at_all_end",
               [&] { (void)f.read_at_all_end(r.data()); });
  expect_error(error_class::io, "file::read_ordered_end",
               [&] { (void)f.read_ordered_end(r.data()); });
  std::vector<int> other(8);
  expect_error(error_class::arg, "file::read_all_end", [&] { (void)f.read_all_end(other.data()); });
  // The pending read still ends correctly.
  EXPECT_EQ(f.read_all_end(r.data()).count, 8);
  EXPECT_EQ(r, std::vector<int>(v.begin(), v.begin() + 8));
  expect_error(error_class::io, "file::read_all_end", [&] { (void)f.read_all_end(r.data()); });
  f.close();
}

TEST_F(File, BeginAndEndOnOneThread) {
  covers("IO-12");
  file f = file::open(world(), path("thread"), rw_create);
  std::vector<int> v(16, rank());
  f.set_view(static_cast<offset_t>(sizeof(int)) * 16 * rank(), int_t(), int_t());
  f.write_all_begin(v.data(), 16, int_t());
  std::thread t([&] {
    expect_error(error_class::io, "file::write_all_end", [&] { (void)f.write_all_end(v.data()); });
  });
  t.join();
  EXPECT_EQ(f.write_all_end(v.data()).count, 16);
  f.close();
}

// IO-14's program on `f`: a file of 10 ints; member r reads 8 at offset 6r.
void end_reports_short_reads(file& f) {
  const int me = world().rank();
  f.set_view(0, int_t(), int_t());
  if (me == 0) {
    std::vector<int> ten(10);
    for (int i = 0; i < 10; ++i) ten[static_cast<std::size_t>(i)] = i;
    (void)f.write_at(0, ten.data(), 10, int_t());
  }
  f.sync();
  barrier(world());
  f.sync();
  std::vector<int> r(8, -1);
  f.read_at_all_begin(6 * me, r.data(), 8, int_t());
  const io_status st = f.read_at_all_end(r.data());
  const int want = std::clamp(10 - 6 * me, 0, 8);
  EXPECT_EQ(st.count, want);
  EXPECT_EQ(st.elements, want);
  EXPECT_EQ(st.bytes, want * static_cast<count_t>(sizeof(int)));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(r[static_cast<std::size_t>(i)], i < want ? 6 * me + i : -1) << i;
  }
  // A partial element: 3 ints read as pairs give 1 whole pair and 3 basic elements.
  if (me == 0) {
    std::vector<int> pairs(4, -1);
    const io_status p = f.read_at(7, pairs.data(), 2, datatype::contiguous(2, int_t()));
    EXPECT_EQ(p.count, 1);
    EXPECT_EQ(p.elements, 3);
  }
  f.close();
}

TEST_F(File, EndReportsWhatWasReadUpToTheEndOfTheFile) {
  covers("IO-14");
  for (const char* cb : {"false", "true"}) {
    SCOPED_TRACE(std::string("collective_buffering ") + cb);
    const std::string name = path(std::string("short-") + cb);
    file f =
        file::open(world(), name, rw_create, info{{"collective_buffering", cb}, {"cb_nodes", "2"}});
    end_reports_short_reads(f);
  }
}

TEST_F(File, OrderedFormsNeedTheSameViewEverywhere) {
  covers("IO-15");
  ONESIDE_SKIP_UNLESS_ALL(size() > 1, "needs two views");
  file f = file::open(world(), path("views"), rw_create);
  f.set_view(rank() == 0 ? 0 : 4, int_t(), int_t());
  int x = rank();
  expect_error(error_class::not_same, "file::write_ordered_begin",
               [&] { f.write_ordered_begin(&x, 1, int_t()); });
  expect_error(error_class::not_same, "file::read_ordered",
               [&] { (void)f.read_ordered(&x, 1, int_t()); });
  EXPECT_EQ(f.get_position_shared(), 0) << "a rejected ordered access moved the shared pointer";
  f.set_view(0, int_t(), int_t());
  f.write_ordered_begin(&x, 1, int_t());
  EXPECT_EQ(f.write_ordered_end(&x).count, 1);
  f.close();
}

TEST_F(File, FatalHandlerAbortsWithTheMessage) {
  covers("IO-17");
  file f = file::open(world(), path("fatal"), rw_create);
  int fds[2] = {-1, -1};
  EXPECT_EQ(::pipe(fds), 0);
  if (fds[0] >= 0) {
    std::fflush(nullptr);
    const pid_t child = ::fork();
    EXPECT_GE(child, 0);
    if (child == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      f.set_error_handler(file::errors::fatal);
      int x = 0;
      try {
        (void)f.read_all_end(&x);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(4);
    }
    ::close(fds[1]);
    std::string message;
    char buf[512];
    for (;;) {
      pollfd pfd{fds[0], POLLIN, 0};
      if (::poll(&pfd, 1, 20000) <= 0) break;
      const ssize_t got = ::read(fds[0], buf, sizeof buf);
      if (got <= 0) break;
      message.append(buf, static_cast<std::size_t>(got));
    }
    ::close(fds[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << "status " << status;
    EXPECT_NE(message.find("read_all_end"), std::string::npos) << message;
  }
  f.close();
}

// Whether this build has liburing and the kernel grants this process an io_uring (container
// runtimes often forbid it).
bool uring_possible() {
#if ONESIDE_HAVE_LIBURING
  io_uring_params params{};
  const long fd = ::syscall(__NR_io_uring_setup, 4, &params);
  if (fd < 0) return false;
  ::close(static_cast<int>(fd));
  return true;
#else
  return false;
#endif
}

// ONESIDE_IO_ENGINE=uring: the I/O thread submits an access's pieces (here 64 of 16 bytes,
// round-robin over the members) through an io_uring when it can, threads otherwise, and the
// file holds the same bytes either way.
TEST_F(File, UringEngineMovesManyPiecesAtOnce) {
  for (const int engine : {1, 2}) {
    SCOPED_TRACE(engine == 1 ? "threads" : "uring");
    detail::io_engine_for_testing = engine;
    struct engine_reset {
      ~engine_reset() { detail::io_engine_for_testing = 0; }
    } reset_engine;
    const std::string p = path(std::string("engine-") + std::to_string(engine));
    file f = file::open(world(), p, rw_create, info{{"collective_buffering", "false"}});
    const offset_t block = 16;
    f.set_view(block * rank(), byte_t(),
               datatype::resized(datatype::contiguous(block, byte_t()), 0, block * size()));
    bytes mine(64 * block);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = tag(rank(), i);
    EXPECT_EQ(f.iwrite_at(0, mine.data(), static_cast<count_t>(mine.size()), byte_t()).wait().bytes,
              static_cast<count_t>(mine.size()));
    EXPECT_EQ(f.impl().worker.uses_ring(), engine == 2 && uring_possible());
    f.sync();
    barrier(world());
    f.sync();
    // Read back past the end: the request reports the shorter count (IO-14).
    bytes back(mine.size() + 8, std::byte{0xAB});
    file_request r = f.iread_at(0, back.data(), static_cast<count_t>(back.size()), byte_t());
    EXPECT_EQ(r.wait().bytes, static_cast<count_t>(mine.size()));
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(), back.begin())) << "the data read back";
    EXPECT_EQ(back[mine.size()], std::byte{0xAB}) << "nothing past the end of the file";
    if (rank() == 0) {
      const bytes got = contents(p);
      ASSERT_EQ(got.size(), mine.size() * static_cast<std::size_t>(size()));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto b = static_cast<std::size_t>(i / block);
        const int owner = static_cast<int>(b % static_cast<std::size_t>(size()));
        const std::size_t at = (b / static_cast<std::size_t>(size())) * block + i % block;
        bad += got[i] != tag(owner, at);
      }
      EXPECT_EQ(bad, 0U) << "bytes differ from the model";
    }
    f.close();
  }
}

// Staged accesses (staged.cpp): a blocking access of large runs goes through the file's buffer
// of two halves (here cb_buffer_size 4 KiB halves), the I/O thread moving one while the caller
// copies the other. Each member's data is runs of 3.5 halves with the other members' runs
// between them, so halves straddle the runs; staged and unstaged accesses leave the same bytes.
TEST_F(File, StagedAccessesMoveTheSameBytesAsUnstagedOnes) {
  constexpr offset_t half = 4096;
  constexpr offset_t run = 7 * half / 2;
  const auto n = static_cast<std::size_t>(11 * run + 100);  // not a whole number of halves
  const datatype ft = datatype::resized(datatype::contiguous(run, byte_t()), 0, run * size());
  bytes expected;
  for (const char* staged : {"true", "false"}) {
    SCOPED_TRACE(std::string("staged_io ") + staged);
    const std::string p = path(std::string("staged-") + staged);
    file f = file::open(world(), p, rw_create,
                        info{{"staged_io", staged},
                             {"cb_buffer_size", std::to_string(half)},
                             {"collective_buffering", "false"}});
    f.set_view(run * rank(), byte_t(), ft);
    bytes mine(n);
    for (std::size_t i = 0; i < n; ++i) mine[i] = tag(rank(), i);
    const std::int64_t before = detail::staged_accesses_for_testing.load();
    EXPECT_EQ(f.write_at_all(0, mine.data(), static_cast<count_t>(n), byte_t()).bytes,
              static_cast<count_t>(n));
    // The second half of the data again, independently (the other blocking form).
    EXPECT_EQ(f.write_at(static_cast<offset_t>(n / 2), mine.data() + n / 2,
                         static_cast<count_t>(n - n / 2), byte_t())
                  .bytes,
              static_cast<count_t>(n - n / 2));
    f.sync();
    barrier(world());
    f.sync();
    bytes back(n, std::byte{0});
    EXPECT_EQ(f.read_at_all(0, back.data(), static_cast<count_t>(n), byte_t()).bytes,
              static_cast<count_t>(n));
    EXPECT_TRUE(back == mine) << "the data read back";
    const std::int64_t staged_calls = detail::staged_accesses_for_testing.load() - before;
    EXPECT_EQ(staged_calls, std::string(staged) == "true" ? 3 : 0);
    f.close();
    if (rank() == 0) {
      const bytes got = contents(p);
      // The model: member r's data byte i is in tile i / run at r·run + i % run.
      ASSERT_EQ(got.size(), static_cast<std::size_t>(11 * run * size() + (size() - 1) * run + 100));
      std::size_t bad = 0;
      for (rank_t r = 0; r < size(); ++r) {
        for (std::size_t i = 0; i < n; ++i) {
          const auto u = static_cast<std::size_t>(run);
          const std::size_t at = i / u * u * static_cast<std::size_t>(size()) +
                                 static_cast<std::size_t>(r) * u + i % u;
          bad += got[at] != tag(r, i);
        }
      }
      EXPECT_EQ(bad, 0U) << "bytes differ from the model";
      if (expected.empty()) {
        expected = got;
      } else {
        EXPECT_TRUE(got == expected) << "staged and unstaged files differ";
      }
    }
    barrier(world());
  }
}

// Without the hint: writes of at least eight halves of runs averaging a half or more are
// staged while the node is not oversubscribed; shorter ones, reads, and views of small runs are
// not. A staged read past the end of
// the file reports what it read (IO-14) and leaves the rest of the buffer alone.
TEST_F(File, StagingIsChosenPerAccess) {
  constexpr offset_t half = 4096;
  const std::string p = path("auto");
  file f = file::open(world(), p, rw_create, info{{"cb_buffer_size", std::to_string(half)}});
  const offset_t share = 8 * half;
  f.set_view(share * rank(), byte_t(), byte_t());
  bytes mine(static_cast<std::size_t>(share));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = tag(rank(), i);
  auto staged = [](auto&& access) {
    const std::int64_t before = detail::staged_accesses_for_testing.load();
    access();
    return detail::staged_accesses_for_testing.load() - before;
  };
  // Only while this node's ranks do not outnumber its cores (np3 and np4 on a 2-core machine:
  // never).
  const std::int64_t big = detail::current_context()->oversubscribed ? 0 : 1;
  EXPECT_EQ(staged([&] { (void)f.write_at_all(0, mine.data(), share, byte_t()); }), big);
  EXPECT_EQ(staged([&] { (void)f.write_at_all(0, mine.data(), share - 1, byte_t()); }), 0);
  EXPECT_EQ(staged([&] { (void)f.write_at(0, mine.data(), share, byte_t()); }), big);
  f.sync();
  barrier(world());
  f.sync();
  bytes back(mine.size(), std::byte{0});
  EXPECT_EQ(staged([&] { (void)f.read_at_all(0, back.data(), share, byte_t()); }), 0);
  EXPECT_TRUE(back == mine);
  // 1 KiB runs with holes (collective buffering off): the average piece is below a half.
  const datatype rr =
      datatype::resized(datatype::contiguous(half / 4, byte_t()), 0, half / 2 * size());
  f.close();
  file h =
      file::open(world(), path("small-runs"), rw_create,
                 info{{"cb_buffer_size", std::to_string(half)}, {"collective_buffering", "false"}});
  h.set_view(half / 4 * rank(), byte_t(), rr);
  EXPECT_EQ(staged([&] { (void)h.write_at_all(0, mine.data(), share, byte_t()); }), 0);
  h.close();

  // A staged read of ten halves from 1000 bytes before the end of the file.
  file g = file::open(world(), p, file_mode::rdonly,
                      info{{"cb_buffer_size", std::to_string(half)}, {"staged_io", "true"}});
  const offset_t end = g.get_size();
  bytes tail(static_cast<std::size_t>(10 * half), std::byte{0xAB});
  io_status st;
  EXPECT_EQ(staged([&] { st = g.read_at(end - 1000, tail.data(), 10 * half, byte_t()); }), 1);
  EXPECT_EQ(st.bytes, 1000);
  const bytes whole = contents(p);
  EXPECT_TRUE(std::equal(tail.begin(), tail.begin() + 1000, whole.end() - 1000));
  EXPECT_EQ(std::count(tail.begin() + 1000, tail.end(), std::byte{0xAB}), 10 * half - 1000)
      << "nothing past the end of the file";
  g.close();
}

// A staged write that fails midway (the file size limit: EFBIG) raises what an unstaged one
// raises: no_space, naming the call, the file and the call's size.
TEST_F(File, StagedWriteFailsAsAnUnstagedOne) {
  constexpr offset_t half = 4096;
  const offset_t region = 16 * half;
  struct limit_reset {
    rlimit old{};
    void (*handler)(int) = nullptr;
    limit_reset() {
      ::getrlimit(RLIMIT_FSIZE, &old);
      handler = ::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
    }
    ~limit_reset() {
      ::setrlimit(RLIMIT_FSIZE, &old);
      ::signal(SIGXFSZ, handler);
    }
  } reset;
  std::string messages[2];
  int k = 0;
  for (const char* staged : {"true", "false"}) {
    SCOPED_TRACE(std::string("staged_io ") + staged);
    const std::string p = path(std::string("limit-") + staged);
    file f = file::open(world(), p, rw_create,
                        info{{"staged_io", staged}, {"cb_buffer_size", std::to_string(half)}});
    bytes mine(static_cast<std::size_t>(10 * half), std::byte{7});
    const offset_t at = region * rank();
    rlimit lim = reset.old;
    lim.rlim_cur = static_cast<rlim_t>(at + 11 * half / 2);  // 5.5 halves into this member's write
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
    const std::int64_t before = detail::staged_accesses_for_testing.load();
    expect_error(error_class::no_space, "file::write_at",
                 [&] { (void)f.write_at(at, mine.data(), 10 * half, byte_t()); });
    try {
      (void)f.write_at(at, mine.data(), 10 * half, byte_t());
    } catch (const oneside::error& e) {
      messages[k] = e.what();
      const std::string::size_type name = messages[k].find(p);
      EXPECT_NE(name, std::string::npos) << messages[k];
      if (name != std::string::npos) messages[k].replace(name, p.size(), "<file>");
    }
    EXPECT_EQ(detail::staged_accesses_for_testing.load() - before, k == 0 ? 2 : 0);
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &reset.old), 0);
    // Everything before the limit was written.
    bytes back(static_cast<std::size_t>(11 * half / 2), std::byte{0});
    EXPECT_EQ(f.read_at(at, back.data(), 11 * half / 2, byte_t()).bytes, 11 * half / 2);
    EXPECT_EQ(std::count(back.begin(), back.end(), std::byte{7}), 11 * half / 2);
    f.close();
    ++k;
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("40960 bytes"), std::string::npos) << messages[0];
}

TEST_F(File, NonblockingRequestsCompleteInAnyOrder) {
  file f = file::open(world(), path("nb"), rw_create);
  f.set_view(static_cast<offset_t>(sizeof(int)) * 256 * rank(), int_t(), int_t());
  std::vector<std::vector<int>> blocks;
  std::vector<file_request> reqs;
  for (int i = 0; i < 8; ++i) blocks.push_back(std::vector<int>(32, rank() * 10 + i));
  for (int i = 0; i < 8; ++i)
    reqs.push_back(f.iwrite_at(32 * i, blocks[static_cast<std::size_t>(i)].data(), 32, int_t()));
  for (int i = 7; i >= 0; --i) EXPECT_EQ(reqs[static_cast<std::size_t>(i)].wait().count, 32);
  std::vector<int> back(256, -1);
  file_request r = f.iread_at(0, back.data(), 256, int_t());
  EXPECT_EQ(r.wait().count, 256);
  EXPECT_EQ(r.wait().count, 256) << "a second wait returns the same status";
  for (int i = 0; i < 256; ++i) EXPECT_EQ(back[static_cast<std::size_t>(i)], rank() * 10 + i / 32);
  file_request empty;
  expect_error(error_class::request, "file_request::wait", [&] { (void)empty.wait(); });
  expect_error(error_class::request, "file_request::test", [&] { (void)empty.test(); });
  f.close();
}

// Maps files on every file system for the test's lifetime (tmpfs reads by pread otherwise).
struct mapped_reads_everywhere {
  mapped_reads_everywhere() { detail::mapped_reads_on_any_fs_for_testing = true; }
  ~mapped_reads_everywhere() { detail::mapped_reads_on_any_fs_for_testing = false; }
};

// A file every member wrote `blocks` blocks of `block` bytes to (tag(rank, i)), its view
// those blocks: block-sized pieces round robin over the members, with a hole of a block after
// each round.
struct strided_file {
  strided_file(const std::string& p, std::size_t block, std::size_t blocks)
      : stride(static_cast<std::int64_t>(block) * (world().size() + 1)), mine(block * blocks) {
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = tag(world().rank(), i);
    f = file::open(world(), p, rw_create);
    f.set_view(
        static_cast<offset_t>(block) * world().rank(), byte_t(),
        datatype::resized(datatype::contiguous(static_cast<count_t>(block), byte_t()), 0, stride));
    EXPECT_EQ(f.write_at_all(0, mine.data(), static_cast<count_t>(mine.size()), byte_t()).bytes,
              static_cast<count_t>(mine.size()));
  }
  std::int64_t stride;
  bytes mine;
  file f;
};

// Reads of many small pieces copy them out of mappings of the file (ONESIDE_IO_MAPPED_READS,
// on by default) where its file system gains from it (ext4, XFS, Btrfs; not tmpfs) and kernel
// entries are cheap: the data are the file's, a read of few pieces does not map, and pieces
// past the end of the file end the read there (IO-14) as with pread.
TEST_F(File, ReadsOfManySmallPiecesComeFromMappings) {
  covers("IO-14");
  bool fs_suits = false, suits = false;
  {
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    fs_suits = detail::maps_well(fd);
    suits = detail::mapped_reads_pay(fd);
    ::close(fd);
  }
  struct statfs fs {};
  ASSERT_EQ(::statfs(dir_.c_str(), &fs), 0);
  EXPECT_EQ(fs_suits, fs.f_type == 0xEF53 || fs.f_type == 0x58465342 || fs.f_type == 0x9123683E);
  EXPECT_EQ(suits, fs_suits && detail::kernel_entry_ns() < detail::kernel_entry_costly_ns);
  {
    // The file system decides, when the test is not forcing it.
    file f = file::open(world(), path("fs-choice"), rw_create);
    const datatype ft = datatype::resized(datatype::contiguous(64, byte_t()), 0, 128);
    f.set_view(0, byte_t(), ft);
    bytes some(64 * 32, std::byte{1});
    if (rank() == 0) (void)f.write_at(0, some.data(), static_cast<count_t>(some.size()), byte_t());
    barrier(world());
    const std::int64_t before = detail::mapped_reads_for_testing.load();
    EXPECT_EQ(f.read_at(0, some.data(), static_cast<count_t>(some.size()), byte_t()).bytes,
              static_cast<count_t>(some.size()));
    EXPECT_EQ(detail::mapped_reads_for_testing.load() - before, suits ? 1 : 0)
        << "32 pieces on file system 0x" << std::hex << fs.f_type;
    f.close();
  }
  const mapped_reads_everywhere everywhere;
  // 60 pieces of 64 bytes: the file ends inside a page, and so do pieces past its end.
  constexpr std::size_t block = 64, blocks = 60, n = block * blocks;
  strided_file sf(path("mapped"), block, blocks);
  file& f = sf.f;
  const bytes& mine = sf.mine;
  std::int64_t before = detail::mapped_reads_for_testing.load();
  bytes back(n + 8 * block, std::byte{0});
  EXPECT_EQ(f.read_at(0, back.data(), static_cast<count_t>(n), byte_t()).bytes,
            static_cast<count_t>(n));
  EXPECT_EQ(detail::mapped_reads_for_testing.load() - before, 1) << "60 pieces of 64 bytes";
  EXPECT_TRUE(std::equal(mine.begin(), mine.end(), back.begin())) << "the data read back";
  // Four pieces: a pread each.
  before = detail::mapped_reads_for_testing.load();
  bytes four(4 * block, std::byte{0});
  EXPECT_EQ(f.read_at(0, four.data(), static_cast<count_t>(four.size()), byte_t()).bytes,
            static_cast<count_t>(four.size()));
  EXPECT_EQ(detail::mapped_reads_for_testing.load() - before, 0) << "4 pieces";
  EXPECT_TRUE(std::equal(four.begin(), four.end(), mine.begin()));
  // Eight pieces more than the file holds for anyone: the read ends at the end of the file.
  barrier(world());  // every member's blocks are written
  std::fill(back.begin(), back.end(), std::byte{0});
  before = detail::mapped_reads_for_testing.load();
  EXPECT_EQ(f.read_at(0, back.data(), static_cast<count_t>(back.size()), byte_t()).bytes,
            static_cast<count_t>(n));
  EXPECT_EQ(detail::mapped_reads_for_testing.load() - before, 1);
  EXPECT_TRUE(std::equal(mine.begin(), mine.end(), back.begin()));
  EXPECT_TRUE(std::all_of(back.begin() + n, back.end(), [](std::byte b) {
    return b == std::byte{0};
  })) << "bytes past the end of the file were written";
  f.close();
}

namespace {
std::atomic<offset_t> g_truncate_to{0};
void truncate_file(int fd) {
  if (::ftruncate(fd, g_truncate_to.load()) != 0) std::abort();
}
}  // namespace

// A file another process truncates while a read copies out of a mapping of it: the copy's fault
// (SIGBUS) is caught and the read returns what the file still holds. A fault outside such a
// copy still ends the process, as it would without oneside.
TEST_F(File, AFileThatShrinksUnderAMappedReadReadsWhatIsLeft) {
  const mapped_reads_everywhere everywhere;
  constexpr std::size_t block = 1024, blocks = 64, n = block * blocks;
  strided_file sf(path("shrinks"), block, blocks);
  file& f = sf.f;
  const bytes& mine = sf.mine;
  const std::int64_t stride = sf.stride;
  barrier(world());
  // Rank 0 truncates the file to 32 strides after mapping it, before copying; the others read
  // the shrunk file afterwards (their reads stop there without a fault).
  constexpr std::size_t kept = 32;
  g_truncate_to.store(static_cast<offset_t>(stride) * static_cast<offset_t>(kept));
  bytes back(n, std::byte{0});
  const std::int64_t faults = detail::mapped_read_faults_for_testing.load();
  if (rank() == 0) {
    detail::mapped_read_hook_for_testing.store(&truncate_file);
    const io_status s = f.read_at(0, back.data(), static_cast<count_t>(n), byte_t());
    detail::mapped_read_hook_for_testing.store(nullptr);
    EXPECT_EQ(s.bytes, static_cast<count_t>(kept * block));
    EXPECT_EQ(detail::mapped_read_faults_for_testing.load() - faults, 1) << "the fault caught";
  }
  barrier(world());
  if (rank() != 0) {
    EXPECT_EQ(f.read_at(0, back.data(), static_cast<count_t>(n), byte_t()).bytes,
              static_cast<count_t>(kept * block));
  }
  EXPECT_TRUE(std::equal(mine.begin(), mine.begin() + kept * block, back.begin()));
  EXPECT_TRUE(std::all_of(back.begin() + kept * block, back.end(),
                          [](std::byte b) { return b == std::byte{0}; }));
  EXPECT_EQ(f.get_size(), static_cast<offset_t>(stride) * static_cast<offset_t>(kept));
  f.close();
  // The handler is installed now: a fault of the program's own still ends it with SIGBUS.
  const std::string own = path("own-mapping") + "." + std::to_string(rank());
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(own.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::ftruncate(fd, 8192) != 0) ::_exit(2);
    void* m = ::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || ::ftruncate(fd, 0) != 0) ::_exit(3);
    const volatile char* c = static_cast<const char*>(m);
    ::_exit(c[4096] == 0 ? 4 : 5);  // faults
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The handler before oneside's may be the sanitizer's: it reports the fault and exits or
  // aborts, as its options say. Either way the fault was not swallowed: the child did not get
  // to its own exits (2 to 5: setup failed, the read returned).
  const bool own_exit = WIFEXITED(status) && WEXITSTATUS(status) >= 2 && WEXITSTATUS(status) <= 5;
  EXPECT_TRUE(!own_exit && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      << "child status " << status;
#else
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "child status " << status;
#endif
  ::unlink(own.c_str());
}

// Whether writes of small pieces to a file in `dir` would go through mappings here
// (mapped_writes_pay of a file there open for reading and writing).
bool writes_mapped_in(const std::string& dir) {
  const std::string probe = dir + "/mapped-writes-probe." + std::to_string(world().rank());
  const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GE(fd, 0) << probe;
  const bool pays = fd >= 0 && detail::mapped_writes_pay(fd);
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return pays;
}

// A directory on tmpfs (/dev/shm) for the length of a test, made by rank 0 and named to every
// rank; empty when /dev/shm is not tmpfs here (the same verdict on every rank).
struct tmpfs_dir {
  tmpfs_dir() {
    struct statfs fs {};
    const bool tmpfs = ::statfs("/dev/shm", &fs) == 0 &&
                       static_cast<unsigned long>(fs.f_type) == detail::tmpfs_magic;
    path = make_shared_dir("/dev/shm/oneside-file-XXXXXX", tmpfs);
  }
  ~tmpfs_dir() {
    barrier(world());
    std::error_code ec;
    if (world().rank() == 0 && !path.empty()) std::filesystem::remove_all(path, ec);
  }
  tmpfs_dir(const tmpfs_dir&) = delete;
  tmpfs_dir& operator=(const tmpfs_dir&) = delete;
  std::string path;
};

bool mapped_writes_setting_on() {
  return detail::setting_bool("ONESIDE_IO_MAPPED_WRITES");
}

// Writes of many small pieces to a file on tmpfs go into the file's pages through a mapping
// (ONESIDE_IO_MAPPED_WRITES, on by default), and a collective write of an interleaved view by
// members on one node then skips collective buffering: the file holds exactly what a pwrite per
// piece would have written (holes stay zero, the file grows to the end of the last piece), its
// modification time moves, and a file open write-only, or on another file system, keeps
// pwrite. With the setting 0 (ctest runtime.file.tmpfs_unmapped) collective buffering again.
TEST_F(File, WritesOfManySmallPiecesGoThroughMappingsOnTmpfs) {
  covers("IO-4");
  const tmpfs_dir shm;
  if (shm.path.empty()) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const bool on = mapped_writes_setting_on();
  {
    // What decides: tmpfs, a descriptor open for reading and writing, the setting.
    const std::string probe = shm.path + "/probe." + std::to_string(rank());
    int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(detail::mapped_writes_pay(fd), on);
    ::close(fd);
    fd = ::open(probe.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_FALSE(detail::mapped_writes_pay(fd)) << "open write-only";
    ::close(fd);
    ::unlink(probe.c_str());
    struct statfs fs {};
    ASSERT_EQ(::statfs(dir_.c_str(), &fs), 0);
    if (static_cast<unsigned long>(fs.f_type) != detail::tmpfs_magic) {
      EXPECT_FALSE(writes_mapped_in(dir_)) << "not tmpfs";
    }
  }
  // 300 blocks of 100 bytes each, round robin over the members with a block's hole after each
  // round; the file starts empty and an hour old.
  constexpr std::size_t block = 100, blocks = 300, n = block * blocks;
  const auto stride = static_cast<std::int64_t>(block) * (size() + 1);
  bytes mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = tag(rank(), i);
  const std::string p = shm.path + "/interleaved";
  file f = file::open(world(), p, rw_create);
  f.set_view(static_cast<offset_t>(block) * rank(), byte_t(),
             datatype::resized(datatype::contiguous(block, byte_t()), 0, stride));
  if (rank() == 0) {
    const timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), old, 0), 0);
  }
  barrier(world());
  const bool one_node = local_team().size() == size();
  const std::int64_t mapped = detail::mapped_writes_for_testing.load();
  const std::int64_t exchanged = detail::two_phase_accesses_for_testing.load();
  EXPECT_EQ(f.write_at_all(0, mine.data(), static_cast<count_t>(n), byte_t()).bytes,
            static_cast<count_t>(n));
  const bool through_cb = !(one_node && on);  // the view has holes at any member count
  EXPECT_EQ(detail::two_phase_accesses_for_testing.load() - exchanged, through_cb ? 1 : 0);
  const std::int64_t mapped_now = detail::mapped_writes_for_testing.load() - mapped;
  if (!on) {
    EXPECT_EQ(mapped_now, 0);
  } else if (!through_cb) {
    EXPECT_EQ(mapped_now, 1) << "each member's own pieces";
  } else {
    EXPECT_LE(mapped_now, 1) << "an aggregator's spans (holes between them) may go mapped too";
  }
  f.close();
  // Every byte as a pwrite per piece leaves it.
  bytes expected(
      static_cast<std::size_t>(stride) * (blocks - 1) + block * static_cast<std::size_t>(size()),
      std::byte{0});
  for (int r = 0; r < size(); ++r) {
    for (std::size_t b = 0; b < blocks; ++b) {
      for (std::size_t i = 0; i < block; ++i) {
        expected[b * static_cast<std::size_t>(stride) + static_cast<std::size_t>(r) * block + i] =
            tag(r, b * block + i);
      }
    }
  }
  const bytes got = contents(p);
  EXPECT_EQ(got.size(), expected.size()) << "the file ends at the last member's last block";
  EXPECT_TRUE(got == expected) << "the file's bytes";
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_GT(st.st_mtime, ::time(nullptr) - 600) << "the modification time moved";
  barrier(world());
  // Write-only: the same bytes, by pwrite (and collective buffering when interleaved).
  const std::string wo = shm.path + "/write-only";
  file g = file::open(world(), wo, file_mode::wronly | file_mode::create);
  g.set_view(static_cast<offset_t>(block) * rank(), byte_t(),
             datatype::resized(datatype::contiguous(block, byte_t()), 0, stride));
  const std::int64_t before = detail::mapped_writes_for_testing.load();
  EXPECT_EQ(g.write_at_all(0, mine.data(), static_cast<count_t>(n), byte_t()).bytes,
            static_cast<count_t>(n));
  EXPECT_EQ(detail::mapped_writes_for_testing.load() - before, 0) << "open write-only";
  g.close();
  EXPECT_TRUE(contents(wo) == expected);
  // Runs averaging more than 256 KiB: collective buffering, as on other file systems.
  constexpr std::size_t big = std::size_t{512} << 10;
  const std::string lp = shm.path + "/large-runs";
  file h = file::open(world(), lp, rw_create);
  h.set_view(static_cast<offset_t>(big) * rank(), byte_t(),
             datatype::resized(datatype::contiguous(big, byte_t()), 0,
                               static_cast<std::int64_t>(big) * (size() + 1)));
  bytes one(big);
  for (std::size_t i = 0; i < big; ++i) one[i] = tag(rank(), i);
  const std::int64_t cb_before = detail::two_phase_accesses_for_testing.load();
  EXPECT_EQ(h.write_at_all(0, one.data(), static_cast<count_t>(big), byte_t()).bytes,
            static_cast<count_t>(big));
  EXPECT_EQ(detail::two_phase_accesses_for_testing.load() - cb_before, 1) << "512 KiB runs";
  h.close();
  const bytes large = contents(lp);
  ASSERT_EQ(large.size(), big * static_cast<std::size_t>(size()));
  EXPECT_TRUE(std::equal(one.begin(), one.end(),
                         large.begin() + static_cast<std::ptrdiff_t>(big) * rank()));
}

namespace {
void truncate_to_nothing(int fd) {
  if (::ftruncate(fd, 0) != 0) std::abort();
}
}  // namespace

// A file another process truncates after a mapped write mapped it: the kernel cannot copy into
// the pages past the new end, and the write finishes every piece with pwrite, which extends
// the file again. Nothing is lost and the call succeeds.
TEST_F(File, AMappedWriteIntoAFileThatShrankFinishesWithPwrite) {
  const tmpfs_dir shm;
  if (shm.path.empty()) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  if (!mapped_writes_setting_on()) GTEST_SKIP() << "ONESIDE_IO_MAPPED_WRITES=0";
  constexpr std::size_t block = 512, blocks = 40, n = block * blocks;
  const std::string p = shm.path + "/shrinks." + std::to_string(rank());
  const team self = world().split(rank(), 0);
  file f = file::open(self, p, rw_create);
  f.set_view(0, byte_t(), datatype::resized(datatype::contiguous(block, byte_t()), 0, 2 * block));
  bytes mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = tag(rank(), i);
  const std::int64_t mapped = detail::mapped_writes_for_testing.load();
  detail::mapped_write_hook_for_testing.store(&truncate_to_nothing);
  const io_status s = f.write_at(0, mine.data(), static_cast<count_t>(n), byte_t());
  detail::mapped_write_hook_for_testing.store(nullptr);
  EXPECT_EQ(s.bytes, static_cast<count_t>(n));
  EXPECT_EQ(detail::mapped_writes_for_testing.load() - mapped, 1) << "the mapping was tried";
  f.close();
  bytes expected(2 * block * (blocks - 1) + block, std::byte{0});
  for (std::size_t b = 0; b < blocks; ++b) {
    std::copy_n(mine.begin() + static_cast<std::ptrdiff_t>(b * block), block,
                expected.begin() + static_cast<std::ptrdiff_t>(2 * b * block));
  }
  EXPECT_TRUE(contents(p) == expected) << "every piece written";
}

// Collective buffering's automatic choice (no hint) for a view of 4 KiB blocks round-robin over
// the members: writes go through it, unless the members share a node and write small pieces
// through mappings of the file (tmpfs); reads do across nodes, and on one node when any member's
// cb_reads_on_one_node() says so (ONESIDE_IO_CB_READS; forced here both ways, and differently
// on member 0, whose choice every member must then follow); the hint decides over both. Data
// stay right.
TEST_F(File, InterleavedReadsFollowTheCollectiveBufferingChoice) {
  constexpr std::size_t block = 4096, blocks = 8, n = block * blocks;
  const datatype ft = datatype::resized(datatype::contiguous(block, byte_t()), 0,
                                        static_cast<std::int64_t>(block) * size());
  const bool one_node = local_team().size() == size();
  const bool interleaved = size() > 1;  // one member's round robin has no holes
  const bool writes_mapped = one_node && writes_mapped_in(dir_);
  bytes mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = tag(rank(), i);
  struct choice {
    int forced;  // detail::cb_reads_for_testing on members other than 0
    int forced_at_0;
    bool on;  // what every member must do on one node
  };
  for (const choice c : {choice{2, 2, false}, choice{1, 1, true}, choice{2, 1, true}}) {
    for (const char* hint : {"", "true", "false"}) {
      SCOPED_TRACE(std::string("collective_buffering '") + hint + "', forced " +
                   std::to_string(rank() == 0 ? c.forced_at_0 : c.forced));
      detail::cb_reads_for_testing.store(rank() == 0 ? c.forced_at_0 : c.forced);
      const std::string p = path(std::string("cb-choice-") + hint);
      info hints;
      if (*hint != '\0') hints.set("collective_buffering", hint);
      file f = file::open(world(), p, rw_create, hints);
      f.set_view(static_cast<offset_t>(block) * rank(), byte_t(), ft);
      detail::cb_reads_for_testing.store(0);
      std::int64_t before = detail::two_phase_accesses_for_testing.load();
      EXPECT_EQ(f.write_at_all(0, mine.data(), static_cast<count_t>(n), byte_t()).bytes,
                static_cast<count_t>(n));
      const bool automatic = *hint == '\0';
      const bool forced_on = std::string_view(hint) == "true";
      EXPECT_EQ(detail::two_phase_accesses_for_testing.load() - before,
                forced_on || (automatic && interleaved && !writes_mapped) ? 1 : 0);
      bytes back(n, std::byte{0});
      before = detail::two_phase_accesses_for_testing.load();
      EXPECT_EQ(f.read_at_all(0, back.data(), static_cast<count_t>(n), byte_t()).bytes,
                static_cast<count_t>(n));
      EXPECT_EQ(detail::two_phase_accesses_for_testing.load() - before,
                forced_on || (automatic && interleaved && (!one_node || c.on)) ? 1 : 0);
      EXPECT_TRUE(back == mine) << "the data read back";
      f.close();
      if (rank() == 0) file::remove(p);
      barrier(world());
    }
  }
}

// The measurement behind ONESIDE_IO_CB_READS=auto: a null system call's cost, measured once,
// and the unforced choice that follows from it (or from the setting when it names one).
TEST_F(File, KernelEntryCostIsMeasuredOnce) {
  const std::int64_t ns = detail::kernel_entry_ns();
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 10'000'000) << "a system call taking 10 ms";
  EXPECT_EQ(detail::kernel_entry_ns(), ns) << "measured again";
  ASSERT_EQ(detail::cb_reads_for_testing.load(), 0);
  const std::string setting = detail::setting_string("ONESIDE_IO_CB_READS");
  const bool expected =
      setting == "always" || (setting == "auto" && ns >= detail::kernel_entry_costly_ns);
  EXPECT_EQ(detail::cb_reads_on_one_node(), expected)
      << "ONESIDE_IO_CB_READS=" << setting << ", a system call " << ns << " ns";
}

// The thread that runs a file's accesses moves to the PUs no rank is bound to when the launcher
// left some (ONESIDE_SPARE_PUS), so a split collective's data move while the rank computes;
// without any it keeps the rank's binding.
TEST_F(File, IoThreadRunsOnTheSparePus) {
  auto allowed = [](const std::string& status_path) {
    std::ifstream in(status_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("Cpus_allowed_list:")) {
        const std::size_t at = line.find_first_not_of(" \t", line.find(':') + 1);
        return detail::parse_index_list(line.substr(at));
      }
    }
    return std::vector<int>{};
  };
  const std::vector<int> rank_pus = allowed("/proc/thread-self/status");
  std::set<std::vector<int>> before;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    before.insert(allowed(e.path().string() + "/status"));
  }
  const std::string spare_text = detail::setting_string("ONESIDE_SPARE_PUS");
  const std::vector<int> spare = detail::parse_index_list(spare_text);
  file f = file::open(world(), path("placed"), rw_create);
  bytes data(1 << 16, std::byte{7});
  f.write_all_begin(data.data(), static_cast<count_t>(data.size()), byte_t());
  (void)f.write_all_end(data.data());
  std::set<std::vector<int>> after;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    after.insert(allowed(e.path().string() + "/status"));
  }
  f.close();
  if (spare.empty()) {
    EXPECT_TRUE(after.size() == 1 && *after.begin() == rank_pus)
        << "no spare PUs: every thread keeps the rank's binding";
  } else {
    EXPECT_FALSE(before.contains(spare)) << "no thread ran on the spare PUs before";
    EXPECT_TRUE(after.contains(spare)) << "the I/O thread runs on PUs " << spare_text;
  }
}

}  // namespace
}  // namespace oneside::test
