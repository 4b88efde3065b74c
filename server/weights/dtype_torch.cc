#include "weights/dtype_torch.h"

namespace dflash::weights {

c10::ScalarType ToScalarType(DType dtype) {
  switch (dtype) {
    case DType::kF64: return c10::kDouble;
    case DType::kF32: return c10::kFloat;
    case DType::kF16: return c10::kHalf;
    case DType::kBF16: return c10::kBFloat16;
    case DType::kI64: return c10::kLong;
    case DType::kI32: return c10::kInt;
    case DType::kI16: return c10::kShort;
    case DType::kI8: return c10::kChar;
    case DType::kU8: return c10::kByte;
    case DType::kBool: return c10::kBool;
  }
  return c10::kByte;
}

}  // namespace dflash::weights
