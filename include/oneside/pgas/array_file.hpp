// The file format of dist_array::save / load (docs/file_format.md): a fixed header of 4096 bytes
// (magic, version, the element type's name and size, the rank N and extents, the distribution
// the array was saved with, a free metadata string, a checksum) and then the elements in global
// row-major order, so that a file saved with one distribution or rank count loads into an array
// of any other. read_array_header reads and checks a file's header; save_options are what a
// save may add (metadata, a sync before it returns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <oneside/pgas/distribution.hpp>

namespace oneside {

// What the header of a saved array says.
struct array_file_header {
  std::uint32_t version = 0;
  std::string element_type;                 // "double", "int", … or "bytes" (no predefined type)
  std::size_t element_size = 0;             // bytes of one element
  std::vector<std::size_t> extents;         // N of them
  std::vector<distribution> distributions;  // what the array was saved with (informational)
  std::vector<int> grid;                    // its grid of ranks (informational)
  int ranks = 0;                            // its team's size (informational)
  std::string metadata;                     // the saver's free text (save_options::metadata)
  std::uint64_t data_offset = 0;            // where the elements start (4096)
  std::uint64_t data_bytes = 0;             // element_size × the product of the extents
};

// Reads and checks the header of the array file at `path` (not collective; any rank). Errors
// (oneside::error naming the call and the file): no_such_file, access, … (opening it, as
// file::open), io (not an array file: a bad magic, an unknown version, a header whose checksum
// does not match, another byte order; or a file shorter than its header says).
array_file_header read_array_header(std::string_view path);

// What dist_array::save and save_async may add to the file.
struct save_options {
  // Free text kept in the header (at most 1024 bytes: arg otherwise), e.g. an iteration count.
  std::string_view metadata = {};
  // save() only: every member's data reaches the storage device (fdatasync) before it returns.
  bool sync = false;
};

}  // namespace oneside
