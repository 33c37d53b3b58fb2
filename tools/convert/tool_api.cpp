// tools/convert/tool_api.h over the conversion library and the runtime's
// file format: the one place the `ember` tool's conversion, quantization,
// inspection and signing meet the internal types.
#include "tools/convert/tool_api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "chat/chat_template.h"
#include "core/dtype.h"
#include "core/hparams.h"
#include "core/layout.h"
#include "format/model_file.h"
#include "model/model.h"
#include "platforms/linux/mapped_file.h"
#include "security/sha256.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/gguf.h"
#include "tools/convert/gguf_writer.h"
#include "tools/convert/importers.h"
#include "tools/convert/imatrix.h"
#include "tools/convert/quantize.h"
#include "tools/convert/signing.h"
#include "tools/convert/synthetic.h"
#include "tools/convert/vocab_import.h"

namespace ember::tools {
namespace {

using Json = nlohmann::ordered_json;

// The status, with its message in *error.
ember_status failed(const Status& s, std::string* error) {
  if (!s.is_ok()) *error = s.message();
  return s.code();
}

// The JSON value as the template language's value (the messages JSON may
// nest at most 128 deep; integers beyond int64 are refused).
Result<chat::Value> template_value(const Json& j, int depth) {
  using chat::Value;
  if (depth > 128) return Status::error(EMBER_ERR_INVALID_ARGUMENT, "messages JSON nests deeper than 128");
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) {
        return Status::error(EMBER_ERR_UNSUPPORTED, "integer %llu is wider than 64 bits", (unsigned long long)u);
      }
      return Value::integer(int64_t(u));
    }
    case Json::value_t::number_float: return Value::real(j.get<double>());
    case Json::value_t::string: return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      chat::List items;
      for (const auto& x : j) {
        EMBER_ASSIGN_OR_RETURN(Value v, template_value(x, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::make_list(std::move(items));
    }
    case Json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it) {
        EMBER_ASSIGN_OR_RETURN(Value v, template_value(it.value(), depth + 1));
        d.set(it.key(), std::move(v));
      }
      return d;
    }
    default: return Status::error(EMBER_ERR_INVALID_ARGUMENT, "messages JSON holds a value of an unknown type");
  }
}

Status write_all(int fd, const uint8_t* p, uint64_t n, const std::string& path) {
  while (n > 0) {
    const size_t chunk = n < (uint64_t(1) << 26) ? static_cast<size_t>(n) : size_t(1) << 26;
    const ssize_t w = ::write(fd, p, chunk);
    if (w <= 0) return Status::error(EMBER_ERR_IO, "cannot write '%s': %s", path.c_str(), std::strerror(errno));
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return Status::ok();
}

// `head` then `tail` into `path`, through a temporary file renamed into
// place, keeping the original's permission bits (a process that has the old
// file mapped keeps reading the old inode).
Status replace_file(const std::string& path, const uint8_t* head, uint64_t head_size,
                    const std::vector<uint8_t>& tail) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::error(EMBER_ERR_IO, "cannot stat '%s': %s", path.c_str(), std::strerror(errno));
  }
  const std::string tmp = path + ".sign-tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (fd < 0) return Status::error(EMBER_ERR_IO, "cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  Status s = write_all(fd, head, head_size, tmp);
  if (s.is_ok()) s = write_all(fd, tail.data(), tail.size(), tmp);
  if (s.is_ok() && ::fsync(fd) != 0) s = Status::error(EMBER_ERR_IO, "cannot sync '%s'", tmp.c_str());
  ::close(fd);
  if (s.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::error(EMBER_ERR_IO, "cannot rename '%s' over '%s': %s", tmp.c_str(), path.c_str(),
                      std::strerror(errno));
  }
  if (!s.is_ok()) std::remove(tmp.c_str());
  return s;
}

std::string hex_or_empty(const std::vector<uint8_t>& bytes) {
  return bytes.empty() ? std::string() : to_hex(bytes.data(), bytes.size());
}

}  // namespace

