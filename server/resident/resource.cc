#include "resident/resource.h"

namespace dflash::resident {

const char* ResourceKindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kTarget: return "target";
    case ResourceKind::kDrafter: return "drafter";
    case ResourceKind::kDataset: return "dataset";
  }
  return "?";
}

}  // namespace dflash::resident
