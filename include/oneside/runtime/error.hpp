// oneside::error, the one exception type of oneside, and its error classes.
// Every class of the spec (ERR-3 … ERR-16) has a value here; messages name the rank,
// the call and, where they apply, the window, target, displacement and checklist rule.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <oneside/runtime/types.hpp>

namespace oneside {

enum class error_class : std::uint8_t {
  // Classes of the spec's one-sided chapter (Table 11.2).
  win,           // invalid window (ERR-4)
  base,          // invalid base address (ERR-5)
  size,          // invalid size (ERR-6)
  disp,          // invalid displacement or disp_unit (ERR-7)
  locktype,      // invalid lock type (ERR-8)
  assert_,       // invalid assertion (ERR-9); spelled with '_' because `assert` is a macro
  rma_conflict,  // conflicting accesses (ERR-10); never raised for overlapping puts
  rma_sync,      // wrong synchronization of RMA calls (ERR-11)
  rma_range,     // target memory outside the window (ERR-12)
  rma_attach,    // memory cannot be attached (ERR-13)
  rma_shared,    // memory cannot be shared (ERR-14)
  rma_flavor,    // wrong window flavor for the call (ERR-15)
  // General classes the spec's RMA calls also use (ERR-16).
  arg,
  count,
  type,
  op,
  rank,
  group,
  comm,
  info,
  request,
  truncate,
  io,
  no_mem,  // memory could not be allocated (MPI_ERR_NO_MEM; e.g. a heap at its cap)
  // Classes of the spec's I/O chapter (MPI_ERR_FILE …), raised by oneside::file.
  file,                   // invalid file handle (null, moved-from or closed)
  bad_file,               // invalid file name (empty, too long)
  no_such_file,           // the file does not exist
  file_exists,            // create | excl on a file that exists
  access,                 // permission denied, or reading a file opened write-only
  amode,                  // invalid combination of access modes
  read_only,              // writing a file opened read-only, or a read-only file system
  no_space,               // not enough space on the device
  quota,                  // quota exceeded
  not_same,               // a collective argument differs between the members (IO-15)
  unsupported_datarep,    // a data representation other than "native"
  unsupported_operation,  // the call is not possible on this file
  // oneside's own.
  not_open,  // the runtime is not open in this process (used before open or after close)
  intern,    // an internal failure (a system call failed, a resource ran out)
  remote,    // a function run on another rank for this one threw (rpc): its message is kept
};

// The spec's text and the MPI 4.x headers name the flavor class differently (ERR-15).
inline constexpr error_class rma_wrong_flavor = error_class::rma_flavor;

// Short name of a class, as spelled in code: "rma_range".
std::string_view error_class_name(error_class ec) noexcept;
// One-line description of a class: "target memory is not part of the window".
std::string_view error_class_description(error_class ec) noexcept;

// Where an error happened. Only `call` is required; the rest is printed when present.
struct error_context {
  std::string_view call;                  // the API call, e.g. "put", "team::split"
  std::string_view rule = {};             // checklist ID, e.g. "COM-8"
  std::int64_t window = -1;               // window id, when the call has one
  rank_t target = no_rank;                // target rank, when the call has one
  std::optional<std::int64_t> disp = {};  // target displacement
  std::optional<std::uint64_t> bytes = {};
};

class error : public std::runtime_error {
 public:
  // `message` is the complete message; use detail::raise to format one from a context.
  error(oneside::error_class ec, const std::string& message);

  oneside::error_class error_class() const noexcept { return class_; }

 private:
  oneside::error_class class_;
};

namespace detail {
// Formats "oneside: rank R: CALL (window W, target T, disp D, N bytes): WHAT [class, RULE]"
// and throws oneside::error. The rank is the calling rank in the world team, or "-" when
// the runtime is not open.
[[noreturn]] void raise(error_class ec, const error_context& where, std::string_view what);
std::string format_error(error_class ec, const error_context& where, std::string_view what);
}  // namespace detail

}  // namespace oneside
