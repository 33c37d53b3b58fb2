# Raspberry Pi 5 (BCM2712: 4x Cortex-A76, ARMv8.2-A, NEON, dot-product,
# FP16 arithmetic). Read by the toolchain files for -DEMBER_BOARD=rpi5.
#
# Tuned for the A76, but NOT -mcpu=cortex-a76 / -march=armv8.2-a: those let
# the compiler put dot-product and FP16 instructions in any function, and
# the binary would die with SIGILL on a Pi 4. The dot-product kernels
# (backends/cpu/kernels/*__neondot.cpp) get +dotprod per file and the runtime
# picks them after probing the CPU (EMBER_ISA=neon forces the other path).
set(EMBER_BOARD_DESCRIPTION "Raspberry Pi 5 (Cortex-A76)")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(EMBER_BOARD_FLAGS "-mtune=cortex-a76")
else()
  set(EMBER_BOARD_FLAGS "-march=armv8-a -mtune=cortex-a76 -mfpu=neon-fp-armv8 -mfloat-abi=hard")
endif()
set(CMAKE_C_FLAGS_INIT "${CMAKE_C_FLAGS_INIT} ${EMBER_BOARD_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${CMAKE_CXX_FLAGS_INIT} ${EMBER_BOARD_FLAGS}")
