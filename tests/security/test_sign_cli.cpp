// `ember keygen`, `ember sign`, `ember verify` and `ember run
// --require-signature` end to end on a tiny synthetic model.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "tools/tools_helpers.h"

namespace ember {
namespace {

int exit_code(int pclose_status) { return WIFEXITED(pclose_status) ? WEXITSTATUS(pclose_status) : -1; }

void flip_byte(const std::string& path, std::streamoff from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-from_end, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x20;
  f.seekp(-from_end, std::ios::end);
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("ember keygen, sign, verify, run --require-signature") {
  const std::string dir = test::temp_dir("sign_cli");
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  SynthShape shape;
  REQUIRE(synth_shape("tiny", &shape));
  const std::string model = test::synth_ember(dir, shape, DType::F32, 3, "m.ember");
  const std::string k1 = dir + "/k1.pem", p1 = dir + "/p1.pem", k2 = dir + "/k2.pem", p2 = dir + "/p2.pem";
  const auto plain_size = std::filesystem::file_size(model);

  REQUIRE(exit_code(test::run_cli("keygen --private " + k1 + " --public " + p1 + " 2>&1").rc) == 0);
  REQUIRE(exit_code(test::run_cli("keygen --private " + k2 + " --public " + p2 + " 2>&1").rc) == 0);
  CHECK((std::filesystem::status(k1).permissions() & std::filesystem::perms::others_read) ==
        std::filesystem::perms::none);
  // keygen never overwrites
  auto again = test::run_cli("keygen --private " + k1 + " --public " + dir + "/p3.pem 2>&1");
  CHECK(exit_code(again.rc) == 1);
  CHECK(again.out.find("never overwrites") != std::string::npos);

  // unsigned: verify without a key says so; with a key it is refused
  auto v = test::run_cli("verify " + model + " 2>&1");
  CHECK(exit_code(v.rc) == 0);
  CHECK(v.out.find("signature  none") != std::string::npos);
  v = test::run_cli("verify " + model + " --pubkey " + p1 + " 2>&1");
  CHECK(exit_code(v.rc) == 1);
  CHECK(v.out.find("EMBER_ERR_SIGNATURE") != std::string::npos);
  CHECK(v.out.find("no signature trailer") != std::string::npos);
  auto r = test::run_cli("run -m " + model + " -p hi -n 2 --require-signature " + p1 + " 2>&1");
  CHECK(exit_code(r.rc) == 1);
  CHECK(r.out.find("EMBER_ERR_SIGNATURE") != std::string::npos);

  // sign, verify, run
  auto s = test::run_cli("sign " + model + " --key " + k1 + " 2>&1");
  INFO(s.out);
  REQUIRE(exit_code(s.rc) == 0);
  CHECK(std::filesystem::file_size(model) == plain_size + kTrailerSize);
  v = test::run_cli("verify " + model + " --pubkey " + p1 + " 2>&1");
  INFO(v.out);
  CHECK(exit_code(v.rc) == 0);
  CHECK(v.out.rfind("OK ", 0) == 0);
  CHECK(v.out.find("signature  ECDSA P-256") != std::string::npos);
  r = test::run_cli("run -m " + model + " -p hi -n 2 --require-signature " + p1 + " 2>&1");
  CHECK(exit_code(r.rc) == 0);
  // another key
  v = test::run_cli("verify " + model + " --pubkey " + p2 + " 2>&1");
  CHECK(exit_code(v.rc) == 1);
  CHECK(v.out.find("another key") != std::string::npos);
  r = test::run_cli("run -m " + model + " -p hi -n 2 --require-signature " + p2 + " 2>&1");
  CHECK(exit_code(r.rc) == 1);
  CHECK(r.out.find("another key") != std::string::npos);

  // re-signing replaces the trailer (the size stays), and with key 2 key 1 no longer verifies
  s = test::run_cli("sign " + model + " --key " + k2 + " 2>&1");
  CHECK(exit_code(s.rc) == 0);
  CHECK(s.out.find("replaced") != std::string::npos);
  CHECK(std::filesystem::file_size(model) == plain_size + kTrailerSize);
  CHECK(exit_code(test::run_cli("verify " + model + " --pubkey " + p2 + " 2>&1").rc) == 0);
  CHECK(exit_code(test::run_cli("verify " + model + " --pubkey " + p1 + " 2>&1").rc) == 1);

  // a weight byte changed after signing: the signature refuses it; sign refuses to sign it (digest)
  flip_byte(model, static_cast<std::streamoff>(kTrailerSize) + 10);
  v = test::run_cli("verify " + model + " --pubkey " + p2 + " 2>&1");
  CHECK(exit_code(v.rc) == 1);
  CHECK(v.out.find("EMBER_ERR_SIGNATURE") != std::string::npos);
  v = test::run_cli("verify " + model + " 2>&1");
  CHECK(exit_code(v.rc) == 1);
  CHECK(v.out.find("EMBER_ERR_INTEGRITY") != std::string::npos);
  s = test::run_cli("sign " + model + " --key " + k1 + " 2>&1");
  CHECK(exit_code(s.rc) == 1);
  CHECK(s.out.find("refusing to sign") != std::string::npos);
  // a public key cannot sign
  flip_byte(model, static_cast<std::streamoff>(kTrailerSize) + 10);
  s = test::run_cli("sign " + model + " --key " + p1 + " 2>&1");
  CHECK(exit_code(s.rc) == 1);
  CHECK(s.out.find("EMBER_ERR_INVALID_ARGUMENT") != std::string::npos);
}

}  // namespace ember
