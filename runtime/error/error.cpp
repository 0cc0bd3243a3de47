// oneside::error and the formatting of error messages.
#include <cstring>
#include <string>

#include <oneside/runtime/error.hpp>

#include "context/context.hpp"
#include "runtime/check.hpp"

namespace oneside {

std::string_view error_class_name(error_class ec) noexcept {
  switch (ec) {
    case error_class::win:
      return "win";
    case error_class::base:
      return "base";
    case error_class::size:
      return "size";
    case error_class::disp:
      return "disp";
    case error_class::locktype:
      return "locktype";
    case error_class::assert_:
      return "assert";
    case error_class::rma_conflict:
      return "rma_conflict";
    case error_class::rma_sync:
      return "rma_sync";
    case error_class::rma_range:
      return "rma_range";
    case error_class::rma_attach:
      return "rma_attach";
    case error_class::rma_shared:
      return "rma_shared";
    case error_class::rma_flavor:
      return "rma_flavor";
    case error_class::arg:
      return "arg";
    case error_class::count:
      return "count";
    case error_class::type:
      return "type";
    case error_class::op:
      return "op";
    case error_class::rank:
      return "rank";
    case error_class::group:
      return "group";
    case error_class::comm:
      return "comm";
    case error_class::info:
      return "info";
    case error_class::request:
      return "request";
    case error_class::truncate:
      return "truncate";
    case error_class::io:
      return "io";
    case error_class::no_mem:
      return "no_mem";
    case error_class::file:
      return "file";
    case error_class::bad_file:
      return "bad_file";
    case error_class::no_such_file:
      return "no_such_file";
    case error_class::file_exists:
      return "file_exists";
    case error_class::access:
      return "access";
    case error_class::amode:
      return "amode";
    case error_class::read_only:
      return "read_only";
    case error_class::no_space:
      return "no_space";
    case error_class::quota:
      return "quota";
    case error_class::not_same:
      return "not_same";
    case error_class::unsupported_datarep:
      return "unsupported_datarep";
    case error_class::unsupported_operation:
      return "unsupported_operation";
    case error_class::not_open:
      return "not_open";
    case error_class::intern:
      return "intern";
    case error_class::remote:
      return "remote";
  }
  return "unknown";
}

std::string_view error_class_description(error_class ec) noexcept {
  switch (ec) {
    case error_class::win:
      return "invalid window";
    case error_class::base:
      return "invalid base address";
    case error_class::size:
      return "invalid size";
    case error_class::disp:
      return "invalid displacement or displacement unit";
    case error_class::locktype:
      return "invalid lock type";
    case error_class::assert_:
      return "invalid assertion";
    case error_class::rma_conflict:
      return "conflicting accesses to a window";
    case error_class::rma_sync:
      return "invalid synchronization of RMA calls";
    case error_class::rma_range:
      return "target memory is not part of the window";
    case error_class::rma_attach:
      return "memory cannot be attached";
    case error_class::rma_shared:
      return "memory cannot be shared";
    case error_class::rma_flavor:
      return "wrong window flavor for this call";
    case error_class::arg:
      return "invalid argument";
    case error_class::count:
      return "invalid count";
    case error_class::type:
      return "invalid datatype";
    case error_class::op:
      return "invalid operation for this datatype or call";
    case error_class::rank:
      return "invalid rank";
    case error_class::group:
      return "invalid group";
    case error_class::comm:
      return "invalid team";
    case error_class::info:
      return "invalid info";
    case error_class::request:
      return "invalid request";
    case error_class::truncate:
      return "data does not fit the receive buffer";
    case error_class::io:
      return "I/O error";
    case error_class::no_mem:
      return "out of memory";
    case error_class::file:
      return "invalid file handle";
    case error_class::bad_file:
      return "invalid file name";
    case error_class::no_such_file:
      return "no such file";
    case error_class::file_exists:
      return "the file exists";
    case error_class::access:
      return "permission denied";
    case error_class::amode:
      return "invalid combination of file access modes";
    case error_class::read_only:
      return "the file is read-only";
    case error_class::no_space:
      return "not enough space on the device";
    case error_class::quota:
      return "quota exceeded";
    case error_class::not_same:
      return "an argument differs between the members of a collective call";
    case error_class::unsupported_datarep:
      return "unsupported data representation";
    case error_class::unsupported_operation:
      return "unsupported operation on this file";
    case error_class::not_open:
      return "the oneside runtime is not open";
    case error_class::intern:
      return "internal error";
    case error_class::remote:
      return "a function run on another rank threw";
  }
  return "unknown error class";
}

error::error(oneside::error_class ec, const std::string& message)
    : std::runtime_error(message), class_(ec) {}

namespace detail {

std::string format_error(error_class ec, const error_context& where, std::string_view what) {
  std::string m = "oneside: rank ";
  const rank_t r = world_rank_if_open();
  m += r >= 0 ? std::to_string(r) : std::string("-");
  m += ": ";
  m += where.call.empty() ? std::string_view("?") : where.call;
  std::string args;
  auto add = [&args](const std::string& s) {
    args += args.empty() ? "" : ", ";
    args += s;
  };
  if (where.window >= 0) add("window " + std::to_string(where.window));
  if (where.target != no_rank) add("target " + std::to_string(where.target));
  if (where.disp) add("disp " + std::to_string(*where.disp));
  if (where.bytes) add(std::to_string(*where.bytes) + " bytes");
  if (!args.empty()) m += " (" + args + ")";
  m += ": ";
  m += what.empty() ? error_class_description(ec) : what;
  m += " [";
  m += error_class_name(ec);
  if (!where.rule.empty()) {
    m += ", ";
    m += where.rule;
  }
  m += "]";
  return m;
}

void raise(error_class ec, const error_context& where, std::string_view what) {
  throw error(ec, format_error(ec, where, what));
}

void raise_system(std::string_view call, std::string_view what, int err) {
  std::string w(what);
  w += ": ";
  w += std::strerror(err);
  raise(error_class::intern, error_context{.call = call}, w);
}

}  // namespace detail
}  // namespace oneside
