#include "common/ops_observer.h"

#include <atomic>

namespace dflash {
namespace {

std::atomic<OpsObserver*> g_observer{nullptr};

}  // namespace

void SetOpsObserver(OpsObserver* observer) {
  g_observer.store(observer);
}

OpsObserver& Ops() {
  static OpsObserver noop;
  OpsObserver* o = g_observer.load();
  return o ? *o : noop;
}

}  // namespace dflash
