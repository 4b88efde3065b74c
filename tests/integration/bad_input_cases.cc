#include "integration/bad_input_cases.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace dflash::testing::bad_input {

MatrixValues::MatrixValues(const MatrixContext& ctx)
    : data(ctx.data),
      data_canon(ctx.data_canon),
      done_id(ctx.done_id),
      huge(10 << 20, 'x'),
      long_name(300, 'n'),
      long_path(ctx.data_canon + "/" + std::string(5000, 'p')),
      nul_path(ctx.data + "/drafter"),
      bad_utf8("ev-\xFF\xFE"),
      dtypes(" is not a DType: 0 (the default), 1 (fp32), 2 (fp16) or 3 (bf16)"),
      int32_range(", which does not fit in an int32 (-2147483648 to 2147483647)"),
      enum_range(", which does not fit in an enum (-2147483648 to 2147483647)") {
  while (deep_path.size() < 3999) deep_path += std::string(99, 'q') + "/";
  deep_path.resize(3999);
  nul_path += std::string("\0/../../x", 9);
  for (int i = 0; i < 100'000; ++i) many_ids.push_back(absl::StrCat("ev-20000101-000000-", i));
}

std::string Parse(const std::string& type, const std::string& what) {
  return absl::StrCat("request is not a valid dflash.eval.v1.", type, ": ", what);
}

std::string TooBig(const std::string& request) {
  return absl::StrCat("Received message larger than max (", request.size(), " vs. ",
                      kMaxRequestBytes, ")");
}

std::string Cut(const std::string& message) {
  if (message.size() <= 4096) return message;
  return absl::StrCat(message.substr(0, 4096), "... (", message.size() - 4096, " more bytes)");
}

std::string NotUtf8(const std::string& type, const std::string& field) {
  return Parse(type, "field '" + field +
                         "' (1) is not valid UTF-8 (byte 0xff at offset 3 of "
                         "the value)");
}

std::string Profile(const std::string& id, const std::string& format, int setting) {
  pb::ExportProfileRequest r;
  r.set_id(id);
  r.set_format(format);
  r.set_setting(setting);
  return r.SerializeAsString();
}

std::string Scrape(int drafts, int draft_tokens) {
  return absl::StrCat("vllm:spec_decode_num_drafts_total ", drafts,
                      "\nvllm:spec_decode_num_draft_tokens_total ", draft_tokens,
                      "\nvllm:spec_decode_num_accepted_tokens_total ", drafts, "\n");
}

std::string Calibrate(const std::string& id,
                      const std::vector<std::pair<std::string, std::string>>& files, int setting) {
  pb::CalibrateEvalRequest r;
  r.set_id(id);
  r.set_setting(setting);
  for (const auto& [path, contents] : files) {
    pb::ServedFile* f = r.add_served();
    f->set_path(path);
    f->set_contents(contents);
  }
  return r.SerializeAsString();
}

std::string Compare(const std::vector<std::string>& ids) {
  pb::CompareEvalsRequest r;
  for (const std::string& id : ids) r.add_ids(id);
  return r.SerializeAsString();
}

std::vector<Case> Join(std::vector<std::vector<Case>> groups) {
  std::vector<Case> cases;
  for (std::vector<Case>& group : groups) {
    cases.insert(cases.end(), std::make_move_iterator(group.begin()),
                 std::make_move_iterator(group.end()));
  }
  return cases;
}

std::vector<Case> MatrixCases(const MatrixContext& ctx) {
  const MatrixValues v(ctx);
  return Join({ResourceCases(v), EvalCases(v), JobCases(v)});
}

}  // namespace dflash::testing::bad_input
