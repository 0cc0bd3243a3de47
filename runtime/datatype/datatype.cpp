// The datatype handle, the table of predefined datatypes and the names and sizes of the
// basic types. The derived constructors are in derived.cpp.
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <oneside/runtime/datatype.hpp>

#include "datatype/basic_types.hpp"
#include "runtime/check.hpp"
#include "runtime/datatype_impl.hpp"

namespace oneside {
namespace detail {

datatype datatype_impl::make_handle(std::shared_ptr<const datatype_impl> impl) noexcept {
  return datatype(std::move(impl));
}

namespace {

// Appends a run, merging it into the last one when it continues it in memory.
void append_run(std::vector<byte_run>& runs, byte_run r) {
  if (r.length == 0) return;
  if (!runs.empty()) {
    byte_run& last = runs.back();
    if (last.offset + static_cast<std::ptrdiff_t>(last.length) == r.offset) {
      last.length += r.length;
      return;
    }
  }
  runs.push_back(r);
}

// The data bytes of one element of T: the whole object, or a pair's value and index
// (value_index<short> has a hole between them, value_index<double> padding after them).
template <class T>
std::vector<byte_run> data_runs_of() {
  std::vector<byte_run> runs;
  if constexpr (is_value_index_v<T>) {
    append_run(runs, byte_run{0, sizeof(T::value)});
    append_run(runs, byte_run{static_cast<std::ptrdiff_t>(offsetof(T, index)), sizeof(T::index)});
  } else {
    append_run(runs, byte_run{0, sizeof(T)});
  }
  return runs;
}

template <std::size_t I>
datatype make_predefined() {
  using T = basic_cpp_type_at<I>;
  constexpr auto t = static_cast<basic_type>(I);
  auto impl = std::make_shared<datatype_impl>();
  impl->combiner = type_combiner::predefined;
  impl->basic = t;
  impl->size = data_size_of<T>();
  impl->lb = 0;
  impl->extent = static_cast<std::ptrdiff_t>(sizeof(T));
  impl->runs = data_runs_of<T>();
  // The data starts at 0 for every predefined type; it ends where the last run ends.
  impl->true_lb = 0;
  impl->true_extent =
      impl->runs.back().offset + static_cast<std::ptrdiff_t>(impl->runs.back().length);
  impl->alignment = alignof(T);
  impl->element_runs = {element_run{0, 1}};
  impl->signature = {signature_run{t, 1}};
  impl->basic_count = 1;
  impl->contiguous = impl->runs.size() == 1 && impl->size == sizeof(T);
  impl->name = std::string(basic_type_name(t));
  return datatype_impl::make_handle(std::move(impl));
}

using predefined_array = std::array<datatype, basic_type_count>;

template <std::size_t... Is>
predefined_array make_predefined_array(std::index_sequence<Is...>) {
  return predefined_array{make_predefined<Is>()...};
}

// Holds a T that is never destroyed (like absl::NoDestructor): predefined datatypes must
// stay valid in static destructors and in threads that outlive main.
template <class T>
class immortal {
 public:
  template <class... Args>
  explicit immortal(Args&&... args) : value_(std::forward<Args>(args)...) {}
  immortal(const immortal&) = delete;
  immortal& operator=(const immortal&) = delete;
  ~immortal() {}  // deliberately leaves value_ alive
  const T& get() const noexcept { return value_; }

