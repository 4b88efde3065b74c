#include "file_read.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace dflash::bench {
namespace fs = std::filesystem;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<std::string> FilesUnder(const std::string& root) {
  std::vector<std::string> files;
  if (fs::is_regular_file(root)) return {root};
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::pair<int64_t, double> PlainRead(const std::vector<std::string>& files) {
  std::vector<char> buf(8 << 20);
  int64_t total = 0;
  const Clock::time_point t = Clock::now();
  for (const std::string& f : files) {
    FILE* fp = std::fopen(f.c_str(), "rb");
    if (!fp) continue;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), fp)) > 0) total += n;
    std::fclose(fp);
  }
  return {total, Since(t)};
}

}  // namespace dflash::bench
