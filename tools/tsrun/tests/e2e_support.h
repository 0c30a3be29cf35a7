// What the tests of the real tsrun binary (found beside theirs) share: the command line,
// output checks and a temporary directory for helper files.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/self_path.h"
#include "tools/tsrun/tests/child_process.h"

namespace tsr::tools::tsrun::testing {

using Words = std::vector<std::string>;

inline Words tsrun(Words args) {
  args.insert(args.begin(), besideSelf("tsrun"));
  return args;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exitCode()) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

inline Words sorted(Words w) {
  std::sort(w.begin(), w.end());
  return w;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A temporary directory with helper files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tsrun_test.XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text, bool executable = false) {
    std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    if (executable) chmod(file.c_str(), 0755);
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tsr::tools::tsrun::testing
