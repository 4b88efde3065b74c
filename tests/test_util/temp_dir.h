// File: temp_dir.h
// A fresh directory under $TMPDIR (or /tmp) removed when the object dies.
#pragma once

#include <string>

namespace dflash::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/relative
  std::string Join(const std::string& relative) const;
  // Writes bytes to path()/relative (parent folders created) and returns the path.
  std::string WriteFile(const std::string& relative, const std::string& bytes) const;

 private:
  std::string path_;
};

// Reads a whole file; empty string when unreadable.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace dflash::testing
