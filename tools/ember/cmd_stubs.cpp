// Temporary: commands not yet written.
#include <cstdio>
#include "tools/ember/commands.h"
namespace ember::cli {
static int todo(const char* n) { std::fprintf(stderr, "EMBER_ERR_UNSUPPORTED: '%s' is not built yet\n", n); return 1; }
int cmd_run(int, char**) { return todo("run"); }
int cmd_demo(int, char**) { return todo("demo"); }
int cmd_convert(int, char**) { return todo("convert"); }
int cmd_info(int, char**) { return todo("info"); }
int cmd_tokenize(int, char**) { return todo("tokenize"); }
}
