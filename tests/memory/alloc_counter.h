#pragma once

namespace ember::test {
// Heap allocations made (on any thread) between start and stop.
void start_counting_allocations();
long stop_counting_allocations();
}  // namespace ember::test
