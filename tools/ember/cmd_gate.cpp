// placeholder, replaced below
#include "tools/ember/commands.h"
namespace ember::cli {
int cmd_gate(int, char**) { return 2; }
}  // namespace ember::cli
