#include "test_util/python_fixtures.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {
namespace fs = std::filesystem;

std::string SharedPythonFixture(const std::string& script_relative,
                                const std::string& extra_args) {
  const std::string script = BinaryFromEnv("DFLASH_SOURCE_DIR") + "/" + script_relative;
  const std::string text = ReadFileOrEmpty(script);
  if (text.empty()) {
    ADD_FAILURE() << "cannot read fixture script " << script;
    return "";
  }
  // FNV-1a over the script, the Python modules beside it (the generator
  // imports the reference) and the arguments: any change makes a new fixture.
  std::string keyed = text + extra_args;
  std::vector<fs::path> modules;
  for (const auto& e : fs::directory_iterator(fs::path(script).parent_path())) {
    if (e.path().extension() == ".py" && e.path() != fs::path(script)) modules.push_back(e.path());
  }
  std::sort(modules.begin(), modules.end());
  for (const fs::path& m : modules) keyed += ReadFileOrEmpty(m.string());
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : keyed) h = (h ^ c) * 0x100000001b3ull;
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = tmp && *tmp ? tmp : "/tmp";
  const fs::path root = base / ("dflash-fixtures-" + fs::path(script).stem().string() + "-" +
                                std::to_string(h));
  if (fs::exists(root / ".done")) return root.string();

  std::string work = (base / "dflash-fixtures-XXXXXX").string();
  if (mkdtemp(work.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed under " << base;
    return "";
  }
  CommandResult r = RunCommand({"/bin/sh", "-c",
                                BinaryFromEnv("DFLASH_FIXTURE_PY") + " " + script + " " + work +
                                    " " + extra_args},
                               {}, 600);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "fixture script failed (exit " << r.exit_code << "): " << script << "\n"
                  << r.out << r.err;
    std::error_code ec;
    fs::remove_all(work, ec);
    return "";
  }
  std::ofstream(fs::path(work) / ".done") << "ok\n";
  std::error_code ec;
  fs::rename(work, root, ec);
  if (ec) fs::remove_all(work, ec);  // another process won the race: use its copy
  return fs::exists(root / ".done") ? root.string() : "";
}

}  // namespace dflash::testing
