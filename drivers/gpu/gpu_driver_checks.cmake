# The checks every GPU-stream driver runs over its simulated vendor library,
# registered the same way for each (CUDA, HIP):
#   hal_gpu_driver_checks(DRIVER cuda SIM_TARGET halsim_cuda
#                         LIBRARY_VAR HAL_CUDA_LIBRARY)
# - hal_register_check_device <driver>-sim and <driver>-sim-graph (the
#   property tests and the hal_program fuzzer run on them);
# - the conformance suite through hal-check, one test per area, in stream,
#   synchronous-allocation and graph modes, each under its own seed
#   (1, 2, 3), with races aborting: cts.<driver>-sim[-sync-alloc|-graph].<Area>;
# - seed sweeps (label "long"): long.sweep.<driver>-sim[-graph];
# - the replay check (label "replay"): <driver>-sim.replay.
# Labels: <driver>-sim.
function(hal_gpu_driver_checks)
  cmake_parse_arguments(ARG "" "DRIVER;SIM_TARGET;LIBRARY_VAR" "" ${ARGN})
  set(d ${ARG_DRIVER})
  set(label ${d}-sim)
  set(lib "${ARG_LIBRARY_VAR}=$<TARGET_FILE:${ARG_SIM_TARGET}>")
  hal_register_check_device(${d}-sim "${d}://?queues=4&command_buffer_mode=stream"
    ${label} "${lib}")
  hal_register_check_device(${d}-sim-graph "${d}://?queues=4&command_buffer_mode=graph"
    ${label} "${lib}")
  if(NOT HAL_BUILD_TESTS)
    return()
  endif()

  set(areas Semaphore Allocator Buffer QueueTransfer QueueAlloca Submission
      CommandBuffer File Executable Dispatch)
  foreach(variant "${d}" "${d}://?async_allocations=0"
                  "${d}://?command_buffer_mode=graph")
    if(variant STREQUAL "${d}")
      set(suffix "")
      set(seed 1)
    elseif(variant MATCHES "graph")
      set(suffix "-graph")
      set(seed 3)
    else()
      set(suffix "-sync-alloc")
      set(seed 2)
    endif()
    foreach(area ${areas})
      add_test(NAME cts.${label}${suffix}.${area}
               COMMAND $<TARGET_FILE:hal-check> "--device=${variant}"
                       --gtest_filter=${area}.*)
      set_tests_properties(cts.${label}${suffix}.${area} PROPERTIES
        LABELS "cts;${label}" TIMEOUT 300
        ENVIRONMENT "${lib};HALSIM_SEED=${seed};HALSIM_RACES=abort")
    endforeach()
  endforeach()

  # One simulator schedule per seed (HALSIM_SEED, set by --seeds).
  foreach(variant "${d}" "${d}://?command_buffer_mode=graph")
    if(variant MATCHES "graph")
      set(suffix "-graph")
    else()
      set(suffix "")
    endif()
    add_test(NAME long.sweep.${label}${suffix}
             COMMAND $<TARGET_FILE:hal-check> "--device=${variant}" --seeds=0..39)
    set_tests_properties(long.sweep.${label}${suffix} PROPERTIES
      LABELS "long;${label}" TIMEOUT 1200
      ENVIRONMENT "${lib};HALSIM_RACES=abort")
  endforeach()

  # The simulator's schedule replays through the whole driver: the suite
  # twice under one seed gives the same trace, another seed a different one.
  # Not under TSan (label "replay", not "cts"/"unit"): its slowdown stretches
  # host threads past the settle window, which the check would report.
  add_test(NAME ${label}.replay
           COMMAND ${CMAKE_COMMAND} -DHAL_CHECK=$<TARGET_FILE:hal-check>
                   -DSIM_LIBRARY=$<TARGET_FILE:${ARG_SIM_TARGET}>
                   -DLIBRARY_VAR=${ARG_LIBRARY_VAR} "-DDEVICE=${d}://?queues=4"
                   -DOUT_DIR=${CMAKE_BINARY_DIR}/${label}-replay -DSEED=7
                   -P ${CMAKE_SOURCE_DIR}/drivers/gpu/tests/replay_check.cmake)
  set_tests_properties(${label}.replay PROPERTIES
    LABELS "replay;${label}" TIMEOUT 300 RUN_SERIAL ON)
endfunction()
