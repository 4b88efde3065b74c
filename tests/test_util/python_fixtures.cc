#include "test_util/python_fixtures.h"

#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"

namespace dflash::testing {

std::string PythonFixtureDir(const std::string& script) {
  const char* env = std::getenv("DFLASH_PY_FIXTURES");
  const std::filesystem::path dir =
      std::filesystem::path(env != nullptr && *env != '\0' ? env : DFLASH_PY_FIXTURES_DIR) / script;
  std::error_code ec;
  if (!std::filesystem::exists(dir / ".done", ec)) {
    ADD_FAILURE() << "the files of tests/fixtures/" << script << ".py are missing: " << dir.string()
                  << " has no .done. ctest makes them in its fixture step '" << script
                  << "' before the tests that need them; run this test through ctest (ctest -R "
                  << "<test> adds the step), or `ctest --test-dir <build> -R " << script
                  << "` first";
    return "";
  }
  return dir.string();
}

}  // namespace dflash::testing
