// The main() of the mini-apps: opens the runtime, runs the app, and turns an exception into a
// message naming the program and the rank, and exit status 1 (the launcher then ends the job).
#pragma once

#include <cstdio>
#include <exception>

#include <oneside/oneside.hpp>

namespace oneside::apps {

// Returns what main() returns: run(argc, argv)'s status, or 1 after an exception.
template <class Run>
int app_main(const char* program, int argc, char** argv, Run run) {
  oneside::runtime rt(argc, argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program, rt.rank(), e.what());
    return 1;
  }
}

}  // namespace oneside::apps
