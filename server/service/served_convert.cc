#include "service/served_convert.h"

namespace dflash::service {

void ToProto(const served::Calibration& in, pb::Calibration* out) {
  out->set_source(in.source);
  out->set_curve(in.curve_label);
  out->set_weighting(in.weighting);
  out->set_served_accept_length(in.served_accept_length);
  out->set_predicted_accept_length(in.predicted_accept_length);
  out->set_ratio(in.ratio);
  if (in.predicted_interval) {
    out->mutable_predicted_interval()->set_lo(in.predicted_interval->lo);
    out->mutable_predicted_interval()->set_hi(in.predicted_interval->hi);
  }
  out->set_verdict(in.verdict);
  for (const std::string& c : in.likely_causes) out->add_likely_causes(c);
  for (const served::PositionCheck& p : in.positions) {
    pb::PositionCalibration* pp = out->add_positions();
    pp->set_position(p.position);
    pp->set_served_marginal(p.served_marginal);
    pp->set_predicted_marginal(p.predicted_marginal);
    if (p.served_conditional) pp->set_served_conditional(*p.served_conditional);
    if (p.predicted_conditional) pp->set_predicted_conditional(*p.predicted_conditional);
    if (p.ratio) pp->set_ratio(*p.ratio);
  }
  out->set_text(in.text);
  out->set_created(in.created);
}

}  // namespace dflash::service
