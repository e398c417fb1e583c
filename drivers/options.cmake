# Which drivers this build has, and what each needs to build: the vendor
# headers found, the HAL_DRIVER_* options, and for Metal the Objective-C++
# toolchain. Included from the top-level CMakeLists.txt before sim/ and
# drivers/, which build the simulated libraries and the drivers that are on.

# CUDA: on when the CUDA headers are found (the driver opens libcuda at run
# time, so only cuda.h is needed to build it).
find_path(HAL_CUDA_INCLUDE_DIR cuda.h
          HINTS $ENV{CUDA_PATH}/include $ENV{CUDA_HOME}/include /usr/local/cuda/include)
if(NOT HAL_CUDA_INCLUDE_DIR)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(HAL_CUDA_INCLUDE_DIR ${CUDAToolkit_INCLUDE_DIRS} CACHE PATH "" FORCE)
  endif()
endif()
if(HAL_CUDA_INCLUDE_DIR)
  option(HAL_DRIVER_CUDA "Build the CUDA driver and the CUDA API simulator" ON)
else()
  option(HAL_DRIVER_CUDA "Build the CUDA driver and the CUDA API simulator" OFF)
endif()
if(HAL_DRIVER_CUDA AND NOT HAL_CUDA_INCLUDE_DIR)
  message(STATUS "HAL_DRIVER_CUDA: cuda.h not found; skipping the CUDA driver")
  set(HAL_DRIVER_CUDA OFF)
endif()
# HIP: on when Debian's libamdhip64-dev headers are found (the driver opens
# libamdhip64 at run time, so only hip_runtime_api.h is needed to build it).
find_path(HAL_HIP_INCLUDE_DIR hip/hip_runtime_api.h
          HINTS $ENV{ROCM_PATH}/include /opt/rocm/include)
if(HAL_HIP_INCLUDE_DIR)
  option(HAL_DRIVER_HIP "Build the HIP driver and the HIP API simulator" ON)
else()
  option(HAL_DRIVER_HIP "Build the HIP driver and the HIP API simulator" OFF)
endif()
if(HAL_DRIVER_HIP AND NOT HAL_HIP_INCLUDE_DIR)
  message(STATUS "HAL_DRIVER_HIP: hip/hip_runtime_api.h not found (ci/setup "
                 "installs libamdhip64-dev); skipping the HIP driver")
  set(HAL_DRIVER_HIP OFF)
endif()

# Level Zero: the simulated driver library (sim/level_zero/) is built when
# Debian's libze-dev headers are found; the real loader loads it through
# ZE_ENABLE_ALT_DRIVERS; with it, the Level Zero driver (drivers/level_zero/),
# which opens the loader at run time.
find_path(HAL_ZE_INCLUDE_DIR level_zero/ze_api.h)
if(HAL_ZE_INCLUDE_DIR)
  option(HAL_SIM_LEVEL_ZERO "Build the simulated Level Zero driver" ON)
else()
  option(HAL_SIM_LEVEL_ZERO "Build the simulated Level Zero driver" OFF)
endif()
if(HAL_SIM_LEVEL_ZERO AND NOT HAL_ZE_INCLUDE_DIR)
  message(STATUS "HAL_SIM_LEVEL_ZERO: level_zero/ze_api.h not found (ci/setup "
                 "installs libze-dev); skipping Level Zero")
  set(HAL_SIM_LEVEL_ZERO OFF)
endif()
# AMDGPU: on when Debian's libhsa-runtime-dev headers are found (the driver
# opens libhsa-runtime64 at run time, so only hsa/hsa.h is needed to build
# it); with it, the HSA simulator (sim/hsa/).
find_path(HAL_HSA_INCLUDE_DIR hsa/hsa.h HINTS $ENV{ROCM_PATH}/include /opt/rocm/include)
if(HAL_HSA_INCLUDE_DIR)
  option(HAL_DRIVER_AMDGPU "Build the AMDGPU (HSA) driver and the HSA simulator" ON)
else()
  option(HAL_DRIVER_AMDGPU "Build the AMDGPU (HSA) driver and the HSA simulator" OFF)
endif()
if(HAL_DRIVER_AMDGPU AND NOT HAL_HSA_INCLUDE_DIR)
  message(STATUS "HAL_DRIVER_AMDGPU: hsa/hsa.h not found (ci/setup installs "
                 "libhsa-runtime-dev); skipping the AMDGPU driver")
  set(HAL_DRIVER_AMDGPU OFF)
endif()
# Where the AMDGPU device library's native build goes (drivers/amdgpu
# builds it; the HSA simulator, sim/hsa, runs it).
set(HAL_AMDGPU_DEVICE_LIBRARY_NATIVE_DIR
    ${CMAKE_BINARY_DIR}/drivers/amdgpu/device_library)

