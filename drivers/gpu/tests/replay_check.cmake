# Replays a simulated vendor library's schedule through the whole driver
# over it (CUDA, HIP): runs the conformance suite twice with one seed and once
# with another, and checks that the first two traces (HALSIM_TRACE) are
# identical and the third differs. A 3 ms settle window (and RUN_SERIAL in ctest): an ASan
# build among other tests once stalled a host thread past the default 1 ms
# in the middle of a submission (docs/drivers/cuda.md). Run by ctest
# (cuda-sim.replay, hip-sim.replay):
#   cmake -DHAL_CHECK=... -DSIM_LIBRARY=... -DLIBRARY_VAR=HAL_<DRIVER>_LIBRARY
#         -DDEVICE=<uri> -DOUT_DIR=... -DSEED=N [-DFILTER=<gtest filter>]
#         -P replay_check.cmake
# FILTER (optional) runs part of the suite, where the whole is too slow.
foreach(var HAL_CHECK SIM_LIBRARY LIBRARY_VAR DEVICE OUT_DIR SEED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "replay_check.cmake needs -D${var}=...")
  endif()
endforeach()
math(EXPR OTHER_SEED "${SEED} + 1")
set(filter_arg "")
if(DEFINED FILTER)
  set(filter_arg "--gtest_filter=${FILTER}")
endif()
file(MAKE_DIRECTORY "${OUT_DIR}")
set(names a b c)
set(seeds ${SEED} ${SEED} ${OTHER_SEED})
foreach(name seed IN ZIP_LISTS names seeds)
  set(trace "${OUT_DIR}/trace-${name}.txt")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env
            ${LIBRARY_VAR}=${SIM_LIBRARY} HALSIM_SEED=${seed}
            HALSIM_TRACE=${trace} HALSIM_RACES=abort
            HALSIM_SETTLE_US=3000
            ${HAL_CHECK} --device=${DEVICE} ${filter_arg}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "hal-check with HALSIM_SEED=${seed} failed (${rc}):\n${out}\n${err}")
  endif()
  file(SHA256 "${trace}" hash_${name})
  file(STRINGS "${trace}" lines_${name})
  list(LENGTH lines_${name} count_${name})
  message(STATUS "seed ${seed}: ${count_${name}} trace lines, sha256 ${hash_${name}}")
endforeach()
if(NOT hash_a STREQUAL hash_b)
  execute_process(COMMAND diff "${OUT_DIR}/trace-a.txt" "${OUT_DIR}/trace-b.txt"
                  OUTPUT_VARIABLE diff_out)
  string(SUBSTRING "${diff_out}" 0 2000 diff_out)
  message(FATAL_ERROR "HALSIM_SEED=${SEED} did not replay: the two traces differ:\n${diff_out}")
endif()
if(hash_a STREQUAL hash_c)
  message(FATAL_ERROR "seeds ${SEED} and ${OTHER_SEED} gave the same trace: the seed does not drive the schedule")
endif()
message(STATUS "replayed: seed ${SEED} twice identical, seed ${OTHER_SEED} different")
