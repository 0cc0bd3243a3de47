// Collective buffering (two-phase I/O, as ROMIO and OMPIO do it) for the _all and _at_all forms:
// the file range the members access together is cut into one contiguous domain per aggregator
// (one member per node by default, cb_nodes of them when the hint says so); the members
// exchange their pieces with the aggregators over oneside's collectives (alltoallv), and each
// aggregator writes its domain in a few large pwrites — or, for a read, reads its members'
// requests coalesced, holes of up to 64 KiB included (data sieving), and sends each member its
// bytes back at the end. Begin does the exchange of a write and the request exchange of a read,
// then hands the aggregator's file access to the I/O thread; end waits for it, and for a read
// sends the data back. Both ends learn whether any aggregator failed.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/wait.hpp>

#include "io/file_impl.hpp"
#include "runtime/check.hpp"

namespace oneside::detail {

namespace {

constexpr offset_t sieve_gap = 64 * 1024;  // holes a read coalesces over

// The aggregators (team ranks, ascending): the first member of each node, or `cb_nodes`
// members spread evenly over the team when the hint gives that many.
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
  return out;
}

template <class T>
void put(std::byte*& p, const T& v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}

template <class T>
T take(const std::byte*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

// The bytes each member sends to or receives from each member, in one buffer (no zeroing).
struct mailbox {
  std::vector<count_t> counts;
  std::vector<count_t> displs;
  std::unique_ptr<std::byte[]> buf;
  explicit mailbox(std::size_t n) : counts(n, 0), displs(n, 0) {}
  // Lays the buffer out once counts are known.
  void allocate() {
    count_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      displs[r] = total;
      total += counts[r];
    }
    // At least one byte: alltoallv rejects null buffers even when nothing moves.
    buf = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(total) + 1);
  }
  std::byte* at(std::size_t r) const { return buf.get() + displs[r]; }
};

// alltoallv of bytes: out's part r goes to member r; returns what each member sent here.
mailbox exchange_bytes(const team& t, const mailbox& out) {
  mailbox in(out.counts.size());
  alltoall(t, out.counts.data(), in.counts.data(), 1, datatype::of<count_t>());
  in.allocate();
  alltoallv(t, out.buf.get(), out.counts, out.displs, in.buf.get(), in.counts, in.displs,
            datatype::of<std::byte>());
  return in;
}

}  // namespace

bool uses_two_phase(const file_impl& f) {
  const auto v = f.hints.get("collective_buffering");
  return v && *v == "true" && !f.atomic;  // atomic mode: each member's access stays one access
}

