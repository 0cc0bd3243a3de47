# Driver of install.find_package (see CMakeLists.txt): install, configure, build, run; then
# run the installed apps under the installed launcher (APP_DIR: where they are installed,
# relative to the prefix; empty when the build has no apps).
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BINARY})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
foreach(f include/oneside/oneside.hpp bin/oneside-run lib/cmake/oneside/onesideConfig.cmake)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
# Internal interfaces (the transport, the layer registry, the access interface) stay home.
foreach(f include/oneside/runtime/transport.hpp include/runtime/transport.hpp
          include/rma/access.hpp include/oneside/runtime/layers.hpp)
  if(EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "the install holds the internal header ${f}")
  endif()
endforeach()
file(GLOB_RECURSE installed_headers RELATIVE ${PREFIX}/include ${PREFIX}/include/*)
foreach(h IN LISTS installed_headers)
  if(NOT h MATCHES "^oneside/")
    message(FATAL_ERROR "the install holds ${h} outside include/oneside")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${CONSUMER_BINARY} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run(${CMAKE_COMMAND} --build ${CONSUMER_BINARY})
run(${PREFIX}/bin/oneside-run -n 2 --timeout 60 ${CONSUMER_BINARY}/consumer)
if(NOT last_output MATCHES "consumer: 2 ranks, sum 3")
  message(FATAL_ERROR "unexpected output of the installed consumer:\n${last_output}")
endif()
message(STATUS "installed oneside works from a separate project:\n${last_output}")

if(APP_DIR)
  # The README's demo from the installed copy, smaller, and the pgas examples: each verifies
  # its own results. They must find the installed libraries (their RPATH), not the build's.
  foreach(app stencil transpose shmem_style upcxx_style ring chase gups graph500 pagerank cc)
    if(NOT EXISTS ${PREFIX}/${APP_DIR}/${app})
      message(FATAL_ERROR "the install lacks ${APP_DIR}/${app}")
    endif()
  endforeach()
  foreach(app "stencil --n 200 --iterations 5 --variant pscw" "transpose 3 64 8" shmem_style
              upcxx_style "chase --nodes-per-rank 1000 --hops 2000 --fibers 16"
              "gups --log2-table 12" "graph500 --scale 8 --nbfs 4" "pagerank --scale 8 --verify" "cc --scale 8 --verify")
    separate_arguments(args UNIX_COMMAND "${app}")
    list(POP_FRONT args name)
    run(${PREFIX}/bin/oneside-run -n 2 --timeout 60 ${PREFIX}/${APP_DIR}/${name} ${args})
    if(NOT last_output MATCHES "Solution validates")
      message(FATAL_ERROR "the installed ${name} did not validate:\n${last_output}")
    endif()
  endforeach()
  run(${PREFIX}/bin/oneside-run -n 2 --timeout 60 ${PREFIX}/${APP_DIR}/ring 10)
  message(STATUS "the installed apps run from ${PREFIX}/${APP_DIR}")
endif()

# oneside-bench runs from the install (its package from share/oneside/bench): a report of a
# stored record, and compare of that record with itself flags nothing.
if(BENCH_RECORD)
  run(${PREFIX}/bin/oneside-bench report ${BENCH_RECORD} --out ${PREFIX}/bench-report --no-plots)
  if(NOT EXISTS ${PREFIX}/bench-report/report.md)
    message(FATAL_ERROR "the installed oneside-bench wrote no report")
  endif()
  run(${PREFIX}/bin/oneside-bench compare ${BENCH_RECORD} ${BENCH_RECORD} --fail-on-change)
  if(NOT last_output MATCHES " 0 changed beyond")
    message(FATAL_ERROR "unexpected output of the installed oneside-bench:\n${last_output}")
  endif()
  message(STATUS "the installed oneside-bench runs")
endif()
