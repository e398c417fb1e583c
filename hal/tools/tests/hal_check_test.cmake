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

# hal_swarm_sample(LABEL DEVICE SEEDS [ENV ...]): the CI-size swarm sample of
# one device, ctest entry swarm.LABEL (label "swarm;LABEL", so the default
# and ASan passes of ci/test run it, not TSan's): `hal-check --swarm=SEEDS`,
# a fault plan drawn per seed; a seed fails only on a crash, a hang, an
# oracle report or a wait that timed out (docs/testing.md, "Swarm"). The
# nightly runs 1,000 seeds per device (ci/nightly-shard swarm).
function(hal_swarm_sample label device seeds)
  add_test(NAME swarm.${label}
           COMMAND $<TARGET_FILE:hal-check> "--device=${device}"
                   --swarm=${seeds} --seed-timeout=240)
  set_tests_properties(swarm.${label} PROPERTIES
    LABELS "swarm;${label}" TIMEOUT 900 ENVIRONMENT "${ARGN}")
endfunction()

# hal_coverage_check(LABEL DEVICE [ENV ...]): the whole CTS on DEVICE with
# `--coverage=require` (ctest entry coverage.LABEL, label "swarm;LABEL"):
# fails when a rare state of hal/coverage.h that applies to the driver was
# never reached, a hole in what the suite explores.
function(hal_coverage_check label device)
  add_test(NAME coverage.${label}
           COMMAND $<TARGET_FILE:hal-check> "--device=${device}"
                   --coverage=require)
  set_tests_properties(coverage.${label} PROPERTIES
    LABELS "swarm;${label}" TIMEOUT 600 ENVIRONMENT "${ARGN}")
endfunction()
