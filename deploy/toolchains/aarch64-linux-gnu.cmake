# Cross-builds rdmanet for arm64 (aarch64, e.g. NVIDIA Grace) on an x86-64 Debian 12 machine with
# Debian's cross toolchain (crossbuild-essential-arm64) and the multiarch ":arm64" -dev packages.
# tests/run.sh build --arch arm64 installs those and configures with this file:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=deploy/toolchains/aarch64-linux-gnu.cmake \
#     [-DRDMANET_ARM64_EXTRA_PREFIX=<dir>/usr]
# RDMANET_ARM64_EXTRA_PREFIX: a directory tree unpacked from arm64 .debs that cannot be installed
# next to their amd64 twins (libyaml-cpp-dev:arm64 would remove libyaml-cpp-dev); searched before
# the system's arm64 libraries, for CMake packages, libraries and pkg-config files.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch layout: the arm64 libraries live in /usr/lib/aarch64-linux-gnu of this very
# root, so there is no sysroot; the architecture triplet makes find_library/find_package look there
# (and not in /usr/lib/x86_64-linux-gnu).
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# try_compile projects see the same settings.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RDMANET_ARM64_EXTRA_PREFIX)

if(RDMANET_ARM64_EXTRA_PREFIX)
  list(PREPEND CMAKE_PREFIX_PATH ${RDMANET_ARM64_EXTRA_PREFIX})
  set(_rdmanet_extra_pc ${RDMANET_ARM64_EXTRA_PREFIX}/lib/aarch64-linux-gnu/pkgconfig:)
endif()
# pkg-config must read the arm64 .pc files only: Debian 12 has no aarch64-linux-gnu-pkg-config
# unless pkgconf:arm64 is installed, and the host's pkg-config would otherwise find the amd64
# libraries' flags.
set(ENV{PKG_CONFIG_LIBDIR} "${_rdmanet_extra_pc}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Grace kernels often run with 64K pages (Debian ships a 16K-page arm64 flavour): a LOAD segment
# aligned to 4K does not load there (the kernel maps whole pages; the binary dies with SIGSEGV).
# binutils 2.40 already aligns aarch64 segments to 64K; the flag keeps it so with any linker default.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-z,max-page-size=0x10000")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-z,max-page-size=0x10000")

# Test programs built here run under Debian's qemu-user-static (catch_discover_tests lists their
# cases at build time, ctest runs them): the arm64 loader and libraries from this root's multiarch
# directories, yaml-cpp's shared library from the extra prefix. Called directly, not through
# binfmt_misc, which the build machine need not have.
set(_rdmanet_emulator qemu-aarch64-static -L /)
if(RDMANET_ARM64_EXTRA_PREFIX)
  list(APPEND _rdmanet_emulator -E LD_LIBRARY_PATH=${RDMANET_ARM64_EXTRA_PREFIX}/lib/aarch64-linux-gnu)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${_rdmanet_emulator})

# Programs found are the build machine's (cmake, pkg-config, go), libraries and headers the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
