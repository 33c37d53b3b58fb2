# Raspberry Pi 4 (BCM2711: 4x Cortex-A72, ARMv8.0-A, NEON, no dot-product,
# no FP16 arithmetic). Read by the toolchain files for -DEMBER_BOARD=rpi4.
#
# aarch64: tune for the A72 but keep the ARMv8-A baseline, which the A72 is;
# the runtime's probe picks the "neon" kernels on this core.
# armhf: the A72 runs AArch32 with NEON and VFPv4, so the whole 32-bit build
# may use them (it then needs a Pi 2 v1.2 or later: Cortex-A53 and up).
set(EMBER_BOARD_DESCRIPTION "Raspberry Pi 4 (Cortex-A72)")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(EMBER_BOARD_FLAGS "-mtune=cortex-a72")
else()
  set(EMBER_BOARD_FLAGS "-march=armv8-a -mtune=cortex-a72 -mfpu=neon-fp-armv8 -mfloat-abi=hard")
endif()
set(CMAKE_C_FLAGS_INIT "${CMAKE_C_FLAGS_INIT} ${EMBER_BOARD_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${CMAKE_CXX_FLAGS_INIT} ${EMBER_BOARD_FLAGS}")
