// File: sample_reader.cc
#include "data/sample_reader.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "data/vllm_capture.h"
#include "weights/torch_pt_file.h"

namespace dflash::data {
namespace {

std::string TypeName(c10::ScalarType t) {
  return c10::toString(t);
}

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError(what);
}

// [L] or [1, L] -> [L].
absl::StatusOr<at::Tensor> AsVector(const at::Tensor& t, const std::string& key) {
  if (t.dim() == 1) return t;
  if (t.dim() == 2 && t.size(0) == 1) return t[0];
  return Bad(
      absl::StrCat("'", key, "' has shape ", ShapeText(t.sizes()), "; expected [L] or [1, L]"));
}

// [L, W] or [1, L, W] -> [L, W].
absl::StatusOr<at::Tensor> AsMatrix(const at::Tensor& t, const std::string& key) {
  if (t.dim() == 2) return t;
  if (t.dim() == 3 && t.size(0) == 1) return t[0];
  return Bad(absl::StrCat("'", key, "' has shape ", ShapeText(t.sizes()),
                          "; expected [L, W] or [1, L, W]"));
}

absl::StatusOr<at::Tensor> ReadKey(const weights::TensorSource& src, const std::string& key,
                                   absl::string_view role) {
  if (src.Find(key) == nullptr) {
    return Bad(absl::StrCat(role, " '", key, "' is missing; the file holds [",
                            absl::StrJoin(src.names(), ", "), "]"));
  }
  return src.Read(key);
}

absl::Status CheckWidth(const std::string& key, size_t layers, int64_t width, int64_t hidden,
                        bool from_manifest) {
  if (width == static_cast<int64_t>(layers) * hidden) return absl::OkStatus();
  return Bad(absl::StrCat("'", key, "' has width ", width, "; expected ", layers,
                          layers == 1 ? " layer" : " layers", " x hidden size ", hidden, " = ",
                          static_cast<int64_t>(layers) * hidden,
                          from_manifest ? " (hidden_size from the manifest)"
                                        : " (hidden size of the dataset's other features)"));
}

// The manifest's final_hidden_state key: [L, H] floating point.
absl::StatusOr<at::Tensor> ReadFinalHidden(const weights::TensorSource& src, const std::string& key,
                                           int64_t length, int64_t hidden, bool from_manifest) {
  ASSIGN_OR_RETURN(at::Tensor f, ReadKey(src, key, "declared final hidden state"));
  ASSIGN_OR_RETURN(f, AsMatrix(f, key));
  if (!at::isFloatingType(f.scalar_type())) {
    return Bad(absl::StrCat("'", key, "' has dtype ", TypeName(f.scalar_type()),
                            "; expected a floating-point type"));
  }
  if (f.size(0) != length) {
    return Bad(
        absl::StrCat("'", key, "' has length ", f.size(0), "; 'input_ids' has length ", length));
  }
  if (hidden > 0) RETURN_IF_ERROR(CheckWidth(key, 1, f.size(1), hidden, from_manifest));
  return f.contiguous();
}

// input_ids [L] (integers, within the vocabulary when it is known) and
// loss_mask [L] (0/1) into out.
absl::Status ReadTokensAndMask(const weights::TensorSource& src, const SampleExpectations& expect,
                               HostSample& out) {
  ASSIGN_OR_RETURN(at::Tensor ids, ReadKey(src, "input_ids", "tensor"));
  ASSIGN_OR_RETURN(ids, AsVector(ids, "input_ids"));
  if (!at::isIntegralType(ids.scalar_type(), /*includeBool=*/false)) {
    return Bad(absl::StrCat("'input_ids' has dtype ", TypeName(ids.scalar_type()),
                            "; expected an integer type (int64)"));
  }
  const int64_t length = ids.size(0);
  if (length == 0) return Bad("'input_ids' is empty");
  out.input_ids = ids.to(at::kLong).contiguous();

  ASSIGN_OR_RETURN(at::Tensor mask, ReadKey(src, "loss_mask", "tensor"));
  ASSIGN_OR_RETURN(mask, AsVector(mask, "loss_mask"));
  if (!at::isIntegralType(mask.scalar_type(), /*includeBool=*/true)) {
    return Bad(absl::StrCat("'loss_mask' has dtype ", TypeName(mask.scalar_type()),
                            "; expected an integer or bool type holding 0/1"));
  }
  if (mask.size(0) != length) {
    return Bad(
        absl::StrCat("'loss_mask' has length ", mask.size(0), "; 'input_ids' has length ", length));
  }
  {
    const at::Tensor m64 = mask.to(at::kLong).contiguous();
    const int64_t* m = m64.data_ptr<int64_t>();
    for (int64_t p = 0; p < length; ++p) {
      if (m[p] != 0 && m[p] != 1) {
        return Bad(
            absl::StrCat("'loss_mask' holds ", m[p], " at position ", p, "; expected only 0 or 1"));
      }
    }
    out.loss_mask = m64.to(at::kByte);
  }
  if (expect.vocab_size > 0) {
    const int64_t* t = out.input_ids.data_ptr<int64_t>();
    for (int64_t p = 0; p < length; ++p) {
      if (t[p] < 0 || t[p] >= expect.vocab_size) {
        return Bad(absl::StrCat("'input_ids' holds token id ", t[p], " at position ", p,
                                "; expected [0, ", expect.vocab_size,
                                ") for the target's vocabulary"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HostSample> ReadSampleImpl(const std::string& path,
                                          const SampleExpectations& expect) {
  if (IsVllmCaptureName(path.substr(path.rfind('/') + 1))) return ReadVllmCapture(path, expect);
  ASSIGN_OR_RETURN(weights::TensorSourcePtr src, weights::OpenTorchPt(path));
  HostSample out;
  RETURN_IF_ERROR(ReadTokensAndMask(*src, expect, out));
  const int64_t length = out.input_ids.size(0);

  int64_t hidden = expect.hidden_size;
  c10::optional<c10::ScalarType> dtype = expect.feature_dtype;
  for (const FeatureGroup& g : expect.groups) {
    ASSIGN_OR_RETURN(at::Tensor f, ReadKey(*src, g.key, "declared feature"));
    ASSIGN_OR_RETURN(f, AsMatrix(f, g.key));
    if (!at::isFloatingType(f.scalar_type())) {
      return Bad(absl::StrCat("'", g.key, "' has dtype ", TypeName(f.scalar_type()),
                              "; expected a floating-point type"));
    }
    if (dtype.has_value() && f.scalar_type() != *dtype) {
      return Bad(absl::StrCat("'", g.key, "' has dtype ", TypeName(f.scalar_type()),
                              "; the dataset's other features are ", TypeName(*dtype),
                              " (request a dtype to convert them all)"));
    }
    dtype = f.scalar_type();
    if (f.size(0) != length) {
      return Bad(absl::StrCat("'", g.key, "' has length ", f.size(0), "; 'input_ids' has length ",
                              length));
    }
    const int64_t width = f.size(1);
    const size_t layers = g.layer_ids.size();
    if (hidden == 0) {
      if (width == 0 || width % static_cast<int64_t>(layers) != 0) {
        return Bad(absl::StrCat("'", g.key, "' has width ", width,
                                ", not a positive multiple of its ", layers, " declared layers [",
                                absl::StrJoin(g.layer_ids, ", "), "]"));
      }
      hidden = width / static_cast<int64_t>(layers);
    } else {
      RETURN_IF_ERROR(CheckWidth(g.key, layers, width, hidden, expect.hidden_size_from_manifest));
    }
    // A view of the file only when the reader mapped it and it stays one.
    out.feature_files.push_back(f.is_contiguous() ? src->MappedStamp(g.key) : std::nullopt);
    out.features.push_back(f.contiguous());
  }
  out.hidden_size = hidden;
  if (!expect.final_hidden_key.empty()) {
    ASSIGN_OR_RETURN(out.final_hidden, ReadFinalHidden(*src, expect.final_hidden_key, length,
                                                       hidden, expect.hidden_size_from_manifest));
  }
  return out;
}

}  // namespace

absl::StatusOr<HostSample> ReadSample(const std::string& path, const SampleExpectations& expect) {
  ASSIGN_OR_RETURN(absl::StatusOr<HostSample> result,
                   TorchGuard("reading sample", [&] { return ReadSampleImpl(path, expect); }));
  return result;
}

}  // namespace dflash::data
