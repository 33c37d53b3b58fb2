// What the `ember` tool uses of the conversion library and the file format,
// in ember.h's and the standard library's terms (and nlohmann's JSON for
// chat-template contexts): the runtime's internal types stay behind it, in
// tools/convert/tool_api.cpp.
//
// tools/ember sees only ember.h (issue 40), except the few files that write,
// inspect or sign model files or read a GGUF vocabulary: those, listed in
// CMakeLists.txt (EMBER_CLI_FILE_FORMAT_SOURCES, at most four), also see
// this header, and the build refuses it to every other file of tools/ember
// (tests/layering). What a host of the library would also want belongs in
// ember.h instead.
//
// Errors: every call that can fail returns an ember_status and, when it is
// not EMBER_OK, writes the message (what report() prints after the status
// name) to *error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember.h"

namespace ember::tools {

// ---- Names and limits the commands check their arguments against ---------

// `--layout rows16|row-major` in the --help of convert, quantize and synth.
extern const char* const kLayoutHelp;
// The quantization presets (q4_k_m, ...), space-separated.
const char* quant_preset_names();
// Widest attention head and longest context a model file may describe.
uint32_t max_head_dim();
uint32_t max_context();
// The format version this build writes (and the newest it reads).
uint32_t written_schema_version();

// `--dtype` of convert and quantize (f32, f16, bf16 and the quantized types
// the converter writes), `--layout`, `--type PRESET`: EMBER_OK, or
// EMBER_ERR_INVALID_ARGUMENT naming the value and the choices.
ember_status check_target_type(const std::string& name, std::string* error);
ember_status check_layout(const std::string& name, std::string* error);
ember_status check_preset(const std::string& name, std::string* error);
// Any stored weight type by name ("q8_0", "iq4_xs"), as synth takes it.
bool weight_type_known(const std::string& name);
// The synthetic shapes (tiny, 110m, 0.5b, 1.1b) and families (llama, ...).
bool synth_shape_known(const std::string& name);
bool synth_family_known(const std::string& arch);
// True when the file starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

// ---- Model files written: conversion, quantization, synthetic models ------

// A synthetic model (ember synth): a named shape with deterministic
// pseudo-random weights. 0 keeps the shape's own value.
struct SynthRequest {
  std::string shape;                 // tiny, 110m, 0.5b, 1.1b
  std::string arch = "llama";        // the family
  std::string type = "f32";          // the matrices' weight type (norms stay f32)
  std::string vocab_path;            // a llama2.c tokenizer.bin, or "" for the built-in vocabulary
  uint64_t seed = 42;
  uint32_t head_dim = 0, rope_dims = 0, long_rope_orig = 0, context = 0;
};

// One tensor of a preset quantization, before it is converted.
struct PresetStep {
  int index = 0, count = 0;
  std::string tensor;
  std::vector<int64_t> shape;
  std::string from, want, chosen;  // weight type names; want != chosen: a fallback
  bool weighted = false;           // quantized with the importance matrix's entry
};

// An importance matrix (tools/convert/imatrix.h): per weight matrix, the
// sum over calibration rows of each input column's square, and the rows.
struct ImatrixData {
  struct Entry {
    std::string name;  // the weight's tensor name
    std::vector<float> sum_sq;
    double rows = 0;
  };
  std::vector<Entry> entries;
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0, chunk_size = 0;
};
// llama.cpp's GGUF imatrix format (llama-quantize --imatrix reads it).
ember_status write_imatrix_file(const std::string& path, const ImatrixData& data, std::string* error);
// GGUF or legacy .dat.
ember_status read_imatrix_file(const std::string& path, ImatrixData* data, std::string* error);

// What a draft holds.
struct DraftFacts {
  size_t tensors = 0;
  uint64_t weight_bytes = 0;
  uint64_t parameters = 0;
  size_t vocab_pieces = 0;
  int quantized_tensors = 0;  // tensors of a quantized type
  std::string quantization;   // the recipe recorded in the provenance
};

// A model on its way to a file: imported, read or made up, then re-typed and
// written. Movable, not copyable; it owns the buffers its tensors point into
// (a mapped source file among them).
class ModelDraft {
 public:
  ModelDraft();
  ~ModelDraft();
  ModelDraft(ModelDraft&&) noexcept;
  ModelDraft& operator=(ModelDraft&&) noexcept;

  // A GGUF file (recognised by its magic), else a llama2.c checkpoint with
  // its tokenizer.bin.
  ember_status import_file(const std::string& path, const std::string& tokenizer, std::string* error);
  // An .ember file, verified.
  ember_status import_ember(const std::string& path, std::string* error);
  ember_status make_synthetic(const SynthRequest& request, std::string* error);
  // Re-types the matrices (ember quantize --dtype); *report: what it did,
  // for stderr.
  ember_status retype(const std::string& type, std::string* report, std::string* error);
  // A preset (ember quantize --type); progress (may be null) is called
  // before each tensor; *report: the mixture, for stderr.
  ember_status apply_preset(const std::string& preset, void (*progress)(const PresetStep& step), std::string* report,
                            std::string* error);
  // An importance matrix file (GGUF or legacy .dat) that the next retype
  // or apply_preset weighs each matrix's rounding by; *summary: one line
  // on what it holds.
  ember_status use_imatrix(const std::string& path, std::string* summary, std::string* error);
  // Activation statistics (an importance matrix file) for AWQ-style scaling
  // in the next retype or apply_preset (tools/convert/awq.h); progress (may
  // be null) gets one line per group as it is searched.
  ember_status use_awq(const std::string& path, void (*progress)(const std::string& line), std::string* summary,
                       std::string* error);
  // How quantized matrices are stored (rows16 or row-major).
  ember_status set_layout(const std::string& layout, std::string* error);

