// Collective buffering (two-phase I/O, as ROMIO and OMPIO do it) for the _all and _at_all forms.
// The file range the members access together is cut into one contiguous domain per aggregator
// (one member per node by default, every member of a team on one node, cb_nodes of them when
// the hint says so), and each domain into rounds of cb_buffer_size bytes (1 MiB by default). Each
// aggregator keeps a buffer of two such halves in exposed memory for the life of the file (made by
// the first collectively buffered call). Writes: in each round every member puts its pieces of that
// round straight into the aggregators' halves with the transport's gather-scatter put (one copy, no
// staging), a barrier closes the round, and the aggregator hands the half to its I/O thread,
// which writes each covered span with one pwrite while the members fill the other half. Reads
// the other way round: the I/O thread reads the next round's spans (holes of up to 64 KiB read
// through: data sieving) while the members get this round's pieces out of the other half.
// Which file bytes each round covers the aggregators learn once per call, from one exchange of
// (offset, length) lists; rounds nobody accesses are skipped. Every member learns at the end
// whether any aggregator's file access failed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/wait.hpp>

#include "io/file_impl.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"

namespace oneside::detail {

namespace {

constexpr offset_t sieve_gap = 64 * 1024;  // holes a read reads through

// The aggregators (team ranks, ascending): the first member of each node (every member when
// the team is on one node), or `cb_nodes` members spread evenly over the team when the hint
// gives that many.
std::vector<rank_t> choose_aggregators(const team& t, const info& hints) {
  const int n = t.size();
  if (auto v = hints.get("cb_nodes")) {
    const long long want = std::min<long long>(std::stoll(*v), n);
    std::vector<rank_t> out;
    for (long long a = 0; a < want; ++a) out.push_back(static_cast<rank_t>(a * n / want));
    return out;
  }
  // A node is named by the lowest world rank on it.
  const rank_t node = local_team().to_world(0);
  const std::vector<rank_t> nodes = allgather(t, node);
  std::vector<rank_t> out;
  std::vector<rank_t> seen;
  for (rank_t r = 0; r < n; ++r) {
    const rank_t id = nodes[static_cast<std::size_t>(r)];
    if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
      seen.push_back(id);
      out.push_back(r);
    }
  }
  // A team on one node writes through the node's page cache, whose copies scale with the
  // cores: every member aggregates (one aggregator measured 2-3x slower, bench/run_io.py).
  if (seen.size() == 1) {
    out.clear();
    for (rank_t r = 0; r < n; ++r) out.push_back(r);
  }
  return out;
}

// Collective: makes the file's aggregators and their buffers, once. When an aggregator cannot
// get its buffer, every member raises its error class (nothing is left half made).
void ensure_buffers(file_impl& f, std::string_view call) {
  cb_state& cb = f.cb;
  if (cb.ready) return;
  const team& t = f.members;
  cb.aggregators = choose_aggregators(t, f.hints);
  cb.half = stage_half(f);
  const bool me =
      std::find(cb.aggregators.begin(), cb.aggregators.end(), t.rank()) != cb.aggregators.end();
  // {address, error class + 1}
  std::uint64_t mine[2] = {0, 0};
  std::string why;
  if (me) {
    try {
      cb.own = transport::current(call).allocate_segment(2 * cb.half, {.call = call});
      mine[0] = cb.own.address();
    } catch (const oneside::error& e) {
      mine[1] = static_cast<std::uint64_t>(e.error_class()) + 1;
      why = e.what();
    }
  }
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(t.size()));
  allgather(t, mine, 2, datatype::of<std::uint64_t>(), all.data());
  for (rank_t r = 0; r < t.size(); ++r) {
    const std::uint64_t ec = all[2 * static_cast<std::size_t>(r) + 1];
    if (ec == 0) continue;
    cb.own = transport::segment();
    f.fail(static_cast<error_class>(ec - 1), call,
           "aggregator " + std::to_string(r) + " cannot allocate its collective buffer of " +
               std::to_string(2 * cb.half) + " bytes" + (why.empty() ? "" : ": " + why));
  }
  for (rank_t a : cb.aggregators) {
    cb.world.push_back(t.to_world(a));
    cb.addr.push_back(static_cast<std::uintptr_t>(all[2 * static_cast<std::size_t>(a)]));
  }
  cb.ready = true;
}

