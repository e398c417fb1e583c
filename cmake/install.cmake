# Install rules, the CMake package config (find_package(gpuhal)) and the
# Debian package (cpack -G DEB). Included once, at the end of the top-level
# CMakeLists.txt, so that it sees every target; it refers to the targets by
# name and the folders that define them need no install code.
#
# What is installed (docs/tools/*.md, README "Use it from your project"):
#   lib/                 the static libraries of every layer that was built
#                        (libhal_core.a, ...) and the simulated vendor
#                        libraries (libhalsim_cuda.so, ...)
#   lib/cmake/gpuhal/    gpuhalConfig.cmake, its version file, the targets
#   include/hal/*.h      the public API, and only it: not hal/cts/ (the
#                        suite), hal/testing/ (test fakes), hal/utils/ (driver
#                        machinery, e.g. buffer_internal.h) nor driver headers;
#                        a program creates devices through the registry by URI
#   bin/                 hal-info, hal-pack and hal-check (a wrapper that points
#                        the suite at the installed test kernels)
#   libexec/gpuhal/      the hal-check binary
#   share/gpuhal/schemas the executable-format FlatBuffers schemas (*.fbs)
#   share/gpuhal/kernels the conformance suite's test kernels (with hal-check)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GPUHAL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpuhal)

# Layer targets, bottom up, and their exported names (gpuhal::<name>).
set(_gpuhal_layers
    hal_schemas_headers schemas
    hal_formats formats
    hal_core core
    hal_utils utils
    halsim_core sim_core
    hal_sim sim
    hal_gpu gpu
    hal_cuda cuda
    hal_hip hip
    hal_level_zero level_zero
    hal_amdgpu amdgpu
    halsim_metal sim_metal
    hal_metal metal
    hal_drivers drivers)
