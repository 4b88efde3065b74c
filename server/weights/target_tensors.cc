#include "weights/target_tensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "weights/chunked_copy.h"
#include "weights/fingerprint.h"
#include "weights/name_suggest.h"
#include "weights/safetensors_file.h"

namespace dflash::weights {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Naming families of dflash-semantics §2, most common first.
struct Family {
  const char* id;
  const char* embed;
  const char* lm_head;
  const char* norm;
};
constexpr Family kFamilies[] = {
    {"qwen3", "model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"},
    {"qwen3.5-multimodal", "model.language_model.embed_tokens.weight", "lm_head.weight",
     "model.language_model.norm.weight"},
    {"legacy-wrapper", "language_model.model.embed_tokens.weight", "language_model.lm_head.weight",
     "language_model.model.norm.weight"},
};

absl::StatusOr<json> ReadJson(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no ", what, " at '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not a JSON object"));
  }
  return j;
}

// The value of `key` at top level, else in text_config; `where` says which.
const json* ConfigField(const json& config, const char* key, std::string* where) {
  auto text = config.find("text_config");
  const bool has_text = text != config.end() && text->is_object();
  // Newer transformers read tying from the text config of multimodal models.
  if (std::string(key) == "tie_word_embeddings" && has_text && text->contains(key)) {
    *where = "text_config";
    return &(*text)[key];
  }
  if (config.contains(key) && !config[key].is_null()) {
    *where = "top level";
    return &config[key];
  }
  if (has_text && text->contains(key) && !(*text)[key].is_null()) {
    *where = "text_config";
    return &(*text)[key];
  }
  return nullptr;
}

absl::StatusOr<std::optional<int64_t>> ConfigInt(const json& config, const char* key,
                                                 const std::string& config_path) {
  std::string where;
  const json* v = ConfigField(config, key, &where);
  if (v == nullptr) return std::optional<int64_t>();
  if (!v->is_number_integer() || v->get<int64_t>() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", config_path, "': ", key, " (", where,
                                                   ") is ", v->dump(),
                                                   "; expected a positive integer"));
  }
  return std::optional<int64_t>(v->get<int64_t>());
}

// rms_norm_eps of the final norm (top level or text_config): a positive
// number; absent: 1e-6 (Qwen3's and Llama's value), said in the facts.
absl::Status ReadNormEps(const json& config, const std::string& config_path, TargetTensors* out) {
  std::string where;
  const json* v = ConfigField(config, "rms_norm_eps", &where);
  if (v == nullptr) {
    out->facts.push_back("config.json sets no rms_norm_eps; the final norm uses 1e-06");
    return absl::OkStatus();
  }
  if (!v->is_number() || v->get<double>() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", config_path, "': rms_norm_eps (", where,
                                                   ") is ", v->dump(),
                                                   "; expected a positive number"));
  }
  out->norm_eps = v->get<double>();
  return absl::OkStatus();
}

// Quoted candidate names, the preferred one first, without repeats.
std::vector<std::string> Tried(const char* Family::*field, const Family& preferred) {
  std::vector<std::string> out = {preferred.*field};
  for (const Family& f : kFamilies) {
    if (std::find(out.begin(), out.end(), f.*field) == out.end()) out.push_back(f.*field);
  }
  return out;
}

// The first of `candidates` the checkpoint holds, or "".
std::string FirstPresent(const std::vector<std::string>& candidates,
                         const std::set<std::string>& present) {
  for (const std::string& c : candidates) {
    if (present.count(c)) return c;
  }
  return "";
}

absl::Status NotFoundTensor(const std::string& dir, absl::string_view role,
                            const std::vector<std::string>& tried,
                            const std::vector<std::string>& names, absl::string_view extra = "") {
  return absl::NotFoundError(
      absl::StrCat("target '", dir, "': no ", role, " tensor; tried ", QuoteList(tried),
                   "; nearest present: ", QuoteList(NearestNames(tried[0], names)), extra));
}

// Every tensor name of a target, from the index alone when sharded, so that
// only the shards holding the needed tensors are ever opened.
struct TargetNames {
  std::vector<std::string> names;
  std::string index_path;  // model.safetensors.index.json, when sharded
  TensorSourcePtr single;  // model.safetensors, opened, when not sharded
  bool sharded = false;
};

