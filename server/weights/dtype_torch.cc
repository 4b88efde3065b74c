#include "weights/dtype_torch.h"

namespace dflash::weights {

c10::ScalarType ToScalarType(formats::DType dtype) {
  switch (dtype) {
    case formats::DType::kF64: return c10::kDouble;
    case formats::DType::kF32: return c10::kFloat;
    case formats::DType::kF16: return c10::kHalf;
    case formats::DType::kBF16: return c10::kBFloat16;
    case formats::DType::kI64: return c10::kLong;
    case formats::DType::kI32: return c10::kInt;
    case formats::DType::kI16: return c10::kShort;
    case formats::DType::kI8: return c10::kChar;
    case formats::DType::kU8: return c10::kByte;
    case formats::DType::kBool: return c10::kBool;
  }
  return c10::kByte;
}

}  // namespace dflash::weights
