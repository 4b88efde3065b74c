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

// Maps each file read-only and reads one byte of every 4 KiB page: what a
// load that keeps views of its files cannot beat. {bytes mapped, seconds}.
std::pair<int64_t, double> MappedTouch(const std::vector<std::string>& files);

// Asks the kernel to drop the files' clean pages from the page cache
// (posix_fadvise DONTNEED), so the next read comes from the disk. Pages
// still mapped by this process stay.
void DropFromPageCache(const std::vector<std::string>& files);

// VmRSS and VmHWM of this process, in bytes; ResetPeakRss sets VmHWM to
// VmRSS (/proc/self/clear_refs).
int64_t RssBytes();
int64_t PeakRssBytes();
void ResetPeakRss();

}  // namespace dflash::bench
