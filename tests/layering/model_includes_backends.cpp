// Planted: runtime/model reaches a backend only through the registry
// (create_backend), never its header. Must fail with
// "backends/vulkan/vulkan_backend.h" not found.
#include "model/session.h"
#include "backends/vulkan/vulkan_backend.h"
