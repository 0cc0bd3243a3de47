# Third-party dependencies, all from Debian packages (scripts/setup.sh installs them).
# Each is used in exactly one folder of runtime/ (see STYLE.md R1).
find_package(Threads REQUIRED)
find_package(TBB REQUIRED CONFIG)                    # runtime/task
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)  # runtime/topology (no CMake config)
find_package(Boost 1.74 REQUIRED CONFIG COMPONENTS context)   # runtime/fiber
# Optional: liburing (runtime/io, ONESIDE_IO_ENGINE=uring); found -> ONESIDE_HAVE_LIBURING.
pkg_check_modules(LIBURING QUIET IMPORTED_TARGET liburing)
if(LIBURING_FOUND)
  message(STATUS "oneside: liburing ${LIBURING_VERSION} found (ONESIDE_IO_ENGINE=uring)")
else()
  message(STATUS "oneside: liburing not found; ONESIDE_IO_ENGINE=uring runs as threads")
endif()

if(ONESIDE_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(ONESIDE_BUILD_BENCH)
  find_package(benchmark REQUIRED CONFIG)
endif()

# MPI (runtime/transport/mpi and the MPI bootstrap; the peer baselines in bench/peers).
# ONESIDE_WITH_MPI defaults to on when an MPI whose library grants MPI_THREAD_MULTIPLE is found.
find_package(MPI COMPONENTS CXX QUIET)
set(_oneside_mpi_default OFF)
if(MPI_CXX_FOUND)
  if(NOT DEFINED ONESIDE_MPI_THREAD_MULTIPLE)
    # Ask the library itself (a singleton MPI_Init_thread, no launcher needed).
    try_run(_run_rc _compile_ok
            SOURCES "${CMAKE_CURRENT_LIST_DIR}/mpi_thread_multiple.cpp"
            LINK_LIBRARIES MPI::MPI_CXX
            COMPILE_OUTPUT_VARIABLE _compile_out RUN_OUTPUT_VARIABLE _run_out)
    if(_compile_ok AND _run_rc EQUAL 0)
      set(ONESIDE_MPI_THREAD_MULTIPLE ON CACHE INTERNAL "MPI grants MPI_THREAD_MULTIPLE")
    else()
      set(ONESIDE_MPI_THREAD_MULTIPLE OFF CACHE INTERNAL "MPI grants MPI_THREAD_MULTIPLE")
      message(STATUS "oneside: MPI found, but it does not grant MPI_THREAD_MULTIPLE: ${_run_out}")
    endif()
  endif()
  set(_oneside_mpi_default ${ONESIDE_MPI_THREAD_MULTIPLE})
endif()
option(ONESIDE_WITH_MPI "Build the MPI transport and bootstrap (runs under mpirun/srun)"
       ${_oneside_mpi_default})
if(ONESIDE_WITH_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "ONESIDE_WITH_MPI=ON, but no MPI was found (apt-get install libopenmpi-dev "
                      "openmpi-bin, or run scripts/setup.sh)")
endif()
message(STATUS "oneside: MPI transport ${ONESIDE_WITH_MPI}")
if(ONESIDE_TEST_MPI AND NOT ONESIDE_WITH_MPI)
  message(FATAL_ERROR "ONESIDE_TEST_MPI=ON needs ONESIDE_WITH_MPI=ON")
endif()
