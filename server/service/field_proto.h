// File: field_proto.h
// A described struct (types/field_table.h) <-> its proto message, through
// protobuf reflection by field name: each table field fills the proto field
// of the same name (int64 members narrowed where the proto's field is
// int32, vectors as repeated fields, nested tables as sub-messages, unset
// optionals left unset). kStoreOnly fields have no proto field and are
// skipped. Back from the wire (a request's plain scalars), CheckFields
// applies the table's kName and kNonNegative checks. field_proto_test and
// request_fields_test check that every table field exists in the proto
// with a matching type, so a field on one side only fails by name.
//
//   pb::ShardPlacement p;
//   StructToProto(shard, p);
//   StructFromProto(request, params);
//   RETURN_IF_ERROR(CheckFields(params));
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "dflash/eval/v1/eval.pb.h"
#include "service/proto_fields.h"
#include "types/eval_options_fields.h"
#include "types/eval_result_fields.h"

namespace dflash::service {

// The two values with a wire form of their own (the table does not walk them).
void SettingToProto(const types::SamplingSetting& s, pb::SamplingSetting* out);
void IntervalToProto(const types::Interval& in, pb::Interval* out);

namespace internal {

namespace gp = ::google::protobuf;

// One value into a singular (Set) or repeated (Add) scalar field; a field of
// another type is left alone (field_proto_test reports it).
void SetScalar(gp::Message& m, const gp::FieldDescriptor& f, int64_t v);
void SetScalar(gp::Message& m, const gp::FieldDescriptor& f, double v);
void SetScalar(gp::Message& m, const gp::FieldDescriptor& f, bool v);
void SetScalar(gp::Message& m, const gp::FieldDescriptor& f, const std::string& v);
void AddScalar(gp::Message& m, const gp::FieldDescriptor& f, int64_t v);
void AddScalar(gp::Message& m, const gp::FieldDescriptor& f, double v);
void AddScalar(gp::Message& m, const gp::FieldDescriptor& f, bool v);
void AddScalar(gp::Message& m, const gp::FieldDescriptor& f, const std::string& v);

// A singular scalar field's value into out; a field of another type leaves
// out alone (field_proto_test reports it). Integers of any width widen to
// int64 (uint64 by its bits).
void GetScalar(const gp::Message& m, const gp::FieldDescriptor& f, int64_t& out);
void GetScalar(const gp::Message& m, const gp::FieldDescriptor& f, double& out);
void GetScalar(const gp::Message& m, const gp::FieldDescriptor& f, bool& out);
void GetScalar(const gp::Message& m, const gp::FieldDescriptor& f, std::string& out);

// The overload above that holds T: bool, int64_t, double or string.
template <class T>
auto Widen(const T& v) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<int64_t>(v);
  } else {
    static_assert(std::is_floating_point_v<T>, "no proto form for this type");
    return static_cast<double>(v);
  }
}

// Whether f is a message field, repeated as asked: what MutableMessage and
// AddMessage need (reflection aborts on anything else).
bool IsMessageField(const gp::FieldDescriptor& f, bool repeated);

}  // namespace internal

template <class S>
void StructToProto(const S& s, google::protobuf::Message& out);

template <class T>
void ValueToProto(const T& v, google::protobuf::Message& out,
                  const google::protobuf::FieldDescriptor& f) {
  namespace gp = ::google::protobuf;
  const gp::Reflection& r = *out.GetReflection();
  if constexpr (types::kHasFieldTable<T>) {
    if (internal::IsMessageField(f, false)) StructToProto(v, *r.MutableMessage(&out, &f));
  } else if constexpr (std::is_same_v<T, types::SamplingSetting>) {
    if (!internal::IsMessageField(f, false)) return;
    auto* p = gp::DynamicCastToGenerated<pb::SamplingSetting>(r.MutableMessage(&out, &f));
    if (p != nullptr) SettingToProto(v, p);
  } else if constexpr (std::is_same_v<T, std::optional<types::Interval>>) {
    if (!v || !internal::IsMessageField(f, false)) return;
    auto* p = gp::DynamicCastToGenerated<pb::Interval>(r.MutableMessage(&out, &f));
    if (p != nullptr) IntervalToProto(*v, p);
  } else if constexpr (types::IsOptional<T>::value) {
    if (v) ValueToProto(*v, out, f);
  } else if constexpr (types::IsVector<T>::value) {
    using E = typename T::value_type;
    for (const E& e : v) {
      if constexpr (types::kHasFieldTable<E>) {
        if (internal::IsMessageField(f, true)) StructToProto(e, *r.AddMessage(&out, &f));
      } else {
        internal::AddScalar(out, f, internal::Widen(e));
      }
    }
  } else {
    internal::SetScalar(out, f, internal::Widen(v));
  }
}

template <class S>
void StructToProto(const S& s, google::protobuf::Message& out) {
  const google::protobuf::Descriptor& d = *out.GetDescriptor();
  types::ForEachField<S>([&](const auto& f) {
    if (f.flags & types::kStoreOnly) return;
    const google::protobuf::FieldDescriptor* fd = d.FindFieldByName(f.name);
    if (fd != nullptr) ValueToProto(s.*f.member, out, *fd);  // absent: field_proto_test fails
  });
}

// The table's scalar fields from the proto fields of their names; the
// kStoreOnly ones keep their values.
template <class S>
void StructFromProto(const google::protobuf::Message& in, S& s) {
  const google::protobuf::Descriptor& d = *in.GetDescriptor();
  types::ForEachField<S>([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    static_assert(types::kIsScalar<T>, "only scalars come off the wire by table");
    if (f.flags & types::kStoreOnly) return;
    const google::protobuf::FieldDescriptor* fd = d.FindFieldByName(f.name);
    if (fd == nullptr) return;  // request_fields_test fails
    auto v = internal::Widen(s.*f.member);
    internal::GetScalar(in, *fd, v);
    s.*f.member = static_cast<T>(v);
  });
}

// The table's checks in table order, the first failure named by its field:
// kName fields by CheckName, kNonNegative ones by NonNegative.
template <class S>
absl::Status CheckFields(const S& s) {
  absl::Status status;
  types::ForEachField<S>([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    if (!status.ok()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (f.flags & types::kName) status = CheckName(f.name, s.*f.member);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (f.flags & types::kNonNegative) {
        status = NonNegative(f.name, static_cast<int64_t>(s.*f.member));
      }
    }
  });
  return status;
}

}  // namespace dflash::service
