# Runs the harness self-check on 3 ranks: without ONESIDE_SELFCHECK_FAIL it must pass; with it,
# the job must exit non-zero, rank 0's report must list the test as failed "on rank(s) 1", and
# the test after it must still have run.
execute_process(COMMAND ${LAUNCHER} -n 3 --timeout 60 ${PROGRAM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the self-check failed without a deliberate failure (${rc}):\n${out}\n${err}")
endif()
set(ENV{ONESIDE_SELFCHECK_FAIL} 1)
execute_process(COMMAND ${LAUNCHER} -n 3 --timeout 60 ${PROGRAM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "a failure on rank 1 did not fail the job:\n${out}\n${err}")
endif()
foreach(expected "failed on rank\\(s\\) 1" "\\[  FAILED  \\] Harness.OnlyRankOneFails"
                 "\\[       OK \\] Harness.LaterTestsStillRun")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "rank 0's report lacks '${expected}':\n${out}\n${err}")
  endif()
endforeach()
if(NOT err MATCHES "\\[rank 1\\] Harness.OnlyRankOneFails")
  message(FATAL_ERROR "rank 1 did not print its own failure:\n${err}")
endif()
message(STATUS "a failure on one rank failed the test on all ranks (launcher exit ${rc})")
