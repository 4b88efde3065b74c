#include "core/eval_placement.h"

#include <unistd.h>

#include <algorithm>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "resident/device.h"

namespace dflash::core {
namespace {

absl::StatusOr<std::shared_ptr<const weights::TargetTensors>> TargetOn(
    const std::shared_ptr<const weights::TargetTensors>& target, const c10::Device& device) {
  if (target->embed.device() == device) return target;
  ASSIGN_OR_RETURN(weights::TargetTensors copy,
                   TorchGuard(absl::StrCat("copying the target to ", device.str()),
                              [&]() -> weights::TargetTensors {
                                weights::TargetTensors t;
                                t.embed = target->embed.to(device);
                                t.lm_head = target->tied ? t.embed : target->lm_head.to(device);
                                if (target->norm.defined()) t.norm = target->norm.to(device);
                                t.norm_eps = target->norm_eps;
                                t.vocab_size = target->vocab_size;
                                t.hidden_size = target->hidden_size;
                                t.tied = target->tied;
                                t.family = target->family;
                                t.fingerprint = target->fingerprint;
                                return t;
                              }));
  return std::make_shared<const weights::TargetTensors>(std::move(copy));
}

}  // namespace

absl::StatusOr<EvalSlots> MakeEvalSlots(const std::vector<std::string>& devices,
                                        const std::shared_ptr<const model::DrafterModel>& drafter,
                                        const std::shared_ptr<const weights::TargetTensors>& target,
                                        int threads, const std::string& server) {
  EvalSlots out;
  out.placement.threads = threads;
  out.placement.set_threads = resident::SetIntraOpThreads;
  out.placement.server = server;
  const c10::Device home = drafter->device();
  // Slots of the objects' own kind: a pair loaded on the CPU runs on the
  // list's CPU entries, a pair on a GPU on its GPU entries (replicas on
  // the others); the list's order is kept.
  const std::vector<std::string> slot_names = SlotNames(devices);
  for (size_t i = 0; i < devices.size(); ++i) {
    const c10::Device device(devices[i]);
    if (device.type() != home.type()) continue;
    std::shared_ptr<const model::DrafterModel> d = drafter;
    std::shared_ptr<const weights::TargetTensors> t = target;
    if (device != home) {
      ASSIGN_OR_RETURN(model::DrafterModel copy, drafter->CopyTo(device));
      d = std::make_shared<const model::DrafterModel>(std::move(copy));
      ASSIGN_OR_RETURN(t, TargetOn(target, device));
    }
    eval::DeviceSlot slot;
    slot.drafter = d.get();
    slot.target = t.get();
    slot.name = slot_names[i];
    out.placement.slots.push_back(slot);
    out.drafters.push_back(std::move(d));
    out.targets.push_back(std::move(t));
  }
  if (out.placement.slots.empty()) {  // every entry skipped: the objects' own device
    out.placement.slots.push_back({drafter.get(), target.get(), home.str()});
    out.drafters.push_back(drafter);
    out.targets.push_back(target);
  }
  return out;
}

std::vector<std::string> SlotNames(const std::vector<std::string>& devices) {
  const auto cpus = std::count(devices.begin(), devices.end(), "cpu");
  std::vector<std::string> out;
  out.reserve(devices.size());
  int k = 0;
  for (const std::string& d : devices) {
    out.push_back(d == "cpu" && cpus > 1 ? absl::StrCat("cpu#", k++) : d);
  }
  return out;
}

std::string ThisServer() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "localhost", ":", getpid());
}

}  // namespace dflash::core