absl::StatusOr<TargetNames> ListTargetNames(const std::string& model_dir) {
  TargetNames out;
  out.index_path = (fs::path(model_dir) / "model.safetensors.index.json").string();
  const std::string single_path = (fs::path(model_dir) / "model.safetensors").string();
  out.sharded = fs::exists(out.index_path);
  if (out.sharded) {
    ASSIGN_OR_RETURN(json index, ReadJson(out.index_path, "index"), "target '", model_dir, "'");
    auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target '", model_dir, "': index '", out.index_path, "' has no \"weight_map\" object"));
    }
    for (auto it = map->begin(); it != map->end(); ++it) out.names.push_back(it.key());
  } else if (fs::exists(single_path)) {
    ASSIGN_OR_RETURN(out.single, OpenSafetensors(single_path), "target '", model_dir, "'");
    out.names = out.single->names();
  } else {
    return absl::NotFoundError(absl::StrCat(
        "target '", model_dir, "': no model.safetensors.index.json or model.safetensors"));
  }
  return out;
}

// The naming family: the one whose embed_tokens the checkpoint holds.
absl::StatusOr<const Family*> ChooseFamily(const std::string& model_dir,
                                           const std::vector<std::string>& names,
                                           const std::set<std::string>& present) {
  std::vector<const Family*> families;
  for (const Family& f : kFamilies) {
    if (present.count(f.embed)) families.push_back(&f);
  }
  if (families.empty()) {
    return NotFoundTensor(model_dir, "embed_tokens", Tried(&Family::embed, kFamilies[0]), names);
  }
  if (families.size() > 1) {
    std::vector<std::string> found;
    found.reserve(families.size());
    for (const Family* f : families) found.push_back(f->embed);
    return absl::InvalidArgumentError(
        absl::StrCat("target '", model_dir, "': several embed_tokens tensors (", QuoteList(found),
                     "); cannot tell which the language model uses"));
  }
  return families[0];
}

// Where the target's paths and names are, for the steps of a load.
struct TargetContext {
  const std::string& model_dir;
  const std::string& config_path;
  const json& config;
  const std::vector<std::string>& names;
  const std::set<std::string>& present;
};

// out.tied and out.lm_head_name: tie_word_embeddings (top level or
// text_config) ties lm_head to embed_tokens; otherwise lm_head must exist.
absl::Status ResolveLmHead(const TargetContext& target, const Family& family, TargetTensors* out) {
  std::string tie_where;
  const json* tie_json = ConfigField(target.config, "tie_word_embeddings", &tie_where);
  if (tie_json != nullptr && !tie_json->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat("'", target.config_path,
                                                   "': tie_word_embeddings (", tie_where, ") is ",
                                                   tie_json->dump(), "; expected true or false"));
  }
  out->tied = tie_json != nullptr && tie_json->get<bool>();
  const std::vector<std::string> lm_tried = Tried(&Family::lm_head, family);
  if (out->tied) {
    out->lm_head_name = out->embed_name;
    out->facts.push_back(
        absl::StrCat("lm_head tied to embed_tokens (tie_word_embeddings "
                     "true at ",
                     tie_where, ")"));
    const std::string stored = FirstPresent(lm_tried, target.present);
    if (!stored.empty()) {
      out->facts.push_back(absl::StrCat("'", stored,
                                        "' present but unused: tied models "
                                        "use embed_tokens, as transformers does"));
    }
    return absl::OkStatus();
  }
  out->lm_head_name = FirstPresent(lm_tried, target.present);
  if (out->lm_head_name.empty()) {
    const std::string why = tie_json == nullptr
                                ? absl::StrCat(
                                      "; config.json does not set tie_word_embeddings (treated as "
                                      "false): if the model ties its embeddings, set "
                                      "\"tie_word_embeddings\": true")
                                : absl::StrCat("; tie_word_embeddings is false at ", tie_where);
    return NotFoundTensor(target.model_dir, "lm_head", lm_tried, target.names, why);
  }
  return absl::OkStatus();
}

