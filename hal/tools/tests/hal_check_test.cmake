# hal_check_test(NAME RC [ARGS ...] [ENV ...] [MATCH ...] [NOMATCH ...]
#                [MAX_LINES N]): a ctest entry unit.tools.hal_check.NAME.
# Included by hal/tools/ and by driver folders that test hal-check on their
# driver (a driver's knowledge stays in its folder).
# hal-check's exit statuses, output and replay lines. Each runs hal-check
# through expect_run.cmake: CMD, ENV, MATCH and NOMATCH are "@@"-separated
# lists. HAL_CHECK_SELF_TEST enables hal/cts/cts_self_test.cc (tests that
# pass, fail, skip, crash or hang on purpose).
function(hal_check_test name rc)
  cmake_parse_arguments(T "" "MAX_LINES" "ARGS;ENV;MATCH;NOMATCH" ${ARGN})
  set(cmd $<TARGET_FILE:hal-check> ${T_ARGS})
  string(REPLACE ";" "@@" cmd "${cmd}")
  string(REPLACE ";" "@@" env "${T_ENV}")
  string(REPLACE ";" "@@" match "${T_MATCH}")
  string(REPLACE ";" "@@" nomatch "${T_NOMATCH}")
  set(defs -DCMD=${cmd} -DRC=${rc} -DENV=${env} -DMATCH=${match} -DNOMATCH=${nomatch})
  if(DEFINED T_MAX_LINES)
    list(APPEND defs -DMAX_LINES=${T_MAX_LINES})
  endif()
  add_test(NAME unit.tools.hal_check.${name}
           COMMAND ${CMAKE_COMMAND} ${defs}
                   -P ${CMAKE_SOURCE_DIR}/hal/tools/tests/expect_run.cmake)
  set_tests_properties(unit.tools.hal_check.${name} PROPERTIES
                       LABELS "unit;sim" TIMEOUT 120)
endfunction()
