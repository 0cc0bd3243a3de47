# Third-party dependencies, all from Debian packages (scripts/setup.sh installs them).
# Each is used in exactly one folder of runtime/ (see STYLE.md R1).
find_package(Threads REQUIRED)
find_package(TBB REQUIRED CONFIG)                    # runtime/task
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)  # runtime/topology (no CMake config)
find_package(Boost 1.74 REQUIRED CONFIG COMPONENTS context)   # runtime/fiber

if(ONESIDE_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(ONESIDE_BUILD_BENCH)
  find_package(benchmark REQUIRED CONFIG)
  # MPI is optional here: it only builds the peer baselines in bench/peers.
  find_package(MPI COMPONENTS CXX QUIET)
endif()
