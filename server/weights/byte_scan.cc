#include "weights/byte_scan.h"

#include <algorithm>
#include <optional>

#include "weights/tensor_stats.h"

namespace dflash::weights {
namespace {

// Small enough to stay in L2 between the test and the hash, a multiple of
// 64 bytes (ByteHasher) and of every element size.
constexpr int64_t kPiece = int64_t{256} << 10;

}  // namespace

bool HasFiniteBitTest(c10::ScalarType dtype) {
  return AllFiniteBytes(nullptr, 0, dtype).has_value();
}

void HashAndCheckFinite(const void* data, int64_t nbytes, c10::ScalarType dtype, ByteHasher& hash,
                        bool* finite) {
  const auto* p = static_cast<const char*>(data);
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  int64_t off = 0;
  do {
    const int64_t n = std::min(kPiece, nbytes - off);
    if (*finite) *finite = AllFiniteBytes(p + off, n / elem, dtype).value_or(true);
    hash.Update(p + off, static_cast<size_t>(n));
    off += n;
  } while (off < nbytes);
}

}  // namespace dflash::weights
