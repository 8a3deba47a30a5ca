# cmake -DCMD=<command;args> -DEXPECT_RC=<code> -DEXPECT_REGEX=<regex> -P ...
# Runs CMD and fails unless it exits with EXPECT_RC and its stdout + stderr
# match EXPECT_REGEX (^ anchors at the start of the first line).
execute_process(COMMAND ${CMD}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}; output:\n${text}")
endif()
if(NOT text MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${text}")
endif()
string(REGEX MATCHALL "\n" lines "${text}")
list(LENGTH lines count)
if(EXPECT_RC AND NOT count EQUAL 1)
  message(FATAL_ERROR "expected exactly one line of output, got ${count}:\n${text}")
endif()
