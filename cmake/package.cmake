# cpack -G DEB: one Debian package of the whole install (runtime and dev
# files), built by ci/package-check. The drivers open their vendor libraries
# at run time (dlopen) and answer UNAVAILABLE without them, so the vendor
# libraries are Suggests, never Depends; dpkg-shlibdeps adds what the
# binaries do link (libc6, libstdc++6, libgcc-s1).
set(CPACK_PACKAGE_NAME gpuhal)
set(CPACK_PACKAGE_VENDOR "gpuhal")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU HAL with a deterministic CPU simulator and CUDA/HIP/Level Zero/AMDGPU drivers")
set(CPACK_PACKAGE_CONTACT "gpuhal maintainers <gpuhal@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Strips the tools and the shared libraries (not the static archives).
set(CPACK_STRIP_FILES ON)
# Debian 12 package names (apt-cache policy): the Level Zero loader (libze1),
# ROCm's HIP runtime (libamdhip64-5) and ROCr (libhsa-runtime64-1) are in
# main; NVIDIA's libcuda1 is in non-free.
set(_gpuhal_suggests "")
foreach(pair "cuda;libcuda1" "hip;libamdhip64-5" "level_zero;libze1"
        "amdgpu;libhsa-runtime64-1")
  list(GET pair 0 driver)
  list(GET pair 1 package)
  if(driver IN_LIST GPUHAL_DRIVERS)
    list(APPEND _gpuhal_suggests ${package})
  endif()
endforeach()
list(JOIN _gpuhal_suggests ", " CPACK_DEBIAN_PACKAGE_SUGGESTS)
# The package config's find_dependency(Threads) and a C++20 compiler.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake (>= 3.25), g++ (>= 4:12)")
include(CPack)
