# Replays a simulated vendor library's schedule through the whole driver
# over it: runs the conformance suite twice with one seed and once with
# another, and checks that the first two traces (HALSIM_TRACE) are identical
# and the third differs. Under load: HOGS busy processes (default 3, more
# runnable threads than the 2 cores CI has) run beside the suite, so a host
# thread that waits for a CPU in the middle of reacting to a step is the
# normal case, not a rare one (issue 25: 2 of 20 Level Zero runs and 1 of 20
# amdgpu runs did not replay on a loaded machine). ROUNDS (default 1) repeats
# the seed-twice part, each round with a fresh run. Run by ctest
# (<driver>-sim.replay; nightly.replay-under-load.<driver>-sim: 20 rounds):
#   cmake -DHAL_CHECK=... -DSIM_LIBRARY=... -DLIBRARY_VAR=HAL_<DRIVER>_LIBRARY
#         -DDEVICE=<uri> -DOUT_DIR=... -DSEED=N [-DFILTER=<gtest filter>]
#         [-DHOGS=N] [-DROUNDS=N] -P replay_check.cmake
# FILTER (optional) runs part of the suite, where the whole is too slow.
foreach(var HAL_CHECK SIM_LIBRARY LIBRARY_VAR DEVICE OUT_DIR SEED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "replay_check.cmake needs -D${var}=...")
  endif()
endforeach()
if(NOT DEFINED HOGS)
  set(HOGS 3)
endif()
if(NOT DEFINED ROUNDS)
  set(ROUNDS 1)
endif()
math(EXPR OTHER_SEED "${SEED} + 1")
set(filter_arg "")
if(DEFINED FILTER)
  set(filter_arg "--gtest_filter=${FILTER}")
endif()
file(MAKE_DIRECTORY "${OUT_DIR}")

# The hogs: busy shell loops in the background, each bounded by `timeout`
# so that none outlives a check that ctest kills.
set(hog_pids "")
foreach(i RANGE 1 ${HOGS})
  if(HOGS EQUAL 0)
    break()
  endif()
  execute_process(
    COMMAND sh -c "timeout 1800 sh -c 'while :; do :; done' >/dev/null 2>&1 </dev/null & echo $!"
    OUTPUT_VARIABLE pid OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND hog_pids ${pid})
endforeach()
macro(stop_hogs)
  if(hog_pids)
    execute_process(COMMAND kill ${hog_pids} ERROR_QUIET)
    set(hog_pids "")
  endif()
endmacro()
macro(fail text)
  stop_hogs()
  message(FATAL_ERROR "${text}")
endmacro()

# Runs the suite under `seed`, its trace in trace-<name>.txt; sets
# hash_<name> and count_<name>.
macro(run_suite name seed)
  set(trace "${OUT_DIR}/trace-${name}.txt")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env
            ${LIBRARY_VAR}=${SIM_LIBRARY} HALSIM_SEED=${seed}
            HALSIM_TRACE=${trace} HALSIM_RACES=abort
            ${HAL_CHECK} --device=${DEVICE} ${filter_arg}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail("hal-check with HALSIM_SEED=${seed} failed (${rc}):\n${out}\n${err}")
  endif()
  file(SHA256 "${trace}" hash_${name})
  file(STRINGS "${trace}" lines_${name})
  list(LENGTH lines_${name} count_${name})
  message(STATUS "seed ${seed}: ${count_${name}} trace lines, sha256 ${hash_${name}}")
endmacro()

message(STATUS "${HOGS} CPU hogs beside the suite, ${ROUNDS} round(s)")
run_suite(a ${SEED})
foreach(round RANGE 1 ${ROUNDS})
  run_suite(b ${SEED})
  if(NOT hash_a STREQUAL hash_b)
    execute_process(COMMAND diff "${OUT_DIR}/trace-a.txt" "${OUT_DIR}/trace-b.txt"
                    OUTPUT_VARIABLE diff_out)
    string(SUBSTRING "${diff_out}" 0 2000 diff_out)
    fail("HALSIM_SEED=${SEED} did not replay (round ${round} of ${ROUNDS}, ${HOGS} CPU hogs): the two traces differ:\n${diff_out}")
  endif()
endforeach()
run_suite(c ${OTHER_SEED})
stop_hogs()
if(hash_a STREQUAL hash_c)
  message(FATAL_ERROR "seeds ${SEED} and ${OTHER_SEED} gave the same trace: the seed does not drive the schedule")
endif()
message(STATUS "replayed: seed ${SEED} ${ROUNDS}+1 times identical beside ${HOGS} CPU hogs, seed ${OTHER_SEED} different")
