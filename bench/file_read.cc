#include "file_read.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

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

std::pair<int64_t, double> MappedTouch(const std::vector<std::string>& files) {
  int64_t total = 0;
  volatile unsigned sink = 0;
  const Clock::time_point t = Clock::now();
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        const unsigned char* b = static_cast<const unsigned char*>(p);
        unsigned acc = 0;
        for (off_t i = 0; i < st.st_size; i += 4096) acc += b[i];
        sink = sink + acc;
        ::munmap(p, st.st_size);
        total += st.st_size;
      }
    }
    ::close(fd);
  }
  return {total, Since(t)};
}

void DropFromPageCache(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

namespace {
int64_t StatusField(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, n, key) == 0) return std::stoll(line.substr(n + 1)) * 1024;
  }
  return 0;
}
}  // namespace

int64_t RssBytes() {
  return StatusField("VmRSS");
}
int64_t PeakRssBytes() {
  return StatusField("VmHWM");
}
void ResetPeakRss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace dflash::bench
