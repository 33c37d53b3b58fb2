# Cross build for 32-bit ARM Linux, hard-float (Raspberry Pi OS 32-bit,
# Debian armhf) with Debian's cross compiler (apt: g++-arm-linux-gnueabihf):
#
#   platforms/linux/sysroot.sh armhf            # target packages -> build-armhf/sysroot
#   cmake -S . -B build-armhf -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake
#         [-DEMBER_BOARD=rpi4]
#
# Debian's armhf baseline is ARMv7-A with VFPv3-D16 and no NEON; ember has no
# 32-bit NEON kernels, so this build runs the portable kernels (a 64-bit OS
# and the aarch64 build are much faster on a Pi 3/4/5). A 32-bit process has
# about 3 GiB of address space: the mapped model must fit in it.
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(EMBER_CROSS_TRIPLET arm-linux-gnueabihf)
set(EMBER_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
