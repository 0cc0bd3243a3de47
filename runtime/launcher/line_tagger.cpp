// Line-by-line forwarding with a rank prefix.
#include "launcher/line_tagger.hpp"

#include <cerrno>

#include "runtime/check.hpp"

namespace oneside::launcher {
namespace {
// A line longer than this is forwarded in pieces, each with its own prefix, rather than
// held back without bound.
constexpr std::size_t max_line = 64 * 1024;
}  // namespace

line_tagger::line_tagger(int rank, unique_fd source, int sink)
    : source_(std::move(source)), sink_(sink) {
  prefix_.append("[").append(std::to_string(rank)).append("] ");
  set_nonblocking(source_.get());
}

void line_tagger::forward_line(std::string& out, std::string_view line) const {
  out.append(prefix_).append(line).append("\n");
}

void line_tagger::on_readable() {
  char buf[16384];
  const ssize_t n = ::read(source_.get(), buf, sizeof buf);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    // Any other error ends this stream like end of file does.
  }
  std::string out;
  if (n <= 0) {
    if (!partial_.empty()) forward_line(out, partial_);
    partial_.clear();
    source_.reset();
    emit(out);
    return;
  }
  std::string_view chunk(buf, static_cast<std::size_t>(n));
  for (std::size_t nl = chunk.find('\n'); nl != std::string_view::npos; nl = chunk.find('\n')) {
    partial_.append(chunk.substr(0, nl));
    forward_line(out, partial_);
    partial_.clear();
    chunk.remove_prefix(nl + 1);
  }
  partial_.append(chunk);
  if (partial_.size() >= max_line) {
    forward_line(out, partial_);
    partial_.clear();
  }
  emit(out);
}

void line_tagger::emit(const std::string& text) noexcept {
  if (text.empty() || sink_broken_) return;
  if (write_all(sink_, text.data(), text.size()) != 0) sink_broken_ = true;
}

}  // namespace oneside::launcher
