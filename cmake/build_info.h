// The build's identity, defined in the generated build_info.cc
// (cmake/build_info.cc.in). Declared here and defined there so a new commit
// recompiles one small file, not every file that prints the version.
#pragma once

namespace dflash {
extern const char kVersion[];
extern const char kGitSha[];
}  // namespace dflash