// ---- Names and limits ----------------------------------------------------------

const char* const kLayoutHelp = ember::kLayoutHelp;

const char* quant_preset_names() { return ember::quant_preset_names(); }
uint32_t max_head_dim() { return kMaxHeadDim; }
uint32_t max_context() { return kMaxSeqLen; }
uint32_t written_schema_version() { return kSchemaVersion; }

ember_status check_target_type(const std::string& name, std::string* error) {
  return failed(parse_target_dtype(name).status(), error);
}

ember_status check_layout(const std::string& name, std::string* error) {
  return failed(parse_layout(name).status(), error);
}

ember_status check_preset(const std::string& name, std::string* error) {
  return failed(parse_quant_preset(name).status(), error);
}

bool weight_type_known(const std::string& name) {
  DType t;
  return dtype_from_name(name.c_str(), &t);
}

bool synth_shape_known(const std::string& name) {
  SynthShape shape;
  return synth_shape(name, &shape);
}

bool synth_family_known(const std::string& arch) { return synth_arch_known(arch); }

bool is_gguf_file(const std::string& path) { return ember::is_gguf_file(path); }

// ---- ModelDraft -------------------------------------------------------------------

struct ModelDraft::Impl {
  std::unique_ptr<ImportedModel> model;
  std::unique_ptr<Imatrix> imatrix;  // use_imatrix's, for retype and apply_preset
  std::unique_ptr<Imatrix> awq;      // use_awq's
  void (*awq_progress)(const std::string& line) = nullptr;

  QuantizeOptions options() const;
};

ModelDraft::ModelDraft() : impl_(std::make_unique<Impl>()) {}
ModelDraft::~ModelDraft() = default;
ModelDraft::ModelDraft(ModelDraft&&) noexcept = default;
ModelDraft& ModelDraft::operator=(ModelDraft&&) noexcept = default;

ember_status ModelDraft::import_file(const std::string& path, const std::string& tokenizer, std::string* error) {
  auto imported = ember::is_gguf_file(path) ? import_gguf(path) : import_llama2c(path, tokenizer);
  if (!imported.is_ok()) return failed(imported.status(), error);
  impl_->model = std::move(imported).value();
  return EMBER_OK;
}

ember_status ModelDraft::import_ember(const std::string& path, std::string* error) {
  auto imported = ember::import_ember(path);
  if (!imported.is_ok()) return failed(imported.status(), error);
  impl_->model = std::move(imported).value();
  return EMBER_OK;
}

ember_status ModelDraft::make_synthetic(const SynthRequest& r, std::string* error) {
  SynthShape shape;
  DType type = DType::F32;
  if (!synth_shape(r.shape, &shape)) {
    return failed(Status::error(EMBER_ERR_INVALID_ARGUMENT, "no shape '%s'", r.shape.c_str()), error);
  }
  if (!dtype_from_name(r.type.c_str(), &type)) {
    return failed(Status::error(EMBER_ERR_INVALID_ARGUMENT, "no weight type '%s'", r.type.c_str()), error);
  }
  shape.arch = r.arch;
  shape.head_dim = r.head_dim;
  shape.rope_dims = r.rope_dims;
  shape.long_rope_orig = r.long_rope_orig;
  if (r.context) shape.context = r.context;
  auto model = ember::make_synthetic(shape, type, r.seed, r.vocab_path);
  if (!model.is_ok()) return failed(model.status(), error);
  impl_->model = std::move(model).value();
  return EMBER_OK;
}

QuantizeOptions ModelDraft::Impl::options() const {
  QuantizeOptions o;
  o.imatrix = imatrix.get();
  o.awq = awq.get();
  if (auto* line = awq_progress) o.awq_progress = [line](int, int, const AwqGroup& g) { line(describe_awq_group(g)); };
  return o;
}

