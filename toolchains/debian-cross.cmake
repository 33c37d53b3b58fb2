# Shared part of the Debian cross toolchain files (aarch64-linux-gnu.cmake,
# arm-linux-gnueabihf.cmake set EMBER_CROSS_TRIPLET and EMBER_QEMU, then
# include this). Not a toolchain file on its own.
#
# Two roots are searched for target files: the cross compiler's own
# (/usr/<triplet>: glibc, libstdc++) and EMBER_SYSROOT, the target's Debian
# packages unpacked by platforms/linux/sysroot.sh (mbedTLS, FlatBuffers and
# doctest headers). Programs (flatc, glslc) are the host's.
# The top-level CMakeLists.txt ("Cross builds" section) adds EMBER_SYSROOT's
# include folder and checks it exists.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${EMBER_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${EMBER_CROSS_TRIPLET}-g++)
# Debian's multiarch folders (usr/lib/<triplet>) inside the roots below.
set(CMAKE_LIBRARY_ARCHITECTURE ${EMBER_CROSS_TRIPLET})

# The unpacked packages; default: <build>/sysroot. CMake reads a toolchain
# file again for each try_compile project, whose binary dir differs: the
# variables listed below carry the first reading's values into those.
if(NOT EMBER_SYSROOT)
  set(EMBER_SYSROOT ${CMAKE_BINARY_DIR}/sysroot CACHE PATH
      "Target packages unpacked by platforms/linux/sysroot.sh")
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES EMBER_SYSROOT EMBER_BOARD)

set(CMAKE_FIND_ROOT_PATH ${EMBER_SYSROOT} /usr/${EMBER_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Shared libraries from the sysroot resolve at link time without being
# installed anywhere.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${EMBER_SYSROOT}/usr/lib/${EMBER_CROSS_TRIPLET}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${EMBER_SYSROOT}/usr/lib/${EMBER_CROSS_TRIPLET}")

# ctest, doctest_discover_tests and the tests that run `ember` go through
# qemu-user (apt: qemu-user; binfmt_misc is not needed). -L: the target's
# dynamic loader and libc; -E: the sysroot's shared libraries, for the
# guest only. QEMU_CPU in the environment picks the CPU model (qemu's
# default, "max", has every extension, dot-product included).
find_program(EMBER_QEMU_PROGRAM ${EMBER_QEMU})
if(EMBER_QEMU_PROGRAM)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMBER_QEMU_PROGRAM} -L /usr/${EMBER_CROSS_TRIPLET}
      -E LD_LIBRARY_PATH=${EMBER_SYSROOT}/usr/lib/${EMBER_CROSS_TRIPLET})
endif()

# Board tuning: -DEMBER_BOARD=rpi4|rpi5 reads toolchains/boards/<name>.cmake.
if(EMBER_BOARD)
  if(NOT EXISTS ${CMAKE_CURRENT_LIST_DIR}/boards/${EMBER_BOARD}.cmake)
    message(FATAL_ERROR "EMBER_BOARD=${EMBER_BOARD}: no toolchains/boards/${EMBER_BOARD}.cmake")
  endif()
  include(${CMAKE_CURRENT_LIST_DIR}/boards/${EMBER_BOARD}.cmake)
endif()