set(_gpuhal_targets "")
list(LENGTH _gpuhal_layers _n)
math(EXPR _last "${_n} - 1")
foreach(i RANGE 0 ${_last} 2)
  math(EXPR j "${i} + 1")
  list(GET _gpuhal_layers ${i} target)
  list(GET _gpuhal_layers ${j} name)
  if(TARGET ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
    list(APPEND _gpuhal_targets ${target})
  endif()
endforeach()

# The sources find every header through the source root (a global
# include_directories), the generated schema headers through the build tree
# and the vendor headers (cuda.h, ...) where this machine has them; none of
# that is needed by a program that includes the installed API (include/hal/
# *.h include only each other), and an imported target that names a missing
# folder is an error, so every such path stays build-only and the install
# gets include/. The same for the vendor headers' definitions
# (__HIP_PLATFORM_AMD__), which a user's code must not inherit.
foreach(target ${_gpuhal_targets})
  foreach(property INTERFACE_INCLUDE_DIRECTORIES INTERFACE_COMPILE_DEFINITIONS
                   INTERFACE_COMPILE_OPTIONS)
    get_target_property(values ${target} ${property})
    if(values)
      set(wrapped "")
      foreach(value ${values})
        list(APPEND wrapped "$<BUILD_INTERFACE:${value}>")
      endforeach()
      set_property(TARGET ${target} PROPERTY ${property} ${wrapped})
    endif()
  endforeach()
endforeach()
target_include_directories(hal_core INTERFACE
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The installed headers are C++20 (std::span, concepts): a program that
# links any gpuhal:: target compiles as C++20 at least, whatever its own
# CMAKE_CXX_STANDARD (found by building the README's example in a fresh
# Debian 12 with no standard set).
target_compile_features(hal_core INTERFACE cxx_std_20)

# A sanitizer build installs instrumented archives: whoever links them needs
# the sanitizer runtime too.
if(HAL_ENABLE_ASAN)
  target_link_options(hal_core INTERFACE
                      $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
endif()
if(HAL_ENABLE_TSAN)
  target_link_options(hal_core INTERFACE $<INSTALL_INTERFACE:-fsanitize=thread>)
endif()

# The umbrella: every layer in the right link order by construction, since
# each layer's INTERFACE_LINK_LIBRARIES names the layers below it and
# hal_drivers names every driver built (drivers/CMakeLists.txt).
add_library(gpuhal_umbrella INTERFACE)
target_link_libraries(gpuhal_umbrella INTERFACE hal_drivers)
set_target_properties(gpuhal_umbrella PROPERTIES EXPORT_NAME hal)
list(APPEND _gpuhal_targets gpuhal_umbrella)

# The simulated Metal framework (clang builds on Linux) is a shared library
# the Metal driver links directly, so it is part of the export.
install(TARGETS ${_gpuhal_targets} EXPORT gpuhalTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(EXPORT gpuhalTargets NAMESPACE gpuhal::
        DESTINATION ${GPUHAL_INSTALL_CMAKEDIR} COMPONENT dev)

file(GLOB _gpuhal_public_headers ${CMAKE_SOURCE_DIR}/hal/*.h)
install(FILES ${_gpuhal_public_headers}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hal COMPONENT dev)
file(GLOB _gpuhal_schemas ${CMAKE_SOURCE_DIR}/hal/schemas/*.fbs)
set(GPUHAL_SCHEMA_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/gpuhal/schemas)
install(FILES ${_gpuhal_schemas}
        DESTINATION ${GPUHAL_SCHEMA_INSTALL_DIR} COMPONENT dev)

# Components: the drivers built into hal_drivers (find_package(gpuhal
# COMPONENTS cuda) fails where this install has no CUDA driver).
set(GPUHAL_DRIVERS "")
foreach(driver sim cuda hip level_zero amdgpu metal)
  if(TARGET hal_${driver})
    list(APPEND GPUHAL_DRIVERS ${driver})
  endif()
endforeach()

# The simulated vendor libraries (test doubles of libcuda, libamdhip64, the
# Level Zero driver, libhsa-runtime64).
set(_gpuhal_sim_libs "")
foreach(target halsim_cuda halsim_hip halsim_ze halsim_hsa)
  if(TARGET ${target})
    list(APPEND _gpuhal_sim_libs ${target})
  endif()
endforeach()
if(_gpuhal_sim_libs)
  install(TARGETS ${_gpuhal_sim_libs}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()

install(TARGETS hal-info hal-pack
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# Installed programs find the project's shared libraries (the simulated
# Metal framework, which clang builds link directly) in the install's lib/.
set_target_properties(hal-info hal-pack PROPERTIES
                      INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
if(TARGET hal-check)
  set_target_properties(hal-check PROPERTIES
                        INSTALL_RPATH "$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS hal-check
          RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpuhal COMPONENT runtime)
  get_property(_gpuhal_kernel_dir GLOBAL PROPERTY HAL_TEST_KERNEL_DIR)
  if(_gpuhal_kernel_dir)
    install(DIRECTORY ${_gpuhal_kernel_dir}/
            DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuhal/kernels COMPONENT runtime)
  endif()
  # The HSA simulator runs the AMDGPU driver's device library (fills,
  # copies) as its native build (drivers/amdgpu/CMakeLists.txt).
  set(_gpuhal_hsa_device_library
      ${CMAKE_BINARY_DIR}/drivers/amdgpu/device_library/amdgpu_device_library.sim.so)
  if(TARGET halsim_hsa)
    install(FILES ${_gpuhal_hsa_device_library}
            DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuhal/hsa-device-library
            COMPONENT runtime)
  endif()
  # The binary finds its kernels in the build tree (compiled in) or through
  # HAL_CTS_KERNELS_DIR; the wrapper sets that to the installed copy,
  # relative to itself, so the install can move (a .deb, a tarball); the
  # same for the simulated vendor libraries' kernels and device library.
  set(GPUHAL_REL_LIBEXEC ${CMAKE_INSTALL_LIBEXECDIR})
  set(GPUHAL_REL_DATA ${CMAKE_INSTALL_DATADIR})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/hal-check.sh.in
                 ${CMAKE_BINARY_DIR}/install/hal-check @ONLY)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/install/hal-check
          DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/gpuhalConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/gpuhalConfig.cmake
  INSTALL_DESTINATION ${GPUHAL_INSTALL_CMAKEDIR}
  PATH_VARS GPUHAL_SCHEMA_INSTALL_DIR)
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/install/gpuhalConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/gpuhalConfig.cmake
              ${CMAKE_BINARY_DIR}/install/gpuhalConfigVersion.cmake
        DESTINATION ${GPUHAL_INSTALL_CMAKEDIR} COMPONENT dev)

include(${CMAKE_CURRENT_LIST_DIR}/package.cmake)

# The install-and-use check (tests/install/): a temporary prefix, an outside
# project built with this build's compiler, the installed hal-check.
if(HAL_BUILD_TESTS AND HAL_DRIVER_SIM)
  set(_gpuhal_app_args -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE})
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    list(APPEND _gpuhal_app_args
         -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  add_test(NAME unit.install.find_package
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/install_test.sh
                   ${CMAKE_BINARY_DIR} ${CMAKE_CXX_COMPILER} ${_gpuhal_app_args})
  set_tests_properties(unit.install.find_package PROPERTIES
                       LABELS "unit;install" TIMEOUT 120)
  # The Debian package, checked from its extracted files (ci/package-check).
  find_program(HAL_DPKG_DEB dpkg-deb)
  if(HAL_DPKG_DEB)
    # Both install from this tree (install_manifest.txt): one at a time.
    set_tests_properties(unit.install.find_package PROPERTIES
                         RESOURCE_LOCK gpuhal_install_tree)
    add_test(NAME unit.install.package
             COMMAND bash ${CMAKE_SOURCE_DIR}/ci/package-check
                     --build-dir ${CMAKE_BINARY_DIR}
                     --filter "Semaphore.*:QueueTransfer.*:Dispatch.*")
    set_tests_properties(unit.install.package PROPERTIES
                         LABELS "unit;install" TIMEOUT 120
                         ENVIRONMENT "CXX=${CMAKE_CXX_COMPILER}"
                         RESOURCE_LOCK gpuhal_install_tree)
  endif()
endif()

# The CI workflows and the docs, checked as far as this machine can: every
# workflow parses and every ci/ script it names answers --help; every
# relative link in README.md and docs/ resolves inside the clone, shell
# examples quote ? and &, docs/testing.md lists every fuzzer.
if(HAL_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    add_test(NAME unit.install.workflows
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/ci/check-workflows
                     ${CMAKE_SOURCE_DIR})
    add_test(NAME unit.install.docs
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/ci/check-docs
                     ${CMAKE_SOURCE_DIR})
    set_tests_properties(unit.install.workflows unit.install.docs
                         PROPERTIES LABELS "unit;install" TIMEOUT 120)
  endif()
endif()
