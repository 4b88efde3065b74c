// File: http_get.h
// Plain-socket HTTP for tests of the Prometheus endpoint (metrics/
// http_exposer.h): a request sent as given to a loopback port, the whole
// answer read back, and one sample picked out of the exposition text.
//
//   const std::string text = HttpGet(port, "/metrics");
//   EXPECT_EQ(MetricSample(text, R"(dflash_evald_evals_total{code="OK"})"), 1);
#pragma once

#include <string>

namespace dflash::testing {

// Sends `request` verbatim to 127.0.0.1:port and returns everything the
// server writes until it closes; "" when nothing answers.
std::string HttpExchange(int port, const std::string& request);

// GET http://127.0.0.1:port/path; returns "" when nothing answers.
std::string HttpGet(int port, const std::string& path);

// The value of one sample line ("name{labels} value"), or -1 when absent.
double MetricSample(const std::string& text, const std::string& series);

}  // namespace dflash::testing