ember_status ModelDraft::retype(const std::string& type, std::string* report, std::string* error) {
  auto target = parse_target_dtype(type);
  if (!target.is_ok()) return failed(target.status(), error);
  QuantizeReport rep;
  const Status s = quantize_model(impl_->model.get(), target.value(), &rep, impl_->options());
  if (!s.is_ok()) return failed(s, error);
  *report = describe_quantize_report(rep);
  return EMBER_OK;
}

namespace {
void (*g_preset_progress)(const PresetStep&) = nullptr;

// quantize_model_preset's progress, as the tool's PresetStep.
void preset_progress(int i, int n, const PresetChoice& c) {
  PresetStep step;
  step.index = i;
  step.count = n;
  step.tensor = c.tensor;
  step.shape = c.shape;
  step.from = dtype_name(c.from);
  step.want = dtype_name(c.want);
  step.chosen = dtype_name(c.chosen);
  step.weighted = c.weighted;
  g_preset_progress(step);
}
}  // namespace

ember_status ModelDraft::apply_preset(const std::string& preset, void (*progress)(const PresetStep& step),
                                      std::string* report, std::string* error) {
  auto p = parse_quant_preset(preset);
  if (!p.is_ok()) return failed(p.status(), error);
  PresetReport rep;
  // The library's progress is a plain function pointer: the tool's goes
  // through this file's (the tool quantizes one model at a time).
  g_preset_progress = progress;
  const Status s = quantize_model_preset(impl_->model.get(), p.value(), &rep, progress ? preset_progress : nullptr,
                                         impl_->options());
  g_preset_progress = nullptr;
  if (!s.is_ok()) return failed(s, error);
  *report = describe_preset_report(p.value(), rep);
  return EMBER_OK;
}

ember_status ModelDraft::use_imatrix(const std::string& path, std::string* summary, std::string* error) {
  auto m = read_imatrix(path);
  if (!m.is_ok()) return failed(m.status(), error);
  impl_->imatrix = std::make_unique<Imatrix>(std::move(m).value());
  const Imatrix& x = *impl_->imatrix;
  *summary = "importance matrix '" + path + "': " + std::to_string(x.entries.size()) + " matrices, " +
             std::to_string(x.chunk_count) + " chunks of " + std::to_string(x.chunk_size) + " tokens" +
             (x.datasets.empty() ? "" : " from '" + x.datasets.back() + "'");
  return EMBER_OK;
}

ember_status ModelDraft::use_awq(const std::string& path, void (*progress)(const std::string& line),
                                 std::string* summary, std::string* error) {
  auto m = read_imatrix(path);
  if (!m.is_ok()) return failed(m.status(), error);
  impl_->awq = std::make_unique<Imatrix>(std::move(m).value());
  impl_->awq_progress = progress;
  const Imatrix& x = *impl_->awq;
  *summary = "activation statistics for --awq '" + path + "': " + std::to_string(x.entries.size()) +
             " matrices, " + std::to_string(x.chunk_count) + " chunks of " + std::to_string(x.chunk_size) + " tokens";
  return EMBER_OK;
}

ember_status write_imatrix_file(const std::string& path, const ImatrixData& data, std::string* error) {
  Imatrix m;
  m.datasets = data.datasets;
  m.chunk_count = data.chunk_count;
  m.chunk_size = data.chunk_size;
  for (const ImatrixData::Entry& e : data.entries) m.entries.push_back({e.name, e.sum_sq, e.rows});
  return failed(write_imatrix(path, m), error);
}

ember_status read_imatrix_file(const std::string& path, ImatrixData* data, std::string* error) {
  auto m = read_imatrix(path);
  if (!m.is_ok()) return failed(m.status(), error);
  *data = ImatrixData{};
  data->datasets = m.value().datasets;
  data->chunk_count = m.value().chunk_count;
  data->chunk_size = m.value().chunk_size;
  for (const ImatrixEntry& e : m.value().entries) data->entries.push_back({e.name, e.sum_sq, e.rows});
  return EMBER_OK;
}

