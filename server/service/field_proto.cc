#include "service/field_proto.h"

#include "types/proposal_policy.h"

namespace dflash::service {

void SettingToProto(const types::SamplingSetting& s, pb::SamplingSetting* out) {
  out->set_temperature(s.temperature);
  out->set_top_p(s.top_p);
  out->set_top_k(static_cast<int32_t>(s.top_k));
  if (s.policy != types::ProposalPolicy::kDefault) out->set_policy(types::PolicyName(s.policy));
  out->set_engine(s.engine);
  out->set_target_only_truncation(!s.truncate_draft);
}

void IntervalToProto(const types::Interval& in, pb::Interval* out) {
  out->set_lo(in.lo);
  out->set_hi(in.hi);
}

namespace internal {

using FD = gp::FieldDescriptor;

bool IsMessageField(const FD& f, bool repeated) {
  return f.cpp_type() == FD::CPPTYPE_MESSAGE && f.is_repeated() == repeated;
}

void SetScalar(gp::Message& m, const FD& f, int64_t v) {
  const gp::Reflection& r = *m.GetReflection();
  if (f.is_repeated()) return;
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32: r.SetInt32(&m, &f, static_cast<int32_t>(v)); break;
    case FD::CPPTYPE_INT64: r.SetInt64(&m, &f, v); break;
    case FD::CPPTYPE_UINT32: r.SetUInt32(&m, &f, static_cast<uint32_t>(v)); break;
    case FD::CPPTYPE_UINT64: r.SetUInt64(&m, &f, static_cast<uint64_t>(v)); break;
    default: break;
  }
}

void SetScalar(gp::Message& m, const FD& f, double v) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_DOUBLE) {
    m.GetReflection()->SetDouble(&m, &f, v);
  }
}

void SetScalar(gp::Message& m, const FD& f, bool v) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_BOOL) m.GetReflection()->SetBool(&m, &f, v);
}

void SetScalar(gp::Message& m, const FD& f, const std::string& v) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_STRING) {
    m.GetReflection()->SetString(&m, &f, v);
  }
}

void GetScalar(const gp::Message& m, const FD& f, int64_t& out) {
  const gp::Reflection& r = *m.GetReflection();
  if (f.is_repeated()) return;
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32: out = r.GetInt32(m, &f); break;
    case FD::CPPTYPE_INT64: out = r.GetInt64(m, &f); break;
    case FD::CPPTYPE_UINT32: out = r.GetUInt32(m, &f); break;
    case FD::CPPTYPE_UINT64: out = static_cast<int64_t>(r.GetUInt64(m, &f)); break;
    default: break;
  }
}

void GetScalar(const gp::Message& m, const FD& f, double& out) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_DOUBLE) {
    out = m.GetReflection()->GetDouble(m, &f);
  }
}

void GetScalar(const gp::Message& m, const FD& f, bool& out) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_BOOL) out = m.GetReflection()->GetBool(m, &f);
}

void GetScalar(const gp::Message& m, const FD& f, std::string& out) {
  if (!f.is_repeated() && f.cpp_type() == FD::CPPTYPE_STRING) {
    out = m.GetReflection()->GetString(m, &f);
  }
}

void AddScalar(gp::Message& m, const FD& f, int64_t v) {
  const gp::Reflection& r = *m.GetReflection();
  if (!f.is_repeated()) return;
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32: r.AddInt32(&m, &f, static_cast<int32_t>(v)); break;
    case FD::CPPTYPE_INT64: r.AddInt64(&m, &f, v); break;
    case FD::CPPTYPE_UINT32: r.AddUInt32(&m, &f, static_cast<uint32_t>(v)); break;
    case FD::CPPTYPE_UINT64: r.AddUInt64(&m, &f, static_cast<uint64_t>(v)); break;
    default: break;
  }
}

void AddScalar(gp::Message& m, const FD& f, double v) {
  if (f.is_repeated() && f.cpp_type() == FD::CPPTYPE_DOUBLE) {
    m.GetReflection()->AddDouble(&m, &f, v);
  }
}

void AddScalar(gp::Message& m, const FD& f, bool v) {
  if (f.is_repeated() && f.cpp_type() == FD::CPPTYPE_BOOL) m.GetReflection()->AddBool(&m, &f, v);
}

void AddScalar(gp::Message& m, const FD& f, const std::string& v) {
  if (f.is_repeated() && f.cpp_type() == FD::CPPTYPE_STRING) {
    m.GetReflection()->AddString(&m, &f, v);
  }
}

}  // namespace internal
}  // namespace dflash::service