// The headers of the needed tensors, each floating-point; `needed` in order.
absl::StatusOr<std::vector<const TensorInfo*>> FindNeeded(const TensorSource& source,
                                                          const std::vector<std::string>& needed,
                                                          const std::string& model_dir) {
  std::vector<const TensorInfo*> infos;
  for (const std::string& n : needed) {
    const TensorInfo* info = source.Find(n);
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("target '", model_dir, "': the index names '",
                                                     n, "' but its shard does not list it"));
    }
    if (!formats::IsFloatingPoint(info->dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", model_dir, "': tensor '", n, "' has dtype ",
                       formats::DTypeName(info->dtype), "; expected a floating-point type"));
    }
    infos.push_back(info);
  }
  return infos;
}

// out.vocab_size and out.hidden_size (config.json, else embed_tokens), and
// the shapes checked against them from the headers, before any data is read.
// `infos`: embed_tokens, then lm_head unless tied, then the norm if loaded.
absl::Status CheckShapes(const TargetContext& target, const std::vector<const TensorInfo*>& infos,
                         const TargetLoadOptions& options, TargetTensors* out) {
  const std::string& model_dir = target.model_dir;
  const TensorInfo& embed = *infos[0];
  if (embed.shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", model_dir, "': embed_tokens '", embed.name, "' has shape ",
                     ShapeText(embed.shape), "; expected [vocab_size, hidden_size]"));
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> vocab,
                   ConfigInt(target.config, "vocab_size", target.config_path));
  ASSIGN_OR_RETURN(std::optional<int64_t> hidden,
                   ConfigInt(target.config, "hidden_size", target.config_path));
  out->vocab_size = vocab.value_or(embed.shape[0]);
  out->hidden_size = hidden.value_or(embed.shape[1]);
  if (!vocab) out->facts.push_back("config.json has no vocab_size; taken from embed_tokens");
  if (!hidden) out->facts.push_back("config.json has no hidden_size; taken from embed_tokens");
  const std::vector<int64_t> want = {out->vocab_size, out->hidden_size};
  const std::string want_why =
      absl::StrCat("expected ", ShapeText(want), " from config.json (vocab_size, hidden_size)");
  if (embed.shape != want) {
    return absl::InvalidArgumentError(absl::StrCat("target '", model_dir, "': embed_tokens '",
                                                   embed.name, "' has shape ",
                                                   ShapeText(embed.shape), "; ", want_why));
  }
  if (!out->tied && infos[1]->shape != want) {
    return absl::InvalidArgumentError(absl::StrCat("target '", model_dir, "': lm_head '",
                                                   infos[1]->name, "' has shape ",
                                                   ShapeText(infos[1]->shape), "; ", want_why));
  }
  if (options.load_norm && infos.back()->shape != std::vector<int64_t>{out->hidden_size}) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target '", model_dir, "': final norm '", infos.back()->name, "' has shape ",
        ShapeText(infos.back()->shape), "; expected [", out->hidden_size, "] (hidden_size)"));
  }
  return absl::OkStatus();
}

// Reads, fingerprints (stored bytes, by role) and converts each of `infos`,
// in order, a bounded chunk at a time (chunked_copy.h): the stored bytes of
// a chunk are hashed, converted and their mapped pages given back before the
// next, so the peak is what stays resident plus one chunk. One fact per tensor.
absl::StatusOr<std::vector<at::Tensor>> ReadTensors(const TensorSource& source,
                                                    const std::vector<const TensorInfo*>& infos,
                                                    const std::string& model_dir,
                                                    const TargetLoadOptions& options,
                                                    Fingerprinter& fp, TargetTensors* out) {
  std::vector<at::Tensor> loaded;
  for (const TensorInfo* info : infos) {
    ASSIGN_OR_RETURN(at::Tensor t, source.Read(info->name), "target '", model_dir, "'");
    ASSIGN_OR_RETURN(t, TorchGuard("reading", [&] { return t.cpu().contiguous(); }), "target '",
                     model_dir, "': tensor '", info->name, "'");
    const std::string role = info->name == out->embed_name     ? "embed_tokens"
                             : info->name == out->lm_head_name ? "lm_head"
                                                               : "norm";
    ByteHasher hash = fp.BeginTensor(role, formats::DTypeName(info->dtype), info->shape);
    if (std::optional<FileStamp> file =
            MayAlias(source, info->name, t, options.dtype, options.device, options.map)) {
      // Stored as it stays resident: a view of the shard, hashed in place.
      hash.Update(t.data_ptr(), t.nbytes());
      fp.EndTensor(hash);
      out->mapping.AddMapped(*file, static_cast<int64_t>(t.nbytes()));
      loaded.push_back(t);
    } else {
      ChunkedCopyOptions copy{options.dtype, options.device};
      if (options.chunk_bytes > 0) copy.chunk_bytes = options.chunk_bytes;
      // Owned memory, never a view of the mapped shard.
      ASSIGN_OR_RETURN(
          at::Tensor converted,
          ChunkedCopy(
              t, copy, [&](const void* p, int64_t, int64_t n) { hash.Update(p, n); },
              [&](int64_t off, int64_t n) { source.ReleaseRange(info->name, off, n); }),
          "target '", model_dir, "': tensor '", info->name, "'");
      fp.EndTensor(hash);
      out->mapping.AddCopied(static_cast<int64_t>(converted.nbytes()));
      loaded.push_back(converted);
      t = at::Tensor();
      source.ReleaseBytes(info->name);  // keep the peak near what stays resident
    }
    out->bytes_read += info->nbytes;
    out->facts.push_back(absl::StrCat(role, " '", info->name, "' ", ShapeText(info->shape), " ",
                                      formats::DTypeName(info->dtype), " from ",
                                      fs::path(info->file).filename().string()));
  }
  RETURN_IF_ERROR(out->mapping.CheckUnchanged(), "target '", model_dir, "'");
  return loaded;
}

}  // namespace

