// Signed models end to end: keys, the trailer, the integrity policy through
// ember_model_open, the CLI (keygen, sign, verify, run --require-signature),
// malformed trailers, and a file truncated while mapped.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "ember.h"
#include "format/model_file.h"
#include "model/model.h"
#include "model/session.h"
#include "security/signature.h"
#include "test_data.h"
#include "tools/convert/signing.h"
#include "tools/convert/synthetic.h"

namespace ember {
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

struct Fixture {
  std::string dir;
  KeyPairPem key1, key2;
  std::vector<uint8_t> plain;     // an unsigned micro model
  std::vector<uint8_t> plain_b;   // another model (other weights)
  Fixture() {
    dir = test::temp_dir("signature");
    auto k1 = generate_key_pair();
    auto k2 = generate_key_pair();
    if (k1.is_ok()) key1 = k1.value();
    if (k2.is_ok()) key2 = k2.value();
    SynthShape s;
    s.name = "micro";
    s.dim = 8;
    s.hidden_dim = 16;
    s.n_layers = 1;
    s.n_heads = 2;
    s.n_kv_heads = 1;
    s.context = 16;
    for (uint64_t seed : {7u, 8u}) {
      auto m = make_synthetic(s, DType::F32, seed, "");
      if (!m.is_ok()) continue;
      auto f = serialize_model(m.value()->spec);
      if (f.is_ok()) (seed == 7 ? plain : plain_b) = std::move(f).value();
    }
  }
  ~Fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const Fixture& fx() {
  static const Fixture f;
  return f;
}

// `file` (without any trailer) signed with `private_pem`.
std::vector<uint8_t> signed_copy(const std::vector<uint8_t>& file, const std::string& private_pem) {
  ModelContents c;
  REQUIRE(verify_model(file.data(), file.size(), &c).is_ok());
  auto t = make_signature_trailer(file.data(), c.signed_size, private_pem);
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  std::vector<uint8_t> out(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(c.signed_size));
  out.insert(out.end(), t->begin(), t->end());
  return out;
}

struct Outcome {
  ember_status code;
  std::string message;
};

Outcome open_with(const std::vector<uint8_t>& bytes, const std::string& name, int policy, const std::string& pem) {
  const std::string path = fx().dir + "/" + name + ".ember";
  write_bytes(path, bytes);
  ember_model_options o;
  ember_model_options_default(&o);
  o.integrity_policy = policy;
  if (!pem.empty()) {
    o.public_key_pem = pem.c_str();
    o.public_key_pem_len = pem.size();
  }
  ember_model* m = nullptr;
  Outcome r{ember_model_open(path.c_str(), &o, &m), ember_last_error()};
  if (r.code != EMBER_OK) CHECK(m == nullptr);
  ember_model_free(m);
  std::filesystem::remove(path);
  return r;
}

Outcome verify(const std::vector<uint8_t>& b) {
  ModelContents c;
  const Status s = verify_model(b.data(), b.size(), &c);
  return {s.code(), s.message()};
}

std::string name_of(ember_status s) { return ember_status_string(s); }

#define EXPECT_STATUS(expr, want, needle)                                                   \
  do {                                                                                      \
    const Outcome o_ = (expr);                                                              \
    INFO("message: " << o_.message);                                                        \
    CHECK(name_of(o_.code) == name_of(want));                                               \
    CHECK_MESSAGE(o_.message.find(needle) != std::string::npos, "lacks '" << (needle) << "'"); \
  } while (0)

}  // namespace

TEST_SUITE("security") {

TEST_CASE("keys: generate, key id, sign and verify a hash") {
  const Fixture& f = fx();
  REQUIRE(!f.key1.private_pem.empty());
  CHECK(f.key1.private_pem.find("BEGIN EC PRIVATE KEY") != std::string::npos);
  CHECK(f.key1.public_pem.find("BEGIN PUBLIC KEY") != std::string::npos);
  auto id_pub = key_id_from_pem(f.key1.public_pem);
  auto id_priv = key_id_from_pem(f.key1.private_pem);
  REQUIRE(id_pub.is_ok());
  REQUIRE(id_priv.is_ok());
  CHECK(id_pub.value() == id_priv.value());
  CHECK(key_id_from_pem(f.key2.public_pem).value() != id_pub.value());

  const Sha256Digest h = sha256("ember", 5);
  auto sig = sign_hash(f.key1.private_pem, h);
  REQUIRE(sig.is_ok());
  CHECK(sig->size() <= kMaxSignatureBytes);
  CHECK(verify_hash_signature(f.key1.public_pem, h, sig->data(), sig->size()).is_ok());
  const Sha256Digest other = sha256("embers", 6);
  CHECK(verify_hash_signature(f.key1.public_pem, other, sig->data(), sig->size()).code() == EMBER_ERR_SIGNATURE);
  CHECK(verify_hash_signature(f.key2.public_pem, h, sig->data(), sig->size()).code() == EMBER_ERR_SIGNATURE);
  auto bad = *sig;
  bad[bad.size() / 2] ^= 1;
  CHECK(verify_hash_signature(f.key1.public_pem, h, bad.data(), bad.size()).code() == EMBER_ERR_SIGNATURE);
  CHECK(verify_hash_signature(f.key1.public_pem, h, sig->data(), 0).code() == EMBER_ERR_SIGNATURE);

  // Not keys.
  CHECK(key_id_from_pem("").status().code() == EMBER_ERR_INVALID_ARGUMENT);
  CHECK(key_id_from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").status().code() ==
        EMBER_ERR_INVALID_ARGUMENT);
  CHECK(sign_hash(f.key1.public_pem, h).status().code() == EMBER_ERR_INVALID_ARGUMENT);  // a public key cannot sign
  CHECK(verify_hash_signature("garbage", h, sig->data(), sig->size()).code() == EMBER_ERR_INVALID_ARGUMENT);
}

TEST_CASE("policy through ember_model_open: each refusal has its own status and message") {
  const Fixture& f = fx();
  REQUIRE(!f.plain.empty());
  const auto good = signed_copy(f.plain, f.key1.private_pem);
  CHECK(good.size() == f.plain.size() + kTrailerSize);
  const std::string& pub1 = f.key1.public_pem;

  // Accepted.
  CHECK(open_with(good, "signed_sig", EMBER_INTEGRITY_SIGNATURE, pub1).code == EMBER_OK);
  CHECK(open_with(good, "signed_none", EMBER_INTEGRITY_NONE, "").code == EMBER_OK);
  CHECK(open_with(good, "signed_digest", EMBER_INTEGRITY_DIGEST, "").code == EMBER_OK);
  CHECK(open_with(f.plain, "plain_digest", EMBER_INTEGRITY_DIGEST, "").code == EMBER_OK);

  // Missing signature under the policy.
  EXPECT_STATUS(open_with(f.plain, "unsigned", EMBER_INTEGRITY_SIGNATURE, pub1), EMBER_ERR_SIGNATURE,
                "no signature trailer");
  // Signed by another key.
  EXPECT_STATUS(open_with(signed_copy(f.plain, f.key2.private_pem), "key2", EMBER_INTEGRITY_SIGNATURE, pub1),
                EMBER_ERR_SIGNATURE, "another key");
  // A signature made for another file (same key): model B with model A's trailer.
  {
    auto b = f.plain_b;
    b.insert(b.end(), good.end() - kTrailerSize, good.end());
    REQUIRE(verify(b).code == EMBER_OK);
    EXPECT_STATUS(open_with(b, "other_file", EMBER_INTEGRITY_SIGNATURE, pub1), EMBER_ERR_SIGNATURE,
                  "another file");
  }
  // A data byte changed after signing: signature (and digest) refuse it.
  {
    auto b = good;
    b[b.size() - kTrailerSize - 5] ^= 0x10;
    EXPECT_STATUS(open_with(b, "data_byte", EMBER_INTEGRITY_SIGNATURE, pub1), EMBER_ERR_SIGNATURE,
                  "changed after signing");
    EXPECT_STATUS(open_with(b, "data_byte_digest", EMBER_INTEGRITY_DIGEST, ""), EMBER_ERR_INTEGRITY, "SHA-256");
    CHECK(open_with(b, "data_byte_none", EMBER_INTEGRITY_NONE, "").code == EMBER_OK);  // policy none: structure only
  }
  // A metadata byte that keeps the structure valid (a tokenizer score): only the signature notices.
  {
    ModelContents c;
    REQUIRE(verify_model(good.data(), good.size(), &c).is_ok());
    auto b = good;
    // The last padding byte before the data must be zero: flip inside the FlatBuffer instead and keep
    // the first flip that still verifies.
    bool found = false;
    for (size_t i = 4 + 16; i < c.data_offset && !found; i += 7) {
      b[i] ^= 0x01;
      ModelContents c2;
      if (verify_model(b.data(), b.size(), &c2).is_ok()) {
        found = true;
        EXPECT_STATUS(open_with(b, "meta_byte", EMBER_INTEGRITY_SIGNATURE, pub1), EMBER_ERR_SIGNATURE,
                      "does not match");
      }
      if (!found) b[i] ^= 0x01;
    }
    CHECK(found);
  }
  // A byte changed anywhere (every 61st byte): never accepted under the signature policy.
  {
    size_t accepted = 0, signature = 0;
    for (size_t i = 0; i < good.size(); i += 61) {
      auto b = good;
      b[i] ^= 0x40;
      ModelContents c;
      const Status st = verify_model(b.data(), b.size(), &c);
      if (!st.is_ok()) continue;  // refused earlier, by structure
      const Status sg = check_signature(b.data(), c, pub1);
      if (sg.is_ok()) ++accepted;
      if (sg.code() == EMBER_ERR_SIGNATURE) ++signature;
    }
    CHECK(accepted == 0);
    CHECK(signature > 0);
  }
  // The signature policy includes the digest: a file signed as it is, but whose
  // data does not match its metadata's SHA-256, passes the signature and then
  // fails the digest.
  {
    ModelContents c;
    REQUIRE(verify_model(f.plain.data(), f.plain.size(), &c).is_ok());
    auto inconsistent = f.plain;
    inconsistent[inconsistent.size() - 5] ^= 0x10;  // a data byte, before signing
    const auto b = signed_copy(inconsistent, f.key1.private_pem);
    EXPECT_STATUS(open_with(b, "signed_bad_digest", EMBER_INTEGRITY_SIGNATURE, pub1), EMBER_ERR_INTEGRITY, "SHA-256");
    CHECK(open_with(b, "signed_bad_digest_none", EMBER_INTEGRITY_NONE, "").code == EMBER_OK);
  }
  // Option errors.
  EXPECT_STATUS(open_with(good, "policy7", 7, ""), EMBER_ERR_INVALID_ARGUMENT, "integrity_policy = 7");
  EXPECT_STATUS(open_with(good, "nokey", EMBER_INTEGRITY_SIGNATURE, ""), EMBER_ERR_INVALID_ARGUMENT,
                "public_key_pem is NULL");
  EXPECT_STATUS(open_with(good, "key_no_policy", EMBER_INTEGRITY_NONE, pub1), EMBER_ERR_INVALID_ARGUMENT,
                "not EMBER_INTEGRITY_SIGNATURE");
  EXPECT_STATUS(open_with(good, "badkey", EMBER_INTEGRITY_SIGNATURE, "not a key"), EMBER_ERR_INVALID_ARGUMENT,
                "public key");
  // A private key where the public one belongs is accepted only as the same key's id; it verifies too
  // (mbedTLS derives the public part), which is harmless: a private key holder can sign anyway.
}

TEST_CASE("malformed signature trailers") {
  const Fixture& f = fx();
  REQUIRE(!f.plain.empty());
  const auto good = signed_copy(f.plain, f.key1.private_pem);
  REQUIRE(verify(good).code == EMBER_OK);
  const size_t t0 = good.size() - kTrailerSize;
  auto edit = [&](size_t at, const void* bytes, size_t n) {
    auto b = good;
    std::memcpy(b.data() + t0 + at, bytes, n);
    return b;
  };
  const uint32_t two = 2, zero = 0, big = 73;
  const uint64_t wrong_size = 512;
  // truncated: one byte short, the magic alone, the magic cut
  EXPECT_STATUS(verify(std::vector<uint8_t>(good.begin(), good.end() - 1)), EMBER_ERR_TRUNCATED,
                "trailer is 255 bytes");
  EXPECT_STATUS(verify(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(t0 + 8))),
                EMBER_ERR_TRUNCATED, "trailer is 8 bytes");
  EXPECT_STATUS(verify(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(t0 + 5))),
                EMBER_ERR_FORMAT, "trailing");
  EXPECT_STATUS(verify(edit(0, "EMBRSIG2", 8)), EMBER_ERR_FORMAT, "not a signature trailer");      // bad magic
  EXPECT_STATUS(verify(edit(248, "XMBRSIG1", 8)), EMBER_ERR_FORMAT, "closing magic");              // bad end magic
  EXPECT_STATUS(verify(edit(240, &wrong_size, 8)), EMBER_ERR_FORMAT, "trailer size = 512");        // wrong length
  EXPECT_STATUS(verify(edit(8, &two, 4)), EMBER_ERR_VERSION, "version = 2");
  EXPECT_STATUS(verify(edit(12, &two, 4)), EMBER_ERR_FORMAT, "algorithm = 2");
  EXPECT_STATUS(verify(edit(16, &zero, 4)), EMBER_ERR_FORMAT, "signature length = 0");
  EXPECT_STATUS(verify(edit(16, &big, 4)), EMBER_ERR_FORMAT, "signature length = 73");
  EXPECT_STATUS(verify(edit(200, "\x01", 1)), EMBER_ERR_FORMAT, "non-zero padding");
  {  // two trailers; a trailer and one more byte
    auto b = good;
    b.insert(b.end(), good.end() - kTrailerSize, good.end());
    EXPECT_STATUS(verify(b), EMBER_ERR_FORMAT, "trailing");
    b = good;
    b.push_back(0);
    EXPECT_STATUS(verify(b), EMBER_ERR_FORMAT, "trailing");
  }
  {  // a well-formed trailer whose DER is garbage: fine for structure, refused by the policy
    std::vector<uint8_t> junk(40, 0x30);
    auto b = f.plain;
    Sha256Digest id = key_id_from_pem(f.key1.public_pem).value();
    auto t = encode_signature_trailer(junk, id);
    b.insert(b.end(), t.begin(), t.end());
    CHECK(verify(b).code == EMBER_OK);
    EXPECT_STATUS(open_with(b, "junk_der", EMBER_INTEGRITY_SIGNATURE, f.key1.public_pem), EMBER_ERR_SIGNATURE,
                  "does not match");
  }
  // through the public API too
  EXPECT_STATUS(open_with(edit(0, "EMBRSIG2", 8), "bad_magic", EMBER_INTEGRITY_NONE, ""), EMBER_ERR_FORMAT,
                "trailing");
}

