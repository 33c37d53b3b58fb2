#!/usr/bin/env bash
# Sanitizer runs of the test suite:
#   asan  — AddressSanitizer + UndefinedBehaviorSanitizer (clang) build of
#           the whole suite in build-asan/, every test through ctest; any
#           report fails the run. The same build holds the libFuzzer
#           targets (tools/scripts/sanitized_build.sh), so tools/scripts/fuzz.sh
#           afterwards compiles nothing.
#   tsan  — ThreadSanitizer build in build-tsan/ of the threaded tests only
#           (ember_tsan_tests): many sessions on one model on many threads,
#           and sessions sharing one thread pool.
#   tools/scripts/sanitize.sh [asan|tsan|all]   (default all)
# Env: JOBS (default 2), EMBER_VULKAN (default OFF: lavapipe under ASan is
# slow and its own leaks are not ours), EMBER_TEST_DATA as for the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tools/scripts/sanitized_build.sh
. tools/scripts/sanitized_build.sh
WHAT=${1:-all}
JOBS=${JOBS:-2}

run_asan() {
  asan_configure build-asan
  cmake --build build-asan -j"$JOBS"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 900
}

run_tsan() {
  # Vulkan off (lavapipe's threads are not instrumented), so every thread the
  # test starts is ember's own thread pool.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${SAN_OPT[@]}" -DEMBER_SANITIZE=thread \
    -DEMBER_VULKAN=OFF >/dev/null
  cmake --build build-tsan -j"$JOBS" --target ember_tsan_tests
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
    build-tsan/tests/ember_tsan_tests
}

case "$WHAT" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan && run_tsan ;;
  *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;;
esac
