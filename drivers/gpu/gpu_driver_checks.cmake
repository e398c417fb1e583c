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
# - the replay checks (label "replay"; "nightly" for 20 rounds):
#   <driver>-sim.replay, nightly.replay-under-load.<driver>-sim.
# Labels: <driver>-sim.
#
# Options for a driver that differs (Level Zero):
#   NAME <name>      the device/label name instead of <driver>-sim (a second
#                    configuration of the same driver);
#   NO_GRAPH         the API has no graphs: no graph variants;
#   NO_REPLAY        no replay check (the schedule does not replay yet);
#   NO_SYNC_ALLOC    no synchronous-allocation CTS variant (the API has no
#                    stream-ordered allocation: it would repeat the default);
#   NO_LONG          no seed sweeps (a second configuration of a driver whose
#                    first one runs them; pair with LONG_CASES 0);
#   SWEEP_SEEDS a..b the seeds of the long sweeps (default 0..39);
#   SWARM_SEEDS a..b the CI swarm sample's seeds (default 1..4; not for a
#                    second configuration);
#   LONG_CASES n     cases per property in the long runs on this device
#                    (default HAL_PROPERTY_LONG_CASES; 0: no long runs);
#   EXTRA_ENV a=b..  more environment for every test (validation layers,
#                    HAL_<DRIVER>_SIM_LIBRARY when LIBRARY_VAR is not the
#                    simulated library's own variable).
function(hal_gpu_driver_checks)
  cmake_parse_arguments(ARG "NO_GRAPH;NO_REPLAY;NO_SYNC_ALLOC;NO_LONG"
                        "DRIVER;SIM_TARGET;LIBRARY_VAR;NAME;SWEEP_SEEDS;SWARM_SEEDS;LONG_CASES"
                        "EXTRA_ENV" ${ARGN})
  if(NOT ARG_SWEEP_SEEDS)
    set(ARG_SWEEP_SEEDS 0..39)
  endif()
  set(d ${ARG_DRIVER})
  set(label ${d}-sim)
  if(ARG_NAME)
    set(label ${ARG_NAME})
  endif()
  set(lib "${ARG_LIBRARY_VAR}=$<TARGET_FILE:${ARG_SIM_TARGET}>" ${ARG_EXTRA_ENV})
  hal_register_check_device(${label} "${d}://?queues=4&command_buffer_mode=stream"
    ${label} ${lib})
  if(DEFINED ARG_LONG_CASES)
    set_property(GLOBAL PROPERTY HAL_CHECK_DEVICE_LONG_CASES_${label} ${ARG_LONG_CASES})
  endif()
  if(NOT ARG_NO_GRAPH)
    hal_register_check_device(${label}-graph "${d}://?queues=4&command_buffer_mode=graph"
      ${label} ${lib})
    if(DEFINED ARG_LONG_CASES)
      set_property(GLOBAL PROPERTY HAL_CHECK_DEVICE_LONG_CASES_${label}-graph
                   ${ARG_LONG_CASES})
    endif()
  endif()
  if(NOT HAL_BUILD_TESTS)
    return()
  endif()

  set(areas Semaphore Allocator Buffer QueueTransfer QueueAlloca Submission
      CommandBuffer File Executable Dispatch)
  set(variants "${d}")
  if(NOT ARG_NO_SYNC_ALLOC)
    list(APPEND variants "${d}://?async_allocations=0")
  endif()
  if(NOT ARG_NO_GRAPH)
    list(APPEND variants "${d}://?command_buffer_mode=graph")
  endif()
  foreach(variant ${variants})
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
  set(variants "${d}")
  if(ARG_NO_LONG)
    set(variants "")
  endif()
  if(NOT ARG_NO_GRAPH AND NOT ARG_NO_LONG)
    list(APPEND variants "${d}://?command_buffer_mode=graph")
  endif()
  foreach(variant ${variants})
    if(variant MATCHES "graph")
      set(suffix "-graph")
    else()
      set(suffix "")
    endif()
    add_test(NAME long.sweep.${label}${suffix}
             COMMAND $<TARGET_FILE:hal-check> "--device=${variant}" --seeds=${ARG_SWEEP_SEEDS})
    set_tests_properties(long.sweep.${label}${suffix} PROPERTIES
      LABELS "long;${label}" TIMEOUT 1200
      ENVIRONMENT "${lib};HALSIM_RACES=abort")
  endforeach()

  if(NOT ARG_NAME)
    include(${CMAKE_SOURCE_DIR}/hal/tools/tests/hal_check_test.cmake)
    if(NOT ARG_SWARM_SEEDS)
      set(ARG_SWARM_SEEDS 1..4)
    endif()
    hal_swarm_sample(${label} "${d}" ${ARG_SWARM_SEEDS} ${lib})
    hal_coverage_check(${label} "${d}" ${lib})
  endif()

  if(ARG_NAME OR ARG_NO_REPLAY)
    return()  # a second configuration: the replay check runs once
  endif()
  # The simulator's schedule replays through the whole driver: the suite
  # twice under one seed gives the same trace, another seed a different one,
  # beside CPU hogs (drivers/gpu/tests/replay_checks.cmake). Not under TSan
  # (label "replay", not "cts"/"unit"): its slowdown stretches host threads
  # past the 250 ms bound of the settle rule.
  include(${CMAKE_SOURCE_DIR}/drivers/gpu/tests/replay_checks.cmake)
  hal_replay_checks(LABEL ${label} SIM_TARGET ${ARG_SIM_TARGET}
                    LIBRARY_VAR ${ARG_LIBRARY_VAR} DEVICE "${d}://?queues=4")
endfunction()
