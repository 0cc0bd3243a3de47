// The command-line reader of the mini-apps and their MPI peers: `--name value` and
// `--name=value` options read one at a time, integers checked against a range, the first error
// kept (the apps print it and leave with status 2). Header-only and free of oneside, so the
// MPI peers in bench/peers use it too.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace oneside::apps {

template <class T>
bool parse_number(std::string_view s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && p == end;
}

// "a, b, c": the list an error message names.
inline std::string joined(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

class option_reader {
 public:
  option_reader(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next argument; false at the end or once an error is recorded.
  bool next() {
    if (!error_.empty() || ++i_ >= argc_) return false;
    name_ = argv_[i_];
    has_value_ = false;
    if (const auto eq = name_.find('='); eq != std::string_view::npos && name_.starts_with("--")) {
      value_ = name_.substr(eq + 1);
      name_ = name_.substr(0, eq);
      has_value_ = true;
    }
    return true;
  }

  // The current argument (before any '=').
  std::string_view name() const noexcept { return name_; }

  // The current option's value: after '=', else the next argument (an error at the end).
  std::optional<std::string_view> value() {
    if (has_value_) return value_;
    if (i_ + 1 >= argc_) {
      fail("option " + std::string(name_) + " needs a value");
      return std::nullopt;
    }
    return std::string_view(argv_[++i_]);
  }

  // The value as an integer in [lo, hi] into `out`; an error (out unchanged) otherwise.
  template <class T>
  void number(T& out, long long lo, long long hi) {
    const auto v = value();
    if (!v) return;
    long long x = 0;
    if (!parse_number(*v, x) || x < lo || x > hi) {
      fail("option " + std::string(name_) + ": '" + std::string(*v) + "' is not an integer in [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return;
    }
    out = static_cast<T>(x);
  }

  // The value as a real number in [lo, hi] into `out`; an error (out unchanged) otherwise
  // (a NaN is outside every range).
  template <class T>
  requires std::is_floating_point_v<T>
  void real(T& out, double lo, double hi, const char* range) {
    const auto v = value();
    if (!v) return;
    double x = 0.0;
    if (!parse_number(*v, x) || !(x >= lo && x <= hi)) {
      fail("option " + std::string(name_) + ": '" + std::string(*v) + "' is not a number in " +
           range);
      return;
    }
    out = static_cast<T>(x);
  }

  // The value, one of `known` (what `what` names in the error otherwise) into `out`.
  void choice(std::string& out, const std::vector<std::string>& known, const char* what) {
    const auto v = value();
    if (!v) return;
    for (const std::string& k : known) {
      if (k == *v) {
        out = k;
        return;
      }
    }
    fail("unknown " + std::string(what) + " '" + std::string(*v) + "' (known: " + joined(known) +
         ")");
  }

  // Records `msg` unless an error is recorded already.
  void fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
  }
  void fail_unknown() { fail("unknown option '" + std::string(name_) + "' (see --help)"); }

  // The first error, empty when every argument was accepted.
  const std::string& error() const noexcept { return error_; }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string_view name_;
  std::string_view value_;
  bool has_value_ = false;
  std::string error_;
};

}  // namespace oneside::apps
