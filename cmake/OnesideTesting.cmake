# Test helpers (STYLE.md R11).
#   oneside_add_unit_test(NAME layer.concept SOURCES ... [LIBS ...] [LABELS ...])
#       one process, no launcher: pure logic.
#   oneside_add_rank_test(NAME layer.concept SOURCES ... [RANKS 1 2 3 4 8] [TIMEOUT s]
#                         [LIBS ...] [LABELS ...])
#       one binary run under the real launcher at each rank count: ctest names
#       <layer>.<concept>.np<N>.shm. The launcher's --timeout kills a hung job first;
#       ctest's TIMEOUT (a little larger) is the backstop.
set(ONESIDE_DEFAULT_RANKS 1 2 3 4 8)
cmake_host_system_information(RESULT ONESIDE_HOST_CORES QUERY NUMBER_OF_LOGICAL_CORES)

function(_oneside_target_name out name)
  string(REPLACE "." "_" t "${name}")
  set(${out} "test_${t}" PARENT_SCOPE)
endfunction()

function(oneside_add_unit_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  _oneside_target_name(target ${A_NAME})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  add_executable(${target} ${A_SOURCES})
  target_link_libraries(${target} PRIVATE ${A_LIBS} oneside_test_support GTest::gtest_main)
  oneside_set_warnings(${target})
  add_test(NAME ${A_NAME} COMMAND ${target})
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "unit;${A_LABELS}")
endfunction()

function(oneside_add_rank_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;RANKS" ${ARGN})
  _oneside_target_name(target ${A_NAME})
  if(NOT A_RANKS)
    set(A_RANKS ${ONESIDE_DEFAULT_RANKS})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  math(EXPR ctest_timeout "${A_TIMEOUT} + 30")
  add_executable(${target} ${A_SOURCES})
  target_link_libraries(${target} PRIVATE ${A_LIBS} oneside_rank_test_main)
  oneside_set_warnings(${target})
  foreach(np IN LISTS A_RANKS)
    set(test_name "${A_NAME}.np${np}.shm")
    add_test(NAME ${test_name}
             COMMAND oneside-run -n ${np} --timeout ${A_TIMEOUT} $<TARGET_FILE:${target}>)
    set(procs ${np})
    if(procs GREATER ONESIDE_HOST_CORES)
      set(procs ${ONESIDE_HOST_CORES})
    endif()
    set_tests_properties(${test_name} PROPERTIES
                         TIMEOUT ${ctest_timeout} PROCESSORS ${procs}
                         ENVIRONMENT "ONESIDE_TRANSPORT=shm"
                         LABELS "ranks;${A_LABELS}")
  endforeach()
endfunction()
