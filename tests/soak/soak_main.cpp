// oneside_soak: the soak workloads (soak_workload.hpp) for as long as asked, printing the
// largest resident set over the ranks as they go (rank 0 prints). scripts/soak.sh runs it.
//
//   oneside-run -n 4 oneside_soak mixed --seconds 60 [--every 5]
//       mixed traffic with window churn for 60 s; a line every 5 s
//   oneside-run -n 4 oneside_soak windows --count 10000 [--every 1000]
//       10,000 windows made and freed; a line every 1,000
//   oneside-run -n 8 oneside_soak splits --count 5000 [--every 1000]
//       5,000 splits of the world, each team used once and dropped
//   oneside-run -n 4 oneside_soak reopen --count 200 [--every 20]
//       the runtime opened and closed 200 times, with windows and a split each time
//
// Each line: the elapsed time, the rounds (cycles, splits) so far, and the largest VmRSS and
// VmHWM over the ranks in MiB. The last line also gives the growth since the first line (taken
// after a warm-up of one step). Exit status 1 when a value read back was wrong.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <oneside/oneside.hpp>

#include "soak_workload.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string mode = "mixed";
  double seconds = 60;
  long count = 0;
  double every = 0;  // seconds (mixed) or rounds (windows, splits); 0: a default
};

int usage() {
  std::fprintf(stderr,
               "usage: oneside_soak mixed [--seconds S] [--every S]\n"
               "       oneside_soak windows|splits|reopen [--count N] [--every N]\n");
  return 2;
}

bool parse(int argc, char** argv, options& o) {
  int i = 1;
  if (i < argc && argv[i][0] != '-') o.mode = argv[i++];
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--seconds") {
      o.seconds = std::strtod(v, nullptr);
    } else if (a == "--count") {
      o.count = std::strtol(v, nullptr, 10);
    } else if (a == "--every") {
      o.every = std::strtod(v, nullptr);
    } else {
      return false;
    }
  }
  return o.mode == "mixed" || o.mode == "windows" || o.mode == "splits" || o.mode == "reopen";
}

// Prints one line on rank 0 (collective); returns the largest VmRSS over the ranks in KiB.
long report(const oneside::runtime& rt, double elapsed, long rounds, long first_kib) {
  const oneside::soak::rss_kib r = oneside::soak::read_rss();
  const long rss = oneside::allreduce(oneside::world(), r.current, oneside::op::max);
  const long hwm = oneside::allreduce(oneside::world(), r.peak, oneside::op::max);
  if (rt.rank() == 0) {
    std::printf("%8.1f s %8ld rounds  rss %7.1f MiB  hwm %7.1f MiB", elapsed, rounds,
                static_cast<double>(rss) / 1024, static_cast<double>(hwm) / 1024);
    if (first_kib > 0) {
      std::printf("  growth %+7.1f MiB", static_cast<double>(rss - first_kib) / 1024);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return rss;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return usage();
  const auto start = clock_type::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  };
  if (o.mode == "reopen") {
    // The runtime is opened and closed by the workload itself.
    const long count = o.count > 0 ? o.count : 200;
    const long every = o.every > 0 ? static_cast<long>(o.every) : 20;
    const std::vector<long> rss =
        oneside::soak::reopen_cycles(static_cast<int>(count), static_cast<int>(every));
    bool first_rank = true;
    {
      oneside::runtime rt(argc, argv);
      first_rank = rt.rank() == 0;
    }
    if (first_rank) {
      for (std::size_t i = 0; i < rss.size(); ++i) {
        std::printf("%8ld opens  rss %7.1f MiB  growth %+7.1f MiB\n",
                    static_cast<long>(i + 1) * every, static_cast<double>(rss[i]) / 1024,
                    static_cast<double>(rss[i] - rss.front()) / 1024);
      }
    }
    return 0;
  }
  oneside::runtime rt(argc, argv);
  bool ok = true;
  long first = 0;
  if (o.mode == "mixed") {
    const double every = o.every > 0 ? o.every : 5;
    double next = every;
    long rounds = 0;
    oneside::soak::mixed_workload work;
    for (;;) {
      ok = work.round() && ok;
      ++rounds;
      // Rank 0's clock decides for everybody.
      const double t =
          oneside::allreduce(oneside::world(), rt.rank() == 0 ? elapsed() : 0.0, oneside::op::max);
      if (t >= next || t >= o.seconds) {
        const long rss = report(rt, t, rounds, first);
        if (first == 0) first = rss;
        next += every;
      }
      if (t >= o.seconds) break;
    }
  } else {
    const long count = o.count > 0 ? o.count : (o.mode == "windows" ? 10000 : 5000);
    const long every = o.every > 0 ? static_cast<long>(o.every) : 1000;
    for (long done = 0; done < count;) {
      const long step = std::min(every, count - done);
      if (o.mode == "windows") {
        oneside::soak::window_cycles(static_cast<int>(step));
      } else {
        oneside::soak::team_splits(static_cast<int>(step));
      }
      done += step;
      const long rss = report(rt, elapsed(), done, first);
      if (first == 0) first = rss;
    }
  }
  rt.close();
  if (!ok) std::fprintf(stderr, "oneside_soak: a value read back was wrong\n");
  return ok ? 0 : 1;
}