# Metal: Objective-C++ over GNUstep Foundation and the blocks runtime
# (libgnustep-base-dev, libblocksruntime-dev; ci/setup), with clang and GCC's
# Objective-C runtime (-fobjc-runtime=gcc); on Linux against the simulated
# Metal framework (sim/metal/). Skipped where the compiler is not clang or
# the packages are missing. See docs/drivers/metal.md.
set(HAL_METAL_AVAILABLE OFF)
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(STATUS "HAL_DRIVER_METAL: the compiler is ${CMAKE_CXX_COMPILER_ID}, "
                 "not clang; skipping the Metal driver (the clang, asan and "
                 "tsan presets build it)")
elseif(NOT APPLE)
  find_path(HAL_GNUSTEP_INCLUDE_DIR Foundation/Foundation.h
            PATHS /usr/include/GNUstep /usr/local/include/GNUstep)
  find_library(HAL_GNUSTEP_BASE_LIBRARY gnustep-base)
  find_library(HAL_BLOCKS_RUNTIME_LIBRARY BlocksRuntime)
  find_library(HAL_OBJC_RUNTIME_LIBRARY objc
               PATHS /usr/lib/gcc/x86_64-linux-gnu/12 /usr/lib/gcc/aarch64-linux-gnu/12)
  file(GLOB _hal_objc_headers /usr/lib/gcc/*/*/include/objc/objc.h)
  set(HAL_OBJC_RUNTIME_INCLUDE_DIR "")
  if(_hal_objc_headers)
    list(GET _hal_objc_headers 0 _hal_objc_header)
    get_filename_component(_hal_objc_dir ${_hal_objc_header} DIRECTORY)
    get_filename_component(HAL_OBJC_RUNTIME_INCLUDE_DIR ${_hal_objc_dir} DIRECTORY)
  endif()
  if(HAL_GNUSTEP_INCLUDE_DIR AND HAL_GNUSTEP_BASE_LIBRARY AND
     HAL_BLOCKS_RUNTIME_LIBRARY AND HAL_OBJC_RUNTIME_LIBRARY AND
     HAL_OBJC_RUNTIME_INCLUDE_DIR)
    set(HAL_METAL_AVAILABLE ON)
  else()
    message(STATUS "HAL_DRIVER_METAL: GNUstep Foundation, the blocks runtime "
                   "or GCC's Objective-C runtime not found (ci/setup installs "
                   "libgnustep-base-dev libblocksruntime-dev); skipping the "
                   "Metal driver")
  endif()
else()
  # macOS (AppleClang): Apple's SDK has Metal and Foundation.
  set(HAL_METAL_AVAILABLE ON)
endif()
option(HAL_DRIVER_METAL "Build the Metal driver and the simulated Metal framework"
       ${HAL_METAL_AVAILABLE})
if(HAL_DRIVER_METAL AND NOT HAL_METAL_AVAILABLE)
  message(STATUS "HAL_DRIVER_METAL: requirements missing; skipping")
  set(HAL_DRIVER_METAL OFF)
endif()
if(HAL_DRIVER_METAL AND APPLE)
  message(STATUS "HAL_DRIVER_METAL: the macOS branch has never been built here")
endif()
if(HAL_DRIVER_METAL)
  set(CMAKE_OBJCXX_COMPILER ${CMAKE_CXX_COMPILER})
  set(CMAKE_OBJCXX_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
  enable_language(OBJCXX)
  set(CMAKE_OBJCXX_STANDARD 20)
  set(CMAKE_OBJCXX_STANDARD_REQUIRED ON)
  if(NOT APPLE)
    # No ARC: explicit retain/release, as the driver's design says.
    set(HAL_OBJC_FLAGS
      $<$<COMPILE_LANGUAGE:OBJCXX>:-fobjc-runtime=gcc -fblocks -fobjc-exceptions
        -fconstant-string-class=NSConstantString -DGNUSTEP
        -DGNUSTEP_BASE_LIBRARY=1 -DGNU_RUNTIME=1 -Wno-deprecated-objc-isa-usage>)
    set(HAL_OBJC_INCLUDE_DIRS ${CMAKE_SOURCE_DIR}/sim/metal/shim
        ${HAL_GNUSTEP_INCLUDE_DIR} ${HAL_OBJC_RUNTIME_INCLUDE_DIR})
    # libBlocksRuntime first: gnustep-base exports a _Block_copy of its own
    # that does not copy clang's stack blocks (it returns the stack block),
    # and the first library in the search order wins.
    set(HAL_OBJC_LIBRARIES ${HAL_BLOCKS_RUNTIME_LIBRARY}
        ${HAL_GNUSTEP_BASE_LIBRARY} ${HAL_OBJC_RUNTIME_LIBRARY})
  endif()
endif()
