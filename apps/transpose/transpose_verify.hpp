// The Parallel Research Kernels' verification of the transpose (the absolute error of B
// against its closed form, summed over every element, below 1e-8) and the report of the
// verdict and the rate, shared by the transpose app and its MPI1 peer.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>

#include "transpose_cli.hpp"
#include "transpose_kernel.hpp"

namespace oneside::apps::transpose {

inline constexpr double epsilon = 1e-8;

// This rank's part of the error: its column block of B (order rows of `cols` columns starting
// at column c0, row-major).
inline double local_error(const double* b, std::size_t order, column_block cols, int iterations) {
  double err = 0.0;
  for (std::size_t i = 0; i < order; ++i) {
    for (std::size_t j = 0; j < cols.width; ++j) {
      err += std::fabs(b[i * cols.width + j] - expected_b(order, i, cols.start + j, iterations));
    }
  }
  return err;
}

// Prints the verdict and rate (rank 0) as PRK does; returns the exit code every rank should use.
// `max_seconds`: the slowest rank's time of the timed iterations (all but the first).
inline int report(double total_error, double max_seconds, const options& o, bool root) {
  if (!(total_error < epsilon)) {
    if (root) {
      std::fprintf(stderr, "ERROR: Aggregate absolute error %lf exceeds threshold %e\n",
                   total_error, epsilon);
      std::fflush(stderr);
    }
    return 1;
  }
  if (root) {
    const double bytes =
        2.0 * sizeof(double) * static_cast<double>(o.order) * static_cast<double>(o.order);
    const double avg = max_seconds / o.iterations;
    std::printf("Solution validates\n");
    std::printf("Rate (MB/s): %lf Avg time (s): %lf\n", 1.0e-6 * bytes / avg, avg);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace oneside::apps::transpose