std::shared_ptr<two_phase> two_phase_begin(file_impl& f, file_op& mine, bool on_io_thread) {
  const team& t = f.members;
  auto s = std::make_shared<two_phase>();
  s->write = mine.write;
  s->bytes = mine.bytes;
  s->type = mine.type;
  s->count = mine.count;
  s->user = mine.user;
  s->direct = mine.direct;
  s->call = mine.call;
  // The range every member accesses together.
  std::int64_t range[2] = {std::numeric_limits<std::int64_t>::max(),
                           std::numeric_limits<std::int64_t>::max()};
  for (const file_piece& p : mine.pieces) {
    range[0] = std::min(range[0], p.at);
    range[1] = std::min(range[1], -(p.at + static_cast<offset_t>(p.len)));
  }
  std::int64_t all[2];
  allreduce(t, range, all, 2, datatype::of<std::int64_t>(), op::min);
  const std::vector<rank_t> aggs = choose_aggregators(t, f.hints);
  s->aggregators = aggs;
  if (all[0] == std::numeric_limits<std::int64_t>::max()) return s;  // nobody accesses anything
  const offset_t lo = all[0];
  const offset_t hi = -all[1];
  const auto na = static_cast<offset_t>(aggs.size());
  offset_t chunk = (hi - lo + na - 1) / na;
  if (auto su = f.hints.get("striping_unit")) {  // domains start on stripe boundaries
    const offset_t unit = std::stoll(*su);
    chunk = (chunk + unit - 1) / unit * unit;
  }
  s->lo = lo;
  s->chunk = chunk;

  // Cut this member's pieces at domain boundaries, in view order; one message per aggregator:
  // the piece count, (offset, length) pairs, then (writes) the data.
  const std::byte* data = mine.direct != nullptr ? mine.direct : mine.staging.data();
  const std::size_t n = static_cast<std::size_t>(t.size());
  struct cut {
    file_piece piece;
    std::uint64_t src;  // where its data is in this member's packed data
  };
  std::vector<std::vector<cut>> per(aggs.size());
  std::uint64_t done = 0;
  for (const file_piece& p : mine.pieces) {
    offset_t at = p.at;
    std::size_t left = p.len;
    while (left > 0) {
      const auto d = static_cast<std::size_t>((at - lo) / chunk);
      const offset_t end = lo + static_cast<offset_t>(d + 1) * chunk;
      const std::size_t len = std::min<std::size_t>(left, static_cast<std::size_t>(end - at));
      per[d].push_back({{at, len}, done});
      s->mine.push_back({d, per[d].size() - 1, len});
      done += len;
      at += static_cast<offset_t>(len);
      left -= len;
    }
  }
  mailbox out(n);
  for (std::size_t d = 0; d < aggs.size(); ++d) {
    if (per[d].empty()) continue;
    count_t bytes = 8 + 16 * static_cast<count_t>(per[d].size());
    if (s->write) {
      for (const cut& c : per[d]) bytes += static_cast<count_t>(c.piece.len);
    }
    out.counts[static_cast<std::size_t>(aggs[d])] = bytes;
  }
  out.allocate();
  for (std::size_t d = 0; d < aggs.size(); ++d) {
    if (per[d].empty()) continue;
    std::byte* m = out.at(static_cast<std::size_t>(aggs[d]));
    const std::uint64_t k = per[d].size();
    put(m, k);
    for (const cut& c : per[d]) {
      put(m, c.piece.at);
      put(m, static_cast<std::uint64_t>(c.piece.len));
    }
    if (!s->write) continue;
    for (const cut& c : per[d]) {
      std::memcpy(m, data + c.src, c.piece.len);
      m += c.piece.len;
    }
  }
  const mailbox got = exchange_bytes(t, out);

  const auto me = std::find(aggs.begin(), aggs.end(), t.rank());
  if (me == aggs.end()) return s;
  // The aggregator: every member's pieces of this domain.
  struct incoming {
    file_piece piece;
    const std::byte* data;
  };
  std::vector<incoming> pieces;
  s->requests.resize(n);
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (got.counts[r] == 0) continue;
    const std::byte* p = got.at(r);
    const auto k = take<std::uint64_t>(p);
    for (std::uint64_t i = 0; i < k; ++i) {
      const auto at = take<offset_t>(p);
      const auto len = take<std::uint64_t>(p);
      s->requests[r].push_back({at, static_cast<std::size_t>(len)});
    }
    for (const file_piece& q : s->requests[r]) {
      pieces.push_back({q, p});
      if (s->write) p += q.len;
      total += q.len;
    }
  }
  auto op = std::make_shared<file_op>();
  op->write = s->write;
  op->fd = f.fd;
  op->call = s->call;
  op->path = f.path;
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const incoming& a, const incoming& b) { return a.piece.at < b.piece.at; });
  if (s->write) {
    op->staging.reserve(total);
    // Adjacent pieces become one write; overlapping ones (undefined in the spec) are written
    // one after the other, in rank order.
    for (const incoming& in : pieces) {
      if (!op->pieces.empty() &&
          op->pieces.back().at + static_cast<offset_t>(op->pieces.back().len) == in.piece.at) {
        op->pieces.back().len += in.piece.len;
      } else {
        op->pieces.push_back(in.piece);
      }
      op->staging.insert(op->staging.end(), in.data, in.data + in.piece.len);
    }
  } else {
    // The spans to read: requests merged, holes up to sieve_gap read and dropped.
    for (const incoming& in : pieces) {
      const offset_t end = in.piece.at + static_cast<offset_t>(in.piece.len);
      if (!op->pieces.empty() && in.piece.at <= op->pieces.back().at +
                                                    static_cast<offset_t>(op->pieces.back().len) +
                                                    sieve_gap) {
        file_piece& b = op->pieces.back();
        b.len = static_cast<std::size_t>(std::max(b.at + static_cast<offset_t>(b.len), end) - b.at);
      } else {
        op->pieces.push_back(in.piece);
      }
    }
    std::size_t span = 0;
    for (const file_piece& p : op->pieces) span += p.len;
    op->staging.resize(span);
  }
  op->bytes = op->staging.size();
  op->count = static_cast<count_t>(op->bytes);
  op->direct = op->staging.data();  // the aggregator's own buffer: nothing to unpack
  s->agg = op;
  if (on_io_thread) f.worker.submit(op);  // otherwise end runs it on the caller's thread
  s->submitted = on_io_thread;
  return s;
}

