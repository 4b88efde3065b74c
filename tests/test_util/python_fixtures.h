// File: python_fixtures.h
// Fixture files made by a Python script (Debian's python3-torch writes the
// real torch.save formats). Python with torch takes seconds to start, so a
// script's output is made once per version of the script into
// $TMPDIR/dflash-fixtures-<name>-<hash of the script>: built in a temporary
// folder, then renamed into place, so parallel test processes never see half
// a set. The result is shared: treat it as read-only.
#pragma once

#include <string>

namespace dflash::testing {

// Runs DFLASH_FIXTURE_PY <source>/<script_relative> OUT [extra_args] once and
// returns OUT; adds a test failure and returns "" when the script fails.
std::string SharedPythonFixture(const std::string& script_relative,
                                const std::string& extra_args = "");

}  // namespace dflash::testing
