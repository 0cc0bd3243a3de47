// The Parallel Research Kernels' verification of the stencil's result (the norm of `out` over
// the active cells against its closed form) and the report of the verdict and the rate, shared
// by the stencil app and its MPI-RMA peer.
#pragma once

#include <cmath>
#include <cstdio>

#include "stencil_cli.hpp"

namespace oneside::apps::stencil {

struct verdict {
  double norm;
  double reference;
  bool ok;
};
inline verdict verify(double global_norm, const options& o) {
  const double active = static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
  const double norm = global_norm / active;
  const double reference = (o.iterations + 1) * (1.0 + 1.0);  // (iterations + 1)(COEFX + COEFY)
  return {norm, reference, std::fabs(norm - reference) <= 1e-8};
}

// The perturbation --inject-error adds to one out value: moves the norm by 1e-6.
inline double injected_error(const options& o) {
  return 1e-6 * static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
}

// Prints the verdict and rate (rank 0); returns the exit code every rank should use.
inline int report(const verdict& v, double max_seconds, const options& o, bool root) {
  if (!v.ok) {
    if (root) {
      std::fprintf(stderr,
                   "ERROR: solution norm %.15g differs from the reference %.15g by %.3g "
                   "(tolerance 1e-8): the solution does not validate\n",
                   v.norm, v.reference, std::fabs(v.norm - v.reference));
      std::fflush(stderr);
    }
    return 1;
  }
  if (root) {
    const double active = static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
    const double flops = static_cast<double>(2 * (4 * o.radius + 1) + 1) * active;
    const double avg = max_seconds / o.iterations;
    std::printf("Solution validates\n");
    std::printf("Rate (MFlops/s): %.6f  Avg time (s): %.6f\n", 1e-6 * flops / avg, avg);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace oneside::apps::stencil