io_status two_phase_end(file_impl& f, two_phase& s) {
  const team& t = f.members;
  if (s.agg && !s.submitted) {
    run_file_op(*s.agg);
  } else if (s.agg) {
    file_op* p = s.agg.get();
    wait_until([p] { return p->done.load(std::memory_order_acquire); });
  }
  // Every member learns whether an aggregator failed.
  const int failed = allreduce(t, s.agg && s.agg->error ? 1 : 0, op::max);
  if (failed != 0) {
    if (s.agg && s.agg->error) std::rethrow_exception(s.agg->error);
    raise(error_class::io, {.call = s.call}, "the aggregator of a collective access failed");
  }
  if (s.write) return make_status(s.type, s.bytes);

  // Reads: each aggregator sends every member, per requested piece, the bytes it read (fewer
  // at the end of the file), as [length]… then the data.
  const std::size_t n = static_cast<std::size_t>(t.size());
  mailbox reply(n);
  // Per requested piece (members in order): where its bytes are in the staging buffer, and
  // how many were read.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> where;
  if (s.agg) {
    const file_op& op = *s.agg;
    const std::uint64_t valid = static_cast<std::uint64_t>(op.status.bytes);
    // Where each span starts in the staging buffer.
    std::vector<std::uint64_t> base(op.pieces.size());
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < op.pieces.size(); ++i) {
      base[i] = at;
      at += op.pieces[i].len;
    }
    for (std::size_t r = 0; r < n; ++r) {
      count_t bytes = 0;
      for (const file_piece& q : s.requests[r]) {
        const auto it = std::upper_bound(op.pieces.begin(), op.pieces.end(), q.at,
                                         [](offset_t v, const file_piece& p) { return v < p.at; });
        const auto i = static_cast<std::size_t>(it - op.pieces.begin() - 1);
        const std::uint64_t from = base[i] + static_cast<std::uint64_t>(q.at - op.pieces[i].at);
        const std::uint64_t avail =
            from >= valid ? 0 : std::min<std::uint64_t>(q.len, valid - from);
        where.push_back({from, avail});
        bytes += 8 + static_cast<count_t>(avail);
      }
      reply.counts[r] = bytes;
    }
    reply.allocate();
    std::size_t k = 0;
    for (std::size_t r = 0; r < n; ++r) {
      std::byte* m = reply.at(r);
      const std::size_t first = k;
      for (std::size_t j = 0; j < s.requests[r].size(); ++j) put(m, where[k++].second);
      for (k = first; k < first + s.requests[r].size(); ++k) {
        std::memcpy(m, op.staging.data() + where[k].first, where[k].second);
        m += where[k].second;
      }
    }
  } else {
    reply.allocate();
  }
  const mailbox got = exchange_bytes(t, reply);
  // Reassemble this member's data in view order, up to the first piece cut by the end of file.
  std::vector<std::size_t> count_from(s.aggregators.size(), 0);
  for (const auto& m : s.mine) count_from[m.domain] = std::max(count_from[m.domain], m.index + 1);
  std::vector<const std::byte*> lengths(s.aggregators.size());
  std::vector<const std::byte*> cursor(s.aggregators.size());
  for (std::size_t d = 0; d < s.aggregators.size(); ++d) {
    const auto a = static_cast<std::size_t>(s.aggregators[d]);
    if (got.counts[a] == 0) continue;
    lengths[d] = got.at(a);
    cursor[d] = got.at(a) + count_from[d] * sizeof(std::uint64_t);
  }
  std::vector<std::byte> packed;
  std::byte* out = s.direct;
  if (out == nullptr) {
    packed.resize(s.bytes);
    out = packed.data();
  }
  std::uint64_t done = 0;
  for (const auto& m : s.mine) {
    const std::byte* lp = lengths[m.domain] + m.index * sizeof(std::uint64_t);
    const auto avail = take<std::uint64_t>(lp);
    std::memcpy(out + done, cursor[m.domain], avail);
    cursor[m.domain] += avail;
    done += avail;
    if (avail < m.len) break;
  }
  if (s.direct == nullptr) unpack_prefix(s.type, s.count, packed.data(), done, s.user);
  return make_status(s.type, done);
}

}  // namespace oneside::detail
