# Build options of oneside. Every option is ONESIDE_*; presets (CMakePresets.json) set them.
option(ONESIDE_WERROR "Treat compiler warnings as errors (on in CI)" OFF)
set(ONESIDE_SANITIZE "" CACHE STRING "Sanitizers: empty, 'address,undefined' or 'thread'")
option(ONESIDE_BUILD_TESTS "Build the test suite" ON)
option(ONESIDE_BUILD_BENCH "Build the benchmarks" ON)
option(ONESIDE_BUILD_APPS "Build the apps and demos" ON)
option(BUILD_SHARED_LIBS "Build oneside's libraries as shared libraries" ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()
