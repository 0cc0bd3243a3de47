# Test helpers (STYLE.md R11).
#   oneside_add_unit_test(NAME layer.concept SOURCES ... [LIBS ...] [LABELS ...])
#       one process, no launcher: pure logic.
#   oneside_add_rank_test(NAME layer.concept SOURCES ... [RANKS 1 2 3 4 8] [TIMEOUT s]
#                         [LIBS ...] [LABELS ...])
#       one binary run under the real launcher at each rank count: ctest names
#       <layer>.<concept>.np<N>.shm. The launcher's --timeout kills a hung job first;
#       ctest's TIMEOUT (a little larger) is the backstop. Two more runs of the same binary
#       take the network-shaped paths (every peer remote, no load/store between ranks):
#         <layer>.<concept>.np<N>.remote  oneside-run, ONESIDE_SHM_LOAD_STORE=0 (N = 2, 3)
#         <layer>.<concept>.np<N>.mpi     mpirun over TCP, ONESIDE_TRANSPORT=mpi (N = 2, 3, 4;
#                                         ONESIDE_TEST_MPI=ON, which needs ONESIDE_WITH_MPI)
#       NO_REMOTE drops both (tests of the shm transport or the launcher themselves).
# Processors: a rank test counts as min(N, cores) (PROCESSORS), a one-process test as 1; the
# test presets run 3 jobs, so on 2 cores one rank test runs beside one-process or sleeping tests.
set(ONESIDE_DEFAULT_RANKS 1 2 3 4 8)
# The subset the sanitizer workflows of CI run (label "sanitize"; presets asan-ubsan-ci and
# tsan-ci build only the target oneside_sanitize_subset, tests/CMakeLists.txt): every layer, on
# the load/store and the network-shaped paths, the waiting primitive, futures, the heap and the
# launcher's hang diagnosis; small enough that both sanitizer builds and runs fit CI's budget.
set(ONESIDE_SANITIZE_TESTS
    unit.wait unit.future
    runtime.transport.np2.shm runtime.transport.np3.remote runtime.collectives.np3.shm
    runtime.team.np3.shm
    rma.communication.np3.shm rma.communication.np2.remote rma.atomicity.np3.shm
    rma.request.np2.shm rma.pscw.np3.shm rma.passive_progress.np2.shm
    pgas.communication.np3.shm pgas.communication.np2.remote pgas.atomic.np3.shm
    pgas.signal.np2.shm pgas.heap.np3.shm
    runtime.fiber.np3.shm pgas.fiber.np2.shm runtime.file.np2.shm pgas.aggregator.np2.shm
    launcher.hang)
# Tasks that wait suspend with oneTBB's resumable tasks, whose stack switches (inside the
# system's uninstrumented libtbb) TSan cannot follow: it loses its shadow stack and crashes. So
# the task tests and rpc (whose bodies run as tasks) run under ASan+UBSan only (oneside's own fiber switches are annotated for both:
# runtime/fiber/sanitizer_switch.hpp).
if(NOT ONESIDE_SANITIZE STREQUAL "thread")
  # dist_hash_map: its rpc bodies are tasks too (0.7 s at 2 ranks under ASan+UBSan).
  list(APPEND ONESIDE_SANITIZE_TESTS pgas.task.np2.threads1 pgas.rpc.np2.shm
       pgas.dist_hash_map.np2.shm)
endif()

# Adds the label "sanitize" to test `name` when it is one of ONESIDE_SANITIZE_TESTS (call it
# where the test is defined).
function(oneside_mark_sanitize name)
  if(name IN_LIST ONESIDE_SANITIZE_TESTS)
    set_property(TEST ${name} APPEND PROPERTY LABELS sanitize)
  endif()
endfunction()
set(ONESIDE_REMOTE_RANKS 2 3)
set(ONESIDE_MPI_RANKS 2 3 4)
# The network path on one machine (Open MPI 4.1): TCP byte transfer and osc ucx over UCX's TCP
# transport; Debian's openmpi-mca-params.conf leaves osc ucx out unless named. Waits yield to
# the oversubscribed ranks, and root may run the job (CI containers).
set(ONESIDE_MPIRUN_FLAGS --oversubscribe --bind-to none --mca btl self,tcp --mca osc ucx
                         -x UCX_TLS=tcp,self -x ONESIDE_TRANSPORT -x ONESIDE_HANG_TIMEOUT)
# Every job of the tests runs with the hang check: a deadlock ends in 30 s with what each rank
# waits for (ONESIDE_HANG_TIMEOUT), long before the test's time limit.
set(ONESIDE_TEST_HANG_ENV "ONESIDE_HANG_TIMEOUT=30")
set(ONESIDE_MPIRUN_ENV "ONESIDE_TRANSPORT=mpi;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${ONESIDE_TEST_HANG_ENV}")
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
  oneside_mark_sanitize(${A_NAME})
endfunction()

function(oneside_add_rank_test)
  cmake_parse_arguments(A "NO_REMOTE" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;RANKS" ${ARGN})
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
                         ENVIRONMENT "ONESIDE_TRANSPORT=shm;${ONESIDE_TEST_HANG_ENV}"
                         LABELS "ranks;${A_LABELS}")
    oneside_mark_sanitize(${test_name})
  endforeach()
  if(A_NO_REMOTE)
    return()
  endif()
  foreach(np IN LISTS ONESIDE_REMOTE_RANKS)
    set(test_name "${A_NAME}.np${np}.remote")
    add_test(NAME ${test_name}
             COMMAND oneside-run -n ${np} --timeout ${A_TIMEOUT} $<TARGET_FILE:${target}>)
    set_tests_properties(${test_name} PROPERTIES
                         TIMEOUT ${ctest_timeout} PROCESSORS 2
                         ENVIRONMENT "ONESIDE_TRANSPORT=shm;ONESIDE_SHM_LOAD_STORE=0;${ONESIDE_TEST_HANG_ENV}"
                         LABELS "ranks;remote;${A_LABELS}")
    oneside_mark_sanitize(${test_name})
  endforeach()
  if(NOT ONESIDE_TEST_MPI)
    return()
  endif()
  # Over TCP with oversubscribed ranks every round trip costs tens of microseconds: twice the
  # time limit.
  math(EXPR mpi_timeout "2 * ${A_TIMEOUT}")
  math(EXPR mpi_ctest_timeout "${mpi_timeout} + 30")
  foreach(np IN LISTS ONESIDE_MPI_RANKS)
    set(test_name "${A_NAME}.np${np}.mpi")
    add_test(NAME ${test_name}
             COMMAND ${MPIEXEC_EXECUTABLE} ${ONESIDE_MPIRUN_FLAGS} -n ${np} --timeout ${mpi_timeout}
                     $<TARGET_FILE:${target}>)
    set_tests_properties(${test_name} PROPERTIES
                         TIMEOUT ${mpi_ctest_timeout} PROCESSORS 2
                         ENVIRONMENT "${ONESIDE_MPIRUN_ENV}"
                         LABELS "ranks;mpi;${A_LABELS}")
  endforeach()
endfunction()
