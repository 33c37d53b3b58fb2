// `ember serve` (tools/serve): built when its libraries were found
// (libhttp-parser, mbedTLS's TLS and X.509 archives, nlohmann-json; see
// CMakeLists.txt); otherwise the command says what is missing.
#include "tools/ember/args.h"
#include "tools/ember/commands.h"

#if EMBER_SERVE
namespace ember::serve {
int serve_main(int argc, char** argv);
}
#endif

namespace ember::cli {

int cmd_serve(int argc, char** argv) {
#if EMBER_SERVE
  return ember::serve::serve_main(argc, argv);
#else
  (void)argc;
  (void)argv;
  return report(EMBER_ERR_UNSUPPORTED, "this ember was built without `ember serve`: " EMBER_SERVE_MISSING);
#endif
}

}  // namespace ember::cli
