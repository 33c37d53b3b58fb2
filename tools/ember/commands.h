// Subcommands of the `ember` tool. Each takes argv with argv[0] = its name
// and returns the process exit code.
#pragma once

#include "ember.h"

namespace ember::cli {

int cmd_run(int argc, char** argv);
int cmd_demo(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);

}  // namespace ember::cli