TEST_CASE("the mapped file: changed in place or truncated after open") {
  const Fixture& f = fx();
  REQUIRE(!f.plain.empty());
  const std::string path = f.dir + "/mapped.ember";
  {  // written in place after open (same inode, new mtime): check_intact says so
    write_bytes(path, f.plain);
    auto m = Model::open(path, Model::Options());
    REQUIRE(m.is_ok());
    CHECK(m.value()->check_intact().is_ok());
    std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
    CHECK(m.value()->check_intact().code() == EMBER_ERR_INTEGRITY);
  }
  {  // replaced by rename (what `ember sign` does): the mapping keeps the old inode, still intact
    write_bytes(path, f.plain);
    auto m = Model::open(path, Model::Options());
    REQUIRE(m.is_ok());
    write_bytes(path + ".new", signed_copy(f.plain, f.key1.private_pem));
    std::filesystem::rename(path + ".new", path);
    CHECK(m.value()->check_intact().is_ok());
  }
  // Truncated under a running process: in a child process, so that a SIGBUS the guard misses
  // fails this test instead of killing the test runner.
  write_bytes(path, f.plain);
  ModelContents c;
  REQUIRE(verify_model(f.plain.data(), f.plain.size(), &c).is_ok());
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    auto say = [&](const std::string& s) { (void)!write(pipefd[1], s.data(), s.size()); };
    // The internal API (what ember_session_create/prefill call), so that the
    // model's check_intact() can be asked afterwards.
    auto model = Model::open(path, Model::Options());
    if (!model.is_ok()) _exit(10);
    SessionOptions so;
    so.backend_options.cpu.n_threads = 1;
    so.context_length = 16;
    auto running = Session::create(*model.value(), so);  // made before the cut
    if (!running.is_ok()) _exit(12);
    // Cut the file back to its metadata: every weight page is now past the end.
    if (truncate(path.c_str(), static_cast<off_t>(c.data_offset)) != 0) _exit(11);
    auto session = Session::create(*model.value(), so);
    say("create=" + std::string(ember_status_string(session.status().code())) + ";");
    const int32_t tokens[2] = {1, 300};
    std::vector<float> logits(354);
    const Status ps = running.value()->prefill(tokens, 2, logits.data());
    say("prefill=" + std::string(ember_status_string(ps.code())) + ";");
    const Status intact = model.value()->check_intact();
    say("intact=" + std::string(ember_status_string(intact.code())) + ";");
    _exit(0);
  }
  close(pipefd[1]);
  std::string report;
  char buf[256];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child: " << report);
  CHECK_MESSAGE(!WIFSIGNALED(status), "killed by signal " << WTERMSIG(status));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Whatever create/prefill returned, the truncation is reported (a fault absorbed: EMBER_ERR_IO; no page
  // touched yet: the size changed, EMBER_ERR_INTEGRITY).
  CHECK((report.find("intact=EMBER_ERR_IO;") != std::string::npos ||
         report.find("intact=EMBER_ERR_INTEGRITY;") != std::string::npos));
  // A new session on the changed file is refused; the running one fails the
  // step that read the missing pages instead of returning garbage.
  CHECK(report.find("create=EMBER_ERR_INTEGRITY;") != std::string::npos);
  CHECK(report.find("prefill=EMBER_ERR_IO;") != std::string::npos);
  MESSAGE("truncated while mapped: " << report);
}

