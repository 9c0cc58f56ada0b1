# Runs each fuzzer for a few seconds over its seed corpus (ctest fuzz_smoke_onnx).
# FUZZERS: "binary,corpus_name|binary,corpus_name".
string(REPLACE "|" ";" fuzzer_list "${FUZZERS}")
foreach(entry ${fuzzer_list})
  string(REPLACE "," ";" parts "${entry}")
  list(GET parts 0 binary)
  list(GET parts 1 corpus)
  file(REMOVE_RECURSE ${WORK_DIR}/${corpus})
  file(MAKE_DIRECTORY ${WORK_DIR}/${corpus})
  execute_process(
    COMMAND ${binary} -max_total_time=5 -rss_limit_mb=2048 -artifact_prefix=${WORK_DIR}/
            ${WORK_DIR}/${corpus} ${CORPUS_DIR}/${corpus}
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${binary} failed (exit ${result}); the crashing input is in ${WORK_DIR}")
  endif()
endforeach()
