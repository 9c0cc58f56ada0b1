# Runs each fuzzer for SECONDS (default 5) over its seed corpus; new inputs go to a scratch
# folder, a crashing input to WORK_DIR (ctest fuzz_smoke, scripts/test.sh's fuzz stage).
# FUZZERS: "binary,corpus_name|binary,corpus_name".
if(NOT SECONDS)
  set(SECONDS 5)
endif()
string(REPLACE "|" ";" fuzzer_list "${FUZZERS}")
foreach(entry ${fuzzer_list})
  string(REPLACE "," ";" parts "${entry}")
  list(GET parts 0 binary)
  list(GET parts 1 corpus)
  file(REMOVE_RECURSE ${WORK_DIR}/${corpus})
  file(MAKE_DIRECTORY ${WORK_DIR}/${corpus})
  string(TIMESTAMP start "%s")
  execute_process(
    COMMAND ${binary} -max_total_time=${SECONDS} -rss_limit_mb=2048 -timeout=20
            -artifact_prefix=${WORK_DIR}/${corpus}- -print_final_stats=1
            ${WORK_DIR}/${corpus} ${CORPUS_DIR}/${corpus}
    RESULT_VARIABLE result
    OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  string(TIMESTAMP end "%s")
  math(EXPR took "${end} - ${start}")
  string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${output}")
  string(REGEX REPLACE ".*: *" "" runs "${runs}")
  if(NOT result EQUAL 0)
    message("${output}")
    message(FATAL_ERROR "${binary} failed (exit ${result}); the crashing input is in ${WORK_DIR}")
  endif()
  message(STATUS "fuzz ${corpus}: ${runs} inputs in ${took} s, no crash")
endforeach()
