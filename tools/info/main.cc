// tsr-info: what this Tessera is and how it is set, as `ucx_info -c` and `ompi_info` do.
//
//   tsr-info            everything (-a)
//   tsr-info -b         version, build options, UCX (transports, memory types), hwloc
//   tsr-info -s         every TSR_* setting: current value, default, accepted values, meaning
//   tsr-info -l         the algorithms: dense (TSR_ALGO) and tensor (algorithm=, tsr-bench --algo)
//   tsr-info --version  "tsr-info (Tessera) MAJOR.MINOR.PATCH"
//
// Exit status 1 when the environment sets a value the runtime would refuse, so `tsr-info -s`
// can check a job's settings before it starts; 2 for a command-line error.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/info/info.h"

namespace {

using namespace tsr;

int run(int argc, char** argv) {
  CLI::App app{
      "tsr-info: Tessera's version, build options, the UCX and hwloc it runs on, and "
      "every TSR_* setting with its default, current value and meaning"};
  bool settings = false, build = false, algos = false, all = false;
  auto* s = app.add_flag("-s,--settings", settings, "Print only the TSR_* settings");
  auto* b = app.add_flag("-b,--build", build, "Print only the version, build options and libraries");
  auto* l = app.add_flag("-l,--algorithms", algos, "Print only the dense and tensor algorithms");
  auto* a = app.add_flag("-a,--all", all, "Print everything (the default)");
  app.set_version_flag("-V,--version", tools::info::versionLine(), "Print Tessera's version and exit");
  s->excludes(b)->excludes(l)->excludes(a);
  b->excludes(l)->excludes(a);
  l->excludes(a);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::cout << tools::info::versionLine() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {  // as tsrun: the parser's words, exit status 2
    std::cerr << "tsr-info: error: " << e.what() << "\nRun 'tsr-info --help' for the options.\n";
    return 2;
  }
  if (!settings && !build && !algos) settings = build = algos = true;

  if (build) std::cout << tools::info::renderBuild() << tools::info::renderLibraries();
  if (algos) std::cout << (build ? "\n" : "") << tools::info::renderAlgorithms();
  if (!settings) return 0;
  if (build || algos) std::cout << "\n";
  tools::info::SettingsReport report = tools::info::renderSettings(runtime::processEnvironment());
  std::cout << report.text << std::flush;
  if (report.invalid == 0) return 0;
  std::cerr << "tsr-info: error: the environment sets " << report.invalid
            << (report.invalid == 1 ? " value" : " values") << " the runtime refuses (INVALID above)\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tsr-info: error: " << e.what() << "\n";
    return 1;
  }
}