 private:
  union {
    T value_;
  };
};

template <std::size_t... Is>
constexpr std::array<std::size_t, sizeof...(Is)> data_sizes(std::index_sequence<Is...>) {
  return {data_size_of<basic_cpp_type_at<Is>>()...};
}

template <std::size_t... Is>
constexpr std::array<std::size_t, sizeof...(Is)> extents(std::index_sequence<Is...>) {
  return {sizeof(basic_cpp_type_at<Is>)...};
}

template <std::size_t... Is>
constexpr std::array<std::size_t, sizeof...(Is)> alignments(std::index_sequence<Is...>) {
  return {alignof(basic_cpp_type_at<Is>)...};
}

template <class T>
constexpr basic_type value_type_of() noexcept {
  if constexpr (is_value_index_v<T>) {
    return basic_type_v<decltype(T::value)>;
  } else {
    return basic_type_v<T>;
  }
}

template <std::size_t... Is>
constexpr std::array<basic_type, sizeof...(Is)> value_types(std::index_sequence<Is...>) {
  return {value_type_of<basic_cpp_type_at<Is>>()...};
}

constexpr auto basic_data_sizes = data_sizes(std::make_index_sequence<basic_type_count>{});
constexpr auto basic_extents = extents(std::make_index_sequence<basic_type_count>{});
constexpr auto basic_alignments = alignments(std::make_index_sequence<basic_type_count>{});
constexpr auto pair_value_types = value_types(std::make_index_sequence<basic_type_count>{});

}  // namespace

std::size_t basic_type_extent(basic_type t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < basic_type_count ? basic_extents[i] : 0;
}

std::size_t basic_type_alignment(basic_type t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < basic_type_count ? basic_alignments[i] : 0;
}

basic_type pair_value_type(basic_type t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < basic_type_count ? pair_value_types[i] : t;
}

bool is_pair_type(basic_type t) noexcept {
  return pair_value_type(t) != t;
}

}  // namespace detail

const datatype& datatype::predefined(basic_type t) noexcept {
  // Built on first use (thread-safe static initialisation); allocation failure here
  // terminates, which is acceptable for a table of a few hundred bytes built at startup.
  static const detail::immortal<detail::predefined_array> table(
      detail::make_predefined_array(std::make_index_sequence<basic_type_count>{}));
  const auto i = static_cast<std::size_t>(t);
  ONESIDE_ASSERT(i < basic_type_count);
  return table.get()[i];
}

datatype::datatype(std::shared_ptr<const detail::datatype_impl> impl) noexcept
    : impl_(std::move(impl)) {
  if (impl_ != nullptr) {
    summary_ = summary{impl_->size,      impl_->extent,          impl_->basic_count,
                       impl_->basic,     impl_->is_predefined(), impl_->contiguous,
                       impl_->is_mixed()};
  }
}

std::ptrdiff_t datatype::lb() const noexcept {
  return impl_->lb;
}
std::ptrdiff_t datatype::true_lb() const noexcept {
  return impl_->true_lb;
}
std::ptrdiff_t datatype::true_extent() const noexcept {
  return impl_->true_extent;
}
std::string_view datatype::name() const noexcept {
  return impl_->name;
}

std::string_view basic_type_name(basic_type t) noexcept {
  switch (t) {
    case basic_type::boolean:
      return "bool";
    case basic_type::character:
      return "char";
    case basic_type::wide_character:
      return "wchar_t";
    case basic_type::char8:
      return "char8_t";
    case basic_type::char16:
      return "char16_t";
    case basic_type::char32:
      return "char32_t";
    case basic_type::signed_char:
      return "signed char";
    case basic_type::unsigned_char:
      return "unsigned char";
    case basic_type::short_int:
      return "short";
    case basic_type::unsigned_short:
      return "unsigned short";
    case basic_type::int_:
      return "int";
    case basic_type::unsigned_int:
      return "unsigned int";
    case basic_type::long_int:
      return "long";
    case basic_type::unsigned_long:
      return "unsigned long";
    case basic_type::long_long:
      return "long long";
    case basic_type::unsigned_long_long:
      return "unsigned long long";
    case basic_type::float_:
      return "float";
    case basic_type::double_:
      return "double";
    case basic_type::long_double:
      return "long double";
    case basic_type::complex_float:
      return "std::complex<float>";
    case basic_type::complex_double:
      return "std::complex<double>";
    case basic_type::complex_long_double:
      return "std::complex<long double>";
    case basic_type::byte:
      return "std::byte";
    case basic_type::float_int:
      return "value_index<float>";
    case basic_type::double_int:
      return "value_index<double>";
    case basic_type::long_int_pair:
      return "value_index<long>";
    case basic_type::int_int:
      return "value_index<int>";
    case basic_type::short_int_pair:
      return "value_index<short>";
    case basic_type::long_double_int:
      return "value_index<long double>";
    case basic_type::count_:
      break;
  }
  return "invalid basic_type";
}

std::size_t basic_type_size(basic_type t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < basic_type_count ? detail::basic_data_sizes[i] : 0;
}

}  // namespace oneside
