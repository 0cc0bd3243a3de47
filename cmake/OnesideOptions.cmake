# Build options of oneside. Every option is ONESIDE_*; presets (CMakePresets.json) set them.
option(ONESIDE_WERROR "Treat compiler warnings as errors (on in CI)" OFF)
set(ONESIDE_SANITIZE "" CACHE STRING "Sanitizers: empty, 'address,undefined' or 'thread'")
option(ONESIDE_BUILD_TESTS "Build the test suite" ON)
option(ONESIDE_BUILD_BENCH "Build the benchmarks" ON)
option(ONESIDE_BUILD_APPS "Build the apps and demos" ON)
# The test suite once more under mpirun over TCP (ONESIDE_TRANSPORT=mpi; about 15 minutes
# more on 2 cores). Off by default until that run fits CI's budget with room to spare.
option(ONESIDE_TEST_MPI "Also run the rank tests under mpirun with ONESIDE_TRANSPORT=mpi" OFF)
option(BUILD_SHARED_LIBS "Build oneside's libraries as shared libraries" ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()