  ember_status write_ember(const std::string& path, std::string* error) const;
  // GGUF v3 for other runtimes; name: general.name ("" leaves it out).
  ember_status write_gguf(const std::string& path, const std::string& name, std::string* error) const;
  // The .ember bytes, in memory.
  ember_status serialize(std::vector<uint8_t>* bytes, std::string* error) const;
  DraftFacts facts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Signing (conversion-side: libember.a only verifies) ---------------------

// A fresh ECDSA P-256 key pair as PEM text.
ember_status generate_key_pair(std::string* private_pem, std::string* public_pem, std::string* error);

struct SignResult {
  uint64_t signed_bytes = 0;  // what the signature covers
  bool replaced = false;      // the file had a signature, now replaced
};
// Signs the .ember file at `path` in place with a private key (PEM): it must
// pass every load check and its data digest first; the trailer is appended or
// replaced through a temporary file renamed over the original.
ember_status sign_model_file(const std::string& path, const std::string& private_pem, SignResult* result,
                             std::string* error);

// ---- Inspection: an .ember file as stored -----------------------------------

struct TensorFacts {
  std::string name, type, layout;
  int n_dims = 0;
  int64_t shape[2] = {0, 0};
  uint64_t elements = 0, offset = 0, bytes = 0;
};

// A weight type of the file: its tensors, bytes and weights.
struct TypeFacts {
  std::string name;
  double bits_per_weight = 0;
  int tensors = 0;
  uint64_t bytes = 0, elements = 0;
};

// What `ember info` prints: the file's sections, hyper-parameters, tokenizer
// and tensors.
struct FileFacts {
  uint64_t file_bytes = 0;
  std::string arch;
  uint32_t schema_version = 0;
  // Hyper-parameters.
  uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  uint32_t vocab_size = 0, max_context = 0;
  float norm_eps = 0, rope_theta = 0;
  bool rope_adjacent = true, tied_embeddings = false;
  bool partial_or_long_rope = false;  // the next four apply
  uint32_t rotated_dims = 0, long_rope_threshold = 0;
  float rope_attn_factor = 1;
  bool gemma = false;  // the next six apply
  float attn_softcap = 0, final_softcap = 0, rope_theta_sliding = 0, rope_scale_global = 0;
  uint32_t sliding_window = 0, swa_period = 0;
  // Tokenizer.
  std::string tokenizer = "sentencepiece";  // "sentencepiece", "byte-level bpe" or "wordpiece"
  size_t pieces = 0, merges = 0;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  bool add_bos = false, add_space_prefix = false, byte_fallback = false;
  // Provenance and the data segment.
  std::string source_file, source_sha256, converter, quantization;  // source_sha256 "" when not recorded
  uint64_t data_bytes = 0, data_offset = 0;
  std::string data_sha256;
  std::vector<TensorFacts> tensors;
  std::vector<TypeFacts> types;  // the types present, in the format's order
};

// An .ember file opened for inspection: its structure verified (and its data
// digest with verify_digest), the model itself not built, so a file that
// does not load can still be looked at.
class FileView {
 public:
  FileView();
  ~FileView();
  ember_status open(const std::string& path, bool verify_digest, std::string* error);
  const FileFacts& facts() const;
  // DIR/NAME.f32: tensor i dequantized row by row (rows16 gathered first).
  ember_status dump_tensor(size_t i, const std::string& dir, std::string* error) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Vocabularies and chat templates ----------------------------------------

// The vocabulary of an .ember file or of any GGUF file that holds one (a
// vocabulary-only GGUF too): its tokenizer, chat template and pieces.
class FileVocabulary {
 public:
  FileVocabulary();
  ~FileVocabulary();
  ember_status open(const std::string& path, std::string* error);
  // Ids without BOS; parse_special: text spelling a control token becomes it.
  ember_status tokenize(const std::string& text, bool parse_special, std::vector<int32_t>* ids,
                        std::string* error) const;
  // tokenizer.chat_template, "" when the file has none.
  const std::string& chat_template() const;
  // The piece of BOS and of EOS ("" when the vocabulary has none).
  std::string bos_piece() const;
  std::string eos_piece() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A built-in template's text ("chatml", ...), or nullptr; the names.
const char* builtin_chat_template(const std::string& name);
const std::vector<std::string>& builtin_chat_template_names();

// Whether a JSON value can be a template variable (nesting at most 128,
// integers within 64 bits), with the message naming why not.
ember_status check_template_value(const nlohmann::ordered_json& value, std::string* error);
// Python's truth of the value as a template sees it.
bool template_truthy(const nlohmann::ordered_json& value);

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
  int64_t now_unix = -1;  // what strftime_now() renders (UTC); -1: now
};
// Renders `tmpl` as Hugging Face's apply_chat_template does: messages (a
// JSON array), add_generation_prompt, bos_token and eos_token from options,
// and each entry of `extra` (a JSON object, or null) as a variable. Errors:
// the template's (EMBER_ERR_FORMAT, EMBER_ERR_UNSUPPORTED, ...) and
// check_template_value's.
ember_status render_chat_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                                  const nlohmann::ordered_json& extra, const ChatRenderOptions& options,
                                  std::string* out, std::string* error);

}  // namespace ember::tools
