#include "client/format_fields.h"

#include <google/protobuf/descriptor.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dflash::client {
namespace {

namespace gp = ::google::protobuf;
using FD = gp::FieldDescriptor;

std::string ScalarText(const gp::Message& m, const FD& f) {
  const gp::Reflection& r = *m.GetReflection();
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32: return absl::StrCat(r.GetInt32(m, &f));
    case FD::CPPTYPE_INT64: return absl::StrCat(r.GetInt64(m, &f));
    case FD::CPPTYPE_UINT32: return absl::StrCat(r.GetUInt32(m, &f));
    case FD::CPPTYPE_UINT64: return absl::StrCat(r.GetUInt64(m, &f));
    case FD::CPPTYPE_DOUBLE: return absl::StrFormat("%.6g", r.GetDouble(m, &f));
    case FD::CPPTYPE_FLOAT: return absl::StrFormat("%.6g", r.GetFloat(m, &f));
    case FD::CPPTYPE_BOOL: return r.GetBool(m, &f) ? "true" : "false";
    case FD::CPPTYPE_ENUM: return r.GetEnum(m, &f)->name();
    case FD::CPPTYPE_STRING: return r.GetString(m, &f);
    default: return "?";
  }
}

}  // namespace

std::string FormatOtherFields(const gp::Message& m, const std::set<std::string>& shown) {
  const gp::Reflection& r = *m.GetReflection();
  std::vector<const FD*> set;
  r.ListFields(m, &set);  // the set fields, by field number
  std::string out;
  for (const FD* f : set) {
    if (f->is_repeated() || f->cpp_type() == FD::CPPTYPE_MESSAGE) continue;
    if (shown.count(f->name()) > 0) continue;
    if (out.empty()) out = "other fields\n";
    absl::StrAppend(&out, absl::StrFormat("  %-28s %s\n", f->name(), ScalarText(m, *f)));
  }
  return out;
}

}  // namespace dflash::client
