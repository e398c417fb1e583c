# Registers the replay checks of one simulated vendor library
# (replay_check.cmake), the same way for every driver:
#   hal_replay_checks(LABEL <driver>-sim SIM_TARGET <halsim target>
#                     LIBRARY_VAR HAL_<DRIVER>_LIBRARY DEVICE <uri>
#                     [FILTER <gtest filter>] [ENV a=b ...])
# - <label>.replay (label "replay"): seed 7 twice identical, seed 8
#   different, beside 3 CPU hogs;
# - nightly.replay-under-load.<label> (label "nightly": only the nightly
#   workflow runs it, ci/test leaves it out): the same with 20 rounds of
#   seed 7 (21 identical traces).
# RUN_SERIAL: the hogs would slow every test running beside them.
function(hal_replay_checks)
  cmake_parse_arguments(ARG "" "LABEL;SIM_TARGET;LIBRARY_VAR;DEVICE;FILTER"
                        "ENV" ${ARGN})
  set(filter "")
  if(ARG_FILTER)
    set(filter "-DFILTER=${ARG_FILTER}")
  endif()
  foreach(kind replay long)
    if(kind STREQUAL "replay")
      set(name ${ARG_LABEL}.replay)
      set(rounds 1)
      set(labels "replay;${ARG_LABEL}")
      set(timeout 300)
    else()
      set(name nightly.replay-under-load.${ARG_LABEL})
      set(rounds 20)
      set(labels "nightly;${ARG_LABEL}")
      set(timeout 1800)
    endif()
    add_test(NAME ${name}
             COMMAND ${CMAKE_COMMAND} -DHAL_CHECK=$<TARGET_FILE:hal-check>
                     -DSIM_LIBRARY=$<TARGET_FILE:${ARG_SIM_TARGET}>
                     -DLIBRARY_VAR=${ARG_LIBRARY_VAR} "-DDEVICE=${ARG_DEVICE}"
                     -DOUT_DIR=${CMAKE_BINARY_DIR}/${ARG_LABEL}-${kind}
                     -DSEED=7 -DROUNDS=${rounds} ${filter}
                     -P ${CMAKE_SOURCE_DIR}/drivers/gpu/tests/replay_check.cmake)
    set_tests_properties(${name} PROPERTIES
      LABELS "${labels}" TIMEOUT ${timeout} RUN_SERIAL ON)
    if(ARG_ENV)
      set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ARG_ENV}")
    endif()
  endforeach()
endfunction()
