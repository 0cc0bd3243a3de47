// --tag-output: forwards one output stream of one rank (its stdout or its stderr, read from
// a pipe) to the launcher's own stream, prefixing every line with "[rank] ". Lines are
// written whole, so lines of different ranks never mix; a last line without a newline is
// still forwarded (with one added) when the rank closes the pipe.
#pragma once

#include <string>
#include <string_view>

#include "launcher/unique_fd.hpp"

namespace oneside::launcher {

class line_tagger {
 public:
  // `source`: the read end of the rank's pipe (made non-blocking here); `sink`: 1 or 2.
  line_tagger(int rank, unique_fd source, int sink);

  // The descriptor to poll, or -1 once the rank closed its end.
  int fd() const noexcept { return source_.get(); }
  bool is_open() const noexcept { return static_cast<bool>(source_); }
  // Reads what is there (once, so one busy rank cannot starve the others) and forwards the
  // complete lines; at end of file, forwards the partial line and closes.
  void on_readable();

 private:
  void forward_line(std::string& out, std::string_view line) const;
  void emit(const std::string& text) noexcept;

  std::string prefix_;
  unique_fd source_;
  int sink_;
  std::string partial_;       // the start of a line whose end has not arrived yet
  bool sink_broken_ = false;  // our reader went away: keep draining, stop writing
};

}  // namespace oneside::launcher