ember_status ModelDraft::set_layout(const std::string& layout, std::string* error) {
  auto l = parse_layout(layout);
  if (!l.is_ok()) return failed(l.status(), error);
  impl_->model->spec.quant_layout = l.value();
  return EMBER_OK;
}

ember_status ModelDraft::write_ember(const std::string& path, std::string* error) const {
  return failed(write_model(impl_->model->spec, path), error);
}

ember_status ModelDraft::write_gguf(const std::string& path, const std::string& name, std::string* error) const {
  GgufWriteOptions o;
  o.name = name;
  return failed(ember::write_gguf(impl_->model->spec, path, o), error);
}

ember_status ModelDraft::serialize(std::vector<uint8_t>* bytes, std::string* error) const {
  auto b = serialize_model(impl_->model->spec);
  if (!b.is_ok()) return failed(b.status(), error);
  *bytes = std::move(b).value();
  return EMBER_OK;
}

DraftFacts ModelDraft::facts() const {
  DraftFacts f;
  const ModelSpec& spec = impl_->model->spec;
  f.tensors = spec.tensors.size();
  for (const TensorSource& t : spec.tensors) {
    f.weight_bytes += t.size;
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    f.parameters += n;
    f.quantized_tensors += dtype_is_quantized(t.dtype);
  }
  f.vocab_pieces = spec.vocab.pieces.size();
  f.quantization = spec.provenance.quantization;
  return f;
}

// ---- Signing ----------------------------------------------------------------------

ember_status generate_key_pair(std::string* private_pem, std::string* public_pem, std::string* error) {
  auto keys = ember::generate_key_pair();
  if (!keys.is_ok()) return failed(keys.status(), error);
  *private_pem = keys->private_pem;
  *public_pem = keys->public_pem;
  return EMBER_OK;
}

ember_status sign_model_file(const std::string& path, const std::string& private_pem, SignResult* result,
                             std::string* error) {
  Model::Options mo;
  mo.verify_digest = true;
  auto model = Model::open(path, mo);
  if (!model.is_ok()) {
    *error = "refusing to sign: " + model.status().message();
    return model.status().code();
  }
  const ModelFile& file = model.value()->file();
  const ModelContents& c = file.contents();
  auto trailer = make_signature_trailer(file.mapping().data(), c.signed_size, private_pem);
  if (!trailer.is_ok()) return failed(trailer.status(), error);
  const Status s = replace_file(path, file.mapping().data(), c.signed_size, trailer.value());
  if (!s.is_ok()) return failed(s, error);
  result->signed_bytes = c.signed_size;
  result->replaced = c.has_signature;
  return EMBER_OK;
}

// ---- FileView ---------------------------------------------------------------------

struct FileView::Impl {
  std::unique_ptr<ModelFile> file;
  FileFacts facts;
};

FileView::FileView() : impl_(std::make_unique<Impl>()) {}
FileView::~FileView() = default;

