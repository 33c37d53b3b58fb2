# Sourced by tools/scripts/sanitize.sh and tools/scripts/fuzz.sh.
#
# SAN_OPT: -O1 -g1 for every sanitized build, as the sanitizers' own docs
# advise: a third of -O2 -g's build time, with line tables for the reports.
SAN_OPT=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")

# asan_configure DIR: the one clang AddressSanitizer + UndefinedBehavior-
# Sanitizer build that sanitize.sh asan and fuzz.sh share (build-asan/). It
# holds the whole test suite, the CLI and the libFuzzer targets (tests/fuzz,
# EMBER_FUZZ=ON), every object compiled with -fsanitize=fuzzer-no-link
# (libFuzzer's coverage counters; outside a fuzz target the ASan runtime's
# no-op hooks take them), so the library compiles once for the sanitized
# tests and the fuzzers. Vulkan off unless EMBER_VULKAN=ON (lavapipe under
# ASan is slow, and its own leaks are not ours).
asan_configure() {
  local flags="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined"
  CC=clang CXX=clang++ cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${SAN_OPT[@]}" \
    -DEMBER_SANITIZE=address,undefined -DEMBER_VULKAN="${EMBER_VULKAN:-OFF}" -DEMBER_FUZZ=ON \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
}