// Merges the members' (offset, length) lists at an aggregator into the sorted, disjoint spans its
// domain accesses, joining spans at most `gap` bytes apart. Each member's list comes in view
// order, which is file order (set_view admits monotone filetypes only), so a k-way merge does:
// linear in the pieces for the few members of a node (sorting them all took 15 ms of a 0.18 s
// write of 1 GiB in 4 KiB pieces).
void merge_spans(cb_scratch& x, const std::vector<count_t>& in_bytes,
                 const std::vector<count_t>& in_displ, offset_t gap) {
  // Member r's pairs are x.in_list[next[r]], [next[r] + 1], … up to end[r].
  const std::size_t n = in_bytes.size();
  std::vector<std::size_t> next(n);
  std::vector<std::size_t> end(n);
  std::vector<std::size_t> heap;  // members with pairs left, the lowest next offset on top
  for (std::size_t r = 0; r < n; ++r) {
    next[r] = static_cast<std::size_t>(in_displ[r] / 8);
    end[r] = next[r] + static_cast<std::size_t>(in_bytes[r] / 8);
    if (next[r] < end[r]) heap.push_back(r);
  }
  const auto later = [&](std::size_t a, std::size_t b) {
    return x.in_list[next[a]] > x.in_list[next[b]];
  };
  std::make_heap(heap.begin(), heap.end(), later);
  x.spans.clear();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const std::size_t r = heap.back();
    const offset_t at = x.in_list[next[r]];
    const offset_t stop = at + x.in_list[next[r] + 1];
    next[r] += 2;
    if (next[r] < end[r]) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
    }
    if (!x.spans.empty() &&
        at <= x.spans.back().at + static_cast<offset_t>(x.spans.back().len) + gap) {
      file_piece& last = x.spans.back();
      last.len = static_cast<std::size_t>(
          std::max(last.at + static_cast<offset_t>(last.len), stop) - last.at);
    } else {
      x.spans.push_back({at, static_cast<std::size_t>(stop - at)});
    }
  }
}

// The byte ranges of `spans` (sorted, disjoint) inside [lo, hi), clipped.
template <class F>
void spans_in(const std::vector<file_piece>& spans, std::size_t& cursor, offset_t lo, offset_t hi,
              F&& fn) {
  while (cursor < spans.size() &&
         spans[cursor].at + static_cast<offset_t>(spans[cursor].len) <= lo) {
    ++cursor;
  }
  for (std::size_t i = cursor; i < spans.size() && spans[i].at < hi; ++i) {
    const offset_t a = std::max(lo, spans[i].at);
    const offset_t b = std::min(hi, spans[i].at + static_cast<offset_t>(spans[i].len));
    if (a < b) fn(file_piece{a, static_cast<std::size_t>(b - a)});
  }
}

}  // namespace

bool uses_two_phase(const file_impl& f, bool write) {
  if (f.atomic) return false;  // atomic mode: each member's access stays one access
  const auto v = f.hints.get("collective_buffering");
  if (v) return *v == "true";
  return f.view_interleaved && (write ? f.writes_two_phase : f.reads_two_phase);
}

std::atomic<int> cb_reads_for_testing{0};

std::int64_t kernel_entry_ns() noexcept {
  static const std::int64_t ns = [] {
    std::array<std::int64_t, 5> batch{};
    for (std::int64_t& b : batch) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 64; ++i) (void)::syscall(SYS_getppid);  // not cached by the C library
      b = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                               t0)
              .count() /
          64;
    }
    std::nth_element(batch.begin(), batch.begin() + 2, batch.end());
    return batch[2];
  }();
  return ns;
}

bool cb_reads_on_one_node() {
  if (const int forced = cb_reads_for_testing.load(); forced != 0) return forced == 1;
  static const bool on = [] {
    const std::string s = setting_string("ONESIDE_IO_CB_READS");
    if (s == "always") return true;
    if (s == "across-nodes") return false;
    return kernel_entry_ns() >= kernel_entry_costly_ns;
  }();
  return on;
}

