# Cross build for 64-bit ARM Linux (Raspberry Pi 3/4/5 on a 64-bit OS, other
# Cortex-A boards) with Debian's cross compiler (apt: g++-aarch64-linux-gnu):
#
#   platforms/linux/sysroot.sh aarch64          # target packages -> build-aarch64/sysroot
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake
#         [-DEMBER_BOARD=rpi4|rpi5] [-DEMBER_STATIC=ON]
#
# or simply platforms/linux/cross-test.sh aarch64. The code is built for the
# ARMv8-A baseline (NEON included); the dot-product kernels get their own
# flags per file and are chosen at run time, so any build runs on any
# ARMv8-A core without SIGILL.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EMBER_CROSS_TRIPLET aarch64-linux-gnu)
set(EMBER_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
