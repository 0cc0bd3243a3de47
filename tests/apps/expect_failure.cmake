# Runs `LAUNCHER -n NP APP ARGS` and passes only when the job exits non-zero and its output
# matches EXPECT: a run that must fail is checked for failing loudly, not just failing.
#   cmake -DLAUNCHER=... [-DLAUNCHER_ARGS="a|b"] -DNP=3 -DAPP=... -DARGS="--n 40 ..." -DEXPECT=regex -P expect_failure.cmake
# LAUNCHER_ARGS: options the launcher takes first (mpirun's, for a run under MPI).
separate_arguments(app_args UNIX_COMMAND "${ARGS}")
string(REPLACE "|" ";" launcher_args "${LAUNCHER_ARGS}")
execute_process(COMMAND "${LAUNCHER}" ${launcher_args} -n ${NP} --timeout 60 "${APP}" ${app_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "expected the output to match '${EXPECT}'")
endif()
if("${out}${err}" MATCHES "Solution validates")
  message(FATAL_ERROR "a run that must fail printed 'Solution validates'")
endif()
