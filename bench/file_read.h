// File: file_read.h
// The "plain read" both load benchmarks compare against: every file under a
// folder read sequentially into one reused 8 MiB buffer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dflash::bench {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t);

// The regular files under `root` (or `root` itself), sorted.
std::vector<std::string> FilesUnder(const std::string& root);

// Reads them all; returns {bytes read, seconds}.
std::pair<int64_t, double> PlainRead(const std::vector<std::string>& files);

}  // namespace dflash::bench