namespace {

void hparam_facts(const HParams& hp, FileFacts* f) {
  f->arch = model_arch_name(hp.arch);
  f->dim = hp.dim;
  f->hidden_dim = hp.hidden_dim;
  f->n_layers = hp.n_layers;
  f->n_heads = hp.n_heads;
  f->n_kv_heads = hp.n_kv_heads;
  f->head_dim = hp.head_dim();
  f->vocab_size = hp.vocab_size;
  f->max_context = hp.max_seq_len;
  f->norm_eps = hp.norm_eps;
  f->rope_theta = hp.rope_theta;
  f->rope_adjacent = hp.rope_style == RopeStyle::Adjacent;
  f->tied_embeddings = hp.tied_embeddings;
  f->partial_or_long_rope = hp.rope_dims != 0 || hp.rope_attn_factor != 1.0f || hp.rope_orig_context != 0;
  f->rotated_dims = hp.rotated_dims();
  f->rope_attn_factor = hp.rope_attn_factor;
  f->long_rope_threshold = hp.long_rope_threshold();
  f->gemma = model_arch_is_gemma(hp.arch);
  f->attn_softcap = hp.attn_softcap;
  f->final_softcap = hp.final_softcap;
  f->sliding_window = hp.sliding_window;
  f->swa_period = hp.swa_period;
  f->rope_theta_sliding = hp.rope_theta_swa != 0.0f ? hp.rope_theta_swa : hp.rope_theta;
  f->rope_scale_global = hp.rope_scale_global;
}

void tensor_facts(const std::vector<TensorView>& tensors, FileFacts* f) {
  TypeFacts by_type[kDTypeCount];
  for (const TensorView& t : tensors) {
    TensorFacts x;
    x.name = t.name;
    x.type = dtype_name(t.dtype);
    x.layout = layout_name(t.layout);
    x.n_dims = t.n_dims;
    x.shape[0] = t.shape[0];
    x.shape[1] = t.n_dims >= 2 ? t.shape[1] : 0;
    x.elements = t.elements();
    x.offset = t.offset;
    x.bytes = t.size;
    f->tensors.push_back(std::move(x));
    TypeFacts& k = by_type[static_cast<int>(t.dtype)];
    ++k.tensors;
    k.bytes += t.size;
    k.elements += t.elements();
  }
  for (int i = 0; i < kDTypeCount; ++i) {
    if (!by_type[i].tensors) continue;
    by_type[i].name = dtype_name(static_cast<DType>(i));
    by_type[i].bits_per_weight = dtype_bits(static_cast<DType>(i));
    f->types.push_back(by_type[i]);
  }
}

}  // namespace

ember_status FileView::open(const std::string& path, bool verify_digest, std::string* error) {
  ModelFile::Options opt;
  opt.verify_digest = verify_digest;
  auto file = ModelFile::open(path, opt);
  if (!file.is_ok()) return failed(file.status(), error);
  impl_->file = std::move(file).value();
  const ModelFile& m = *impl_->file;
  FileFacts& f = impl_->facts;
  f = FileFacts{};
  f.file_bytes = m.mapping().size();
  f.schema_version = m.contents().schema_version;
  hparam_facts(m.hparams(), &f);
  const Vocab& v = m.vocab();
  f.tokenizer = v.kind == TokenizerKind::SentencePiece ? "sentencepiece"
                : v.kind == TokenizerKind::WordPiece   ? "wordpiece"
                                                       : "byte-level bpe";
  f.pieces = v.pieces.size();
  f.merges = v.merges.size();
  f.bos_id = v.bos_id;
  f.eos_id = v.eos_id;
  f.unk_id = v.unk_id;
  f.pad_id = v.pad_id;
  f.add_bos = v.add_bos;
  f.add_space_prefix = v.add_space_prefix;
  f.byte_fallback = v.byte_fallback;
  const Provenance& p = m.provenance();
  f.source_file = p.source_file;
  f.source_sha256 = hex_or_empty(p.source_sha256);
  f.converter = p.converter;
  f.quantization = p.quantization;
  f.data_bytes = m.contents().data_size;
  f.data_offset = m.contents().data_offset;
  f.data_sha256 = to_hex(m.contents().data_sha256.data(), 32);
  tensor_facts(m.tensors(), &f);
  return EMBER_OK;
}

const FileFacts& FileView::facts() const { return impl_->facts; }

ember_status FileView::dump_tensor(size_t i, const std::string& dir, std::string* error) const {
  const TensorView& t = impl_->file->tensors()[i];
  const std::string path = dir + "/" + t.name + ".f32";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    return failed(Status::error(EMBER_ERR_IO, "cannot write '%s': %s", path.c_str(), std::strerror(errno)), error);
  }
  const int64_t rows = t.rows(), cols = t.cols();
  uint64_t row_bytes = 0;
  dtype_bytes(t.dtype, static_cast<uint64_t>(cols), &row_bytes);
  std::vector<float> row(cols);
  std::vector<uint8_t> gathered(row_bytes);
  bool ok = true;
  for (int64_t r = 0; r < rows && ok; ++r) {
    const uint8_t* src = layout_row(t.layout, t.dtype, t.data, cols, r, gathered.data());
    dequantize_row(t.dtype, src, row.data(), cols);
    ok = std::fwrite(row.data(), sizeof(float), cols, f) == static_cast<size_t>(cols);
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return failed(Status::error(EMBER_ERR_IO, "writing '%s' failed", path.c_str()), error);
  return EMBER_OK;
}

