// The untyped back of the dist_array algorithms (algorithm.hpp): their error messages and
// the byte-level collectives the typed front gathers partial results and exchanges keys with.
#include <array>
#include <string>

#include <oneside/pgas/algorithm.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>

namespace oneside::pgas::detail {
namespace {

std::string tuple(const std::size_t* v, std::size_t n) {
  std::string s = "(";
  for (std::size_t d = 0; d < n; ++d) s += (d == 0 ? "" : ", ") + std::to_string(v[d]);
  return s + ")";
}

datatype elements_of(std::size_t element) {
  return datatype::contiguous(static_cast<count_t>(element), datatype::of<std::byte>());
}

}  // namespace

void extents_differ(const char* call, std::string_view a, const std::size_t* ea, std::string_view b,
                    const std::size_t* eb, std::size_t n) {
  oneside::detail::raise(error_class::arg, {.call = call},
                         "array '" + std::string(a) + "' of extents " + tuple(ea, n) +
                             " and array '" + std::string(b) + "' of extents " + tuple(eb, n) +
                             " differ in extents");
}

void check_region(const char* call, std::string_view name, const std::size_t* ae,
                  const std::size_t* lo, const std::size_t* extents, std::size_t n) {
  for (std::size_t d = 0; d < n; ++d) {
    if (lo[d] > ae[d] || extents[d] > ae[d] - lo[d]) {
      std::array<std::size_t, 3> hi{};
      for (std::size_t k = 0; k < n; ++k) hi[k] = lo[k] + extents[k];
      oneside::detail::raise(error_class::arg, {.call = call},
                             "array '" + std::string(name) + "': the region from " + tuple(lo, n) +
                                 " to " + tuple(hi.data(), n) +
                                 " (exclusive) is outside the extents " + tuple(ae, n) +
                                 " in dimension " + std::to_string(d));
    }
  }
}

void empty_region(const char* call, std::string_view name) {
  oneside::detail::raise(
      error_class::arg, {.call = call},
      "array '" + std::string(name) + "': the region is empty, so it has no extreme element");
}

void allgather_bytes(const team& t, const void* in, std::size_t bytes, void* out) {
  allgather(t, in, static_cast<count_t>(bytes), datatype::of<std::byte>(), out);
}

void allgatherv_bytes(const team& t, const void* in, std::size_t count, std::size_t element,
                      void* out, std::span<const count_t> counts, std::span<const count_t> displs) {
  allgatherv(t, in, static_cast<count_t>(count), elements_of(element), out, counts, displs);
}

void alltoallv_bytes(const team& t, const void* in, std::span<const count_t> send_counts,
                     std::span<const count_t> send_displs, void* out,
                     std::span<const count_t> recv_counts, std::span<const count_t> recv_displs,
                     std::size_t element) {
  alltoallv(t, in, send_counts, send_displs, out, recv_counts, recv_displs, elements_of(element));
}

void alltoall_counts(const team& t, std::span<const count_t> in, std::span<count_t> out) {
  alltoall(t, in.data(), out.data(), 1, datatype::of<count_t>());
}

bool same_members(const team& a, const team& b) {
  if (a == b) return true;
  if (a.size() != b.size()) return false;
  for (rank_t r = 0; r < a.size(); ++r) {
    if (a.to_world(r) != b.to_world(r)) return false;
  }
  return true;
}

}  // namespace oneside::pgas::detail