TEST_CASE("guard_mapping = 0: the model opens and runs, and the mapping is left to the default SIGBUS") {
  const Fixture& f = fx();
  REQUIRE(!f.plain.empty());
  const std::string path = f.dir + "/unguarded.ember";
  write_bytes(path, f.plain);
  {  // through the C API: opens and runs like a guarded one
    ember_model_options o;
    ember_model_options_default(&o);
    CHECK(o.guard_mapping == 1);
    o.guard_mapping = 0;
    ember_model* m = nullptr;
    REQUIRE_MESSAGE(ember_model_open(path.c_str(), &o, &m) == EMBER_OK, ember_last_error());
    ember_session_options so;
    ember_session_options_default(&so);
    so.context_length = 16;
    so.n_threads = 1;
    ember_session* s = nullptr;
    REQUIRE(ember_session_create(m, &so, &s) == EMBER_OK);
    const int32_t tokens[2] = {1, 300};
    CHECK(ember_session_prefill(s, tokens, 2, nullptr) == EMBER_OK);
    ember_session_free(s);
    ember_model_free(m);
  }
  // Truncated under an unguarded mapping, in a child: the read past the end
  // is not absorbed, so SIGBUS takes its default action (the guard's
  // handler, if another model installed it, passes an unregistered range on).
  ModelContents c;
  REQUIRE(verify_model(f.plain.data(), f.plain.size(), &c).is_ok());
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    Model::Options mo;
    mo.guard_mapping = false;
    auto model = Model::open(path, mo);
    if (!model.is_ok()) _exit(10);
    SessionOptions so;
    so.backend_options.cpu.n_threads = 1;
    so.context_length = 16;
    auto running = Session::create(*model.value(), so);
    if (!running.is_ok()) _exit(12);
    if (truncate(path.c_str(), static_cast<off_t>(c.data_offset)) != 0) _exit(11);
    const int32_t tokens[2] = {1, 300};
    std::vector<float> logits(354);
    (void)running.value()->prefill(tokens, 2, logits.data());
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  // In the ASan builds too: the test runner leaves SIGBUS to the process
  // (handle_sigbus=0, tests/test_main.cpp).
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
}

}  // TEST_SUITE

}  // namespace ember
