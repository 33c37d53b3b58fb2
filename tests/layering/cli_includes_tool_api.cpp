// Planted: only the files CMakeLists.txt lists in
// EMBER_CLI_FILE_FORMAT_SOURCES (at most four) see the tools-side header;
// any other file of tools/ember must fail with "tools/convert/tool_api.h"
// not found.
#include "tools/ember/args.h"
#include "tools/convert/tool_api.h"
