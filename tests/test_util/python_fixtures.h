// File: python_fixtures.h
// Fixture files made by the Python scripts in tests/fixtures (Debian's
// python3-torch writes the real torch.save formats). Python with torch takes
// seconds to start, so ctest makes each script's files once per run, before
// the tests that need them: every script is a fixture-setup test of its own
// name (tests/CMakeLists.txt: FIXTURES_SETUP / FIXTURES_REQUIRED) writing
// into <build>/tests/py-fixtures/<script>. The folder is shared by every
// test process: treat it as read-only.
//
//   const std::string dir = PythonFixtureDir("make_pt_fixtures");
//   ASSERT_FALSE(dir.empty());  // the failure says how to make it
#pragma once

#include <string>

namespace dflash::testing {

// The folder of tests/fixtures/<script>.py's files (the build's, or
// $DFLASH_PY_FIXTURES/<script>). When it is missing or incomplete, adds a
// test failure saying how to make it and returns "".
std::string PythonFixtureDir(const std::string& script);

}  // namespace dflash::testing
