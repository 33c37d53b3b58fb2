#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// Under AddressSanitizer (gcc's or clang's), SIGBUS stays the process's:
// ASan's own handler would turn the SIGBUS a test provokes on purpose (a
// mapped model file truncated while unguarded: tests/security) into a
// report and exit 1, so the test could not check the default action a host
// gets. ASAN_OPTIONS from the environment still add to and override this.
// Exported: gcc links ASan as a shared library. Unused without ASan.
extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() { return "handle_sigbus=0"; }
