# Saves a dist_array in one job and loads it in a job of another rank count:
#   cmake -DLAUNCHER=oneside-run -DTEST=test_pgas_dist_array_file -DSAVE_NP=2 -DLOAD_NP=3
#         -DDIR=<scratch dir> -P cross_job.cmake
# Each half is a disabled test of dist_array_file_test.cpp; the file is removed afterwards.
file(MAKE_DIRECTORY "${DIR}")
set(ENV{SAVELOAD_TEST_FILE} "${DIR}/cross_job.bin")
foreach(step "SAVE;SaveForAnotherJob" "LOAD;LoadFromAnotherJob")
  list(GET step 0 np_var)
  list(GET step 1 name)
  execute_process(COMMAND "${LAUNCHER}" -n ${${np_var}_NP} --timeout 60 "${TEST}"
                          --gtest_also_run_disabled_tests
                          --gtest_filter=DistArrayFile.DISABLED_${name}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0 OR NOT "${out}" MATCHES "PASSED.*1 test")
    file(REMOVE_RECURSE "${DIR}")
    message(FATAL_ERROR "${name} at ${${np_var}_NP} ranks failed (exit ${rc})")
  endif()
endforeach()
file(REMOVE_RECURSE "${DIR}")