std::atomic<std::int64_t> two_phase_accesses_for_testing{0};

std::shared_ptr<two_phase> two_phase_begin(file_impl& f, file_op& mine) {
  two_phase_accesses_for_testing.fetch_add(1, std::memory_order_relaxed);
  const team& t = f.members;
  ensure_buffers(f, mine.call);
  const cb_state& cb = f.cb;
  transport::backend& tp = transport::current(mine.call);
  auto s = std::make_shared<two_phase>();
  s->write = mine.write;
  s->bytes = mine.bytes;
  s->type = mine.type;
  s->count = mine.count;
  s->user = mine.user;
  s->call = mine.call;
  std::byte* data = mine.direct;
  if (data == nullptr && mine.write) data = mine.staging.data();
  if (data == nullptr) {  // a read into non-contiguous memory: packed here, unpacked at end
    s->packed = std::move(mine.staging);
    data = s->packed.data();
  }

  // The range every member accesses together, and (reads) the file's size.
  std::int64_t range[3] = {std::numeric_limits<std::int64_t>::max(),
                           std::numeric_limits<std::int64_t>::max(),
                           std::numeric_limits<std::int64_t>::max()};
  for (const file_piece& p : mine.pieces) {
    range[0] = std::min(range[0], p.at);
    range[1] = std::min(range[1], -(p.at + static_cast<offset_t>(p.len)));
  }
  if (!s->write) {
    struct stat st {};
    range[2] = ::fstat(f.fd, &st) == 0 ? st.st_size : 0;
  }
  std::int64_t all[3];
  allreduce(t, range, all, 3, datatype::of<std::int64_t>(), op::min);
  if (all[0] == std::numeric_limits<std::int64_t>::max()) return s;  // nobody accesses anything
  const offset_t lo = all[0];
  const offset_t hi = -all[1];
  const offset_t file_size = all[2];
  const auto na = static_cast<offset_t>(cb.aggregators.size());
  offset_t chunk = (hi - lo + na - 1) / na;
  if (auto su = f.hints.get("striping_unit")) {  // domains start on stripe boundaries
    const offset_t unit = std::stoll(*su);
    chunk = (chunk + unit - 1) / unit * unit;
  }
  const auto half = static_cast<offset_t>(cb.half);
  const offset_t rounds = (chunk + half - 1) / half;  // per domain

  // This member's pieces cut at domain and round boundaries; counted per round.
  cb_scratch& x = f.cb.scratch;
  std::vector<cb_cut>& cuts = x.cuts;
  cuts.clear();
  cuts.reserve(mine.pieces.size());
  x.per_round.assign(static_cast<std::size_t>(rounds), 0);
  std::vector<std::int64_t>& per_round = x.per_round;
  std::vector<count_t> list_bytes(static_cast<std::size_t>(t.size()), 0);
  std::uint64_t src = 0;
  for (const file_piece& p : mine.pieces) {
    offset_t at = p.at;
    std::size_t left = p.len;
    while (left > 0) {
      const offset_t d = (at - lo) / chunk;
      const offset_t k = (at - lo - d * chunk) / half;
      const offset_t end = std::min(lo + (d + 1) * chunk, lo + d * chunk + (k + 1) * half);
      const std::size_t len = std::min<std::size_t>(left, static_cast<std::size_t>(end - at));
      cuts.push_back({static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(k), at, len, src});
      ++per_round[static_cast<std::size_t>(k)];
      list_bytes[static_cast<std::size_t>(cb.aggregators[static_cast<std::size_t>(d)])] += 16;
      src += len;
      at += static_cast<offset_t>(len);
      left -= len;
    }
  }
  // Which rounds anybody uses.
  std::vector<std::int64_t>& used = x.used;
  used.resize(per_round.size());
  allreduce(t, per_round.data(), used.data(), static_cast<count_t>(per_round.size()),
            datatype::of<std::int64_t>(), op::sum);
  std::vector<std::uint32_t> live;
  for (std::size_t k = 0; k < used.size(); ++k) {
    if (used[k] > 0) live.push_back(static_cast<std::uint32_t>(k));
  }

  // The aggregators learn which bytes of their domains are accessed: (offset, length) lists.
  const std::size_t n = static_cast<std::size_t>(t.size());
  std::vector<count_t> in_bytes(n);
  alltoall(t, list_bytes.data(), in_bytes.data(), 1, datatype::of<count_t>());
  std::vector<count_t> out_displ(n, 0);
  std::vector<count_t> in_displ(n, 0);
  for (std::size_t r = 1; r < n; ++r) {
    out_displ[r] = out_displ[r - 1] + list_bytes[r - 1];
    in_displ[r] = in_displ[r - 1] + in_bytes[r - 1];
  }
  std::vector<std::int64_t>& out_list = x.out_list;
  std::vector<std::int64_t>& in_list = x.in_list;
  out_list.resize(static_cast<std::size_t>((out_displ[n - 1] + list_bytes[n - 1]) / 8) + 1);
  in_list.resize(static_cast<std::size_t>((in_displ[n - 1] + in_bytes[n - 1]) / 8) + 1);
  {
    std::vector<count_t> fill = out_displ;
    for (const cb_cut& c : cuts) {
      const auto r = static_cast<std::size_t>(cb.aggregators[c.domain]);
      std::int64_t* w = out_list.data() + fill[r] / 8;
      w[0] = c.at;
      w[1] = static_cast<std::int64_t>(c.len);
      fill[r] += 16;
    }
  }
  alltoallv(t, out_list.data(), list_bytes, out_displ, in_list.data(), in_bytes, in_displ,
            datatype::of<std::byte>());
  // At an aggregator: the accessed spans of its domain, sorted and merged (reads: through
  // holes up to sieve_gap).
  const auto me = std::find(cb.aggregators.begin(), cb.aggregators.end(), t.rank());
  const bool aggregator = me != cb.aggregators.end();
  const offset_t my_domain = aggregator ? lo + (me - cb.aggregators.begin()) * chunk : 0;
  x.spans.clear();
  if (aggregator) merge_spans(x, in_bytes, in_displ, s->write ? 0 : sieve_gap);
  const std::vector<file_piece>& spans = x.spans;
  std::size_t span_cursor = 0;
  auto* own_buf = static_cast<std::byte*>(cb.own.base());
  // The aggregator's file access of round k into or out of half h (on the I/O thread).
  auto submit_round = [&](std::uint32_t k, std::size_t h) {
    auto op = std::make_shared<file_op>();
    op->write = s->write;
    op->fd = f.fd;
    op->call = s->call;
    op->path = f.path;
    const offset_t wlo = my_domain + static_cast<offset_t>(k) * half;
    const offset_t whi = std::min(wlo + half, my_domain + chunk);
    spans_in(spans, span_cursor, wlo, whi, [&](const file_piece& p) {
      op->pieces.push_back(p);
      op->bytes += p.len;
    });
    if (op->pieces.empty()) return std::shared_ptr<file_op>();
    op->count = static_cast<count_t>(op->bytes);
    op->direct = own_buf + h * cb.half;
    op->mapped_base = wlo;
    f.worker.submit(op);
    s->pending.push_back(op);
    return op;
  };
  auto wait_op = [&](const std::shared_ptr<file_op>& op) {
    if (!op) return;
    file_op* p = op.get();
    wait_until([p] { return p->done.load(std::memory_order_acquire); });
    if (p->error && !s->error) s->error = p->error;
  };

  // The rounds. This member's cuts are walked once per round: indexed by round first (a
  // counting sort, in view order within each round, which is file order within each domain).
  x.round_first.assign(static_cast<std::size_t>(rounds) + 1, 0);
  for (std::size_t k = 0; k < per_round.size(); ++k) {
    x.round_first[k + 1] = x.round_first[k] + static_cast<std::size_t>(per_round[k]);
  }
  x.by_round.resize(cuts.size());
  {
    std::vector<std::size_t> fill(x.round_first.begin(), x.round_first.end() - 1);
    for (std::uint32_t i = 0; i < cuts.size(); ++i) x.by_round[fill[cuts[i].round]++] = i;
  }
  std::vector<transport::const_iov> lw;
  std::vector<transport::mutable_iov> lr;
  std::vector<transport::remote_iov> rem;
  // Moves this member's cuts of round k into (write) or out of (read) half h of each aggregator.
  auto exchange = [&](std::uint32_t k, std::size_t h) {
    const std::uint32_t* first = x.by_round.data() + x.round_first[k];
    const std::uint32_t* last = x.by_round.data() + x.round_first[k + 1];
    for (std::size_t d = 0; d < cb.aggregators.size(); ++d) {
      lw.clear();
      lr.clear();
      rem.clear();
      const offset_t wlo = lo + static_cast<offset_t>(d) * chunk + static_cast<offset_t>(k) * half;
      const std::uintptr_t base = cb.addr[d] + h * cb.half;
      for (const std::uint32_t* i = first; i != last; ++i) {
        const cb_cut& c = cuts[*i];
        if (c.domain != d) continue;
        std::size_t len = c.len;
        if (!s->write) {  // only what lies before the end of the file
          const offset_t avail = std::max<offset_t>(0, file_size - c.at);
          len = static_cast<std::size_t>(std::min<offset_t>(avail, static_cast<offset_t>(len)));
          if (len == 0) continue;
        }
        const std::uintptr_t to = base + static_cast<std::uintptr_t>(c.at - wlo);
        if (!rem.empty() && rem.back().addr + rem.back().len == to &&
            (s->write ? lw.back().base + lw.back().len == data + c.src
                      : lr.back().base + lr.back().len == data + c.src)) {
          rem.back().len += len;
          if (s->write) {
            lw.back().len += len;
          } else {
            lr.back().len += len;
          }
          continue;
        }
        rem.push_back({to, len});
        if (s->write) {
          lw.push_back({data + c.src, len});
        } else {
          lr.push_back({data + c.src, len});
        }
      }
      if (rem.empty()) continue;
      if (s->write) {
        tp.putv(cb.world[d], lw, rem);
      } else {
        tp.getv(cb.world[d], lr, rem);
      }
    }
    if (s->write) tp.flush_all();
  };

  std::shared_ptr<file_op> previous;  // the aggregator's access of the previous round
  if (s->write) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      exchange(live[i], i % 2);
      // The round's data is in place everywhere, and the other half is free again.
      if (aggregator) wait_op(previous);
      barrier(t);
      if (aggregator) previous = submit_round(live[i], i % 2);
    }
  } else {
    if (aggregator && !live.empty()) previous = submit_round(live[0], 0);
    for (std::size_t i = 0; i < live.size(); ++i) {
      // The round's data is in its half, and every member is done with the other half.
      if (aggregator) wait_op(previous);
      barrier(t);
      if (aggregator && i + 1 < live.size()) previous = submit_round(live[i + 1], (i + 1) % 2);
      exchange(live[i], i % 2);
    }
    // What this member got: its pieces up to the first one the end of the file cuts.
    for (const file_piece& p : mine.pieces) {
      const offset_t avail = std::max<offset_t>(0, file_size - p.at);
      const std::size_t got =
          static_cast<std::size_t>(std::min<offset_t>(avail, static_cast<offset_t>(p.len)));
      s->delivered += got;
      if (got < p.len) break;
    }
  }
  return s;
}

io_status two_phase_end(file_impl& f, two_phase& s) {
  for (const auto& op : s.pending) {
    file_op* p = op.get();
    wait_until([p] { return p->done.load(std::memory_order_acquire); });
    if (p->error && !s.error) s.error = p->error;
  }
  // Every member learns whether an aggregator failed.
  const int failed = allreduce(f.members, s.error ? 1 : 0, op::max);
  if (failed != 0) {
    if (s.error) std::rethrow_exception(s.error);
    raise(error_class::io, {.call = s.call}, "the aggregator of a collective access failed");
  }
  if (s.write) return make_status(s.type, s.bytes);
  if (!s.packed.empty()) unpack_prefix(s.type, s.count, s.packed.data(), s.delivered, s.user);
  return make_status(s.type, s.delivered);
}

}  // namespace oneside::detail