// ---- FileVocabulary ------------------------------------------------------------

struct FileVocabulary::Impl {
  Vocab vocab;
  std::unique_ptr<Tokenizer> tokenizer;  // made on the first tokenize()

  std::string piece(int32_t id) const {
    return id >= 0 && size_t(id) < vocab.pieces.size() ? vocab.pieces[size_t(id)] : std::string();
  }
};

FileVocabulary::FileVocabulary() : impl_(std::make_unique<Impl>()) {}
FileVocabulary::~FileVocabulary() = default;

ember_status FileVocabulary::open(const std::string& path, std::string* error) {
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return failed(mapped.status(), error);
  if (mapped->size() >= 4 && std::memcmp(mapped->data(), "GGUF", 4) == 0) {
    auto gguf = GgufFile::parse(mapped->data(), mapped->size());
    if (!gguf.is_ok()) return failed(gguf.status(), error);
    auto v = vocab_from_gguf(gguf.value());
    if (!v.is_ok()) return failed(v.status(), error);
    impl_->vocab = std::move(v).value();
    return EMBER_OK;
  }
  ModelContents contents;
  const Status s = verify_model(mapped->data(), mapped->size(), &contents);
  if (!s.is_ok()) return failed(s, error);
  impl_->vocab = std::move(contents.vocab);
  return EMBER_OK;
}

ember_status FileVocabulary::tokenize(const std::string& text, bool parse_special, std::vector<int32_t>* ids,
                                      std::string* error) const {
  if (!impl_->tokenizer) {
    auto tok = Tokenizer::create(impl_->vocab);
    if (!tok.is_ok()) return failed(tok.status(), error);
    impl_->tokenizer = std::make_unique<Tokenizer>(std::move(tok).value());
  }
  EncodeOptions eo;
  eo.parse_special = parse_special;
  return failed(impl_->tokenizer->encode(text, eo, ids), error);
}

const std::string& FileVocabulary::chat_template() const { return impl_->vocab.chat_template; }
std::string FileVocabulary::bos_piece() const { return impl_->piece(impl_->vocab.bos_id); }
std::string FileVocabulary::eos_piece() const { return impl_->piece(impl_->vocab.eos_id); }

// ---- Chat templates ---------------------------------------------------------------

const char* builtin_chat_template(const std::string& name) { return chat::builtin_chat_template(name); }

const std::vector<std::string>& builtin_chat_template_names() { return chat::builtin_chat_template_names(); }

ember_status check_template_value(const Json& value, std::string* error) {
  return failed(template_value(value, 0).status(), error);
}

bool template_truthy(const Json& value) {
  auto v = template_value(value, 0);
  return v.is_ok() && chat::truthy(v.value());
}

ember_status render_chat_template(const std::string& tmpl, const Json& messages, const Json& extra,
                                  const ChatRenderOptions& options, std::string* out, std::string* error) {
  auto m = template_value(messages, 0);
  if (!m.is_ok()) return failed(m.status(), error);
  chat::Value variables = chat::Value::make_dict();
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      auto v = template_value(it.value(), 0);
      if (!v.is_ok()) return failed(v.status(), error);
      variables.set(it.key(), std::move(v).value());
    }
  }
  chat::ChatOptions opt;
  opt.add_generation_prompt = options.add_generation_prompt;
  opt.bos_token = options.bos_token;
  opt.eos_token = options.eos_token;
  opt.env.now_unix = options.now_unix;
  return failed(chat::render_chat(tmpl, m.value(), opt, variables, out), error);
}

}  // namespace ember::tools