absl::StatusOr<TargetTensors> LoadTargetTensors(const std::string& model_dir,
                                                const TargetLoadOptions& options) {
  const std::string config_path = (fs::path(model_dir) / "config.json").string();
  ASSIGN_OR_RETURN(json config, ReadJson(config_path, "config.json"), "target '", model_dir, "'");
  ASSIGN_OR_RETURN(TargetNames listed, ListTargetNames(model_dir));
  const std::set<std::string> present(listed.names.begin(), listed.names.end());
  const TargetContext target{model_dir, config_path, config, listed.names, present};

  // embed_tokens decides the family; the others follow it where they can.
  ASSIGN_OR_RETURN(const Family* family, ChooseFamily(model_dir, listed.names, present));
  TargetTensors out;
  out.family = family->id;
  out.embed_name = family->embed;
  RETURN_IF_ERROR(ResolveLmHead(target, *family, &out));
  if (options.load_norm) {
    const std::vector<std::string> norm_tried = Tried(&Family::norm, *family);
    out.norm_name = FirstPresent(norm_tried, present);
    if (out.norm_name.empty()) {
      return NotFoundTensor(model_dir, "final norm", norm_tried, listed.names);
    }
    RETURN_IF_ERROR(ReadNormEps(config, config_path, &out));
  }

  std::vector<std::string> needed = {out.embed_name};
  if (!out.tied) needed.push_back(out.lm_head_name);
  if (options.load_norm) needed.push_back(out.norm_name);
  TensorSourcePtr source;
  if (listed.sharded) {
    ASSIGN_OR_RETURN(source, OpenShardedSafetensors(listed.index_path, needed), "target '",
                     model_dir, "'");
  } else {
    source = std::move(listed.single);
  }
  ASSIGN_OR_RETURN(const std::vector<const TensorInfo*> infos,
                   FindNeeded(*source, needed, model_dir));
  RETURN_IF_ERROR(CheckShapes(target, infos, options, &out));

  Fingerprinter fp;
  ASSIGN_OR_RETURN(const std::vector<at::Tensor> loaded,
                   ReadTensors(*source, infos, model_dir, options, fp, &out));
  if (out.tied) fp.AddTensor("lm_head=embed_tokens", "", {}, nullptr, 0);
  out.embed = loaded[0];
  out.lm_head = out.tied ? out.embed : loaded[1];
  if (options.load_norm) out.norm = loaded.back();
  out.fingerprint = fp.Hex();
  out.facts.insert(
      out.facts.begin(),
      absl::StrCat("naming family ", out.family, "; vocab_size ", out.vocab_size, ", hidden_size ",
                   out.hidden_size, "; read ", out.bytes_read, " bytes from ",
                   listed.sharded ? "a sharded" : "a single", " safetensors checkpoint"));
  return out;
}

}  // namespace dflash::weights
