// tsr-info's sections. Each returns its text, so a test can compare it with what it knows.
#pragma once

#include <string>

#include "runtime/config.h"

namespace tsr::tools::info {

// Version, build options and the CPU kernels this machine would run.
std::string renderBuild();
// "tsr-info (Tessera) 0.1.0": --version's line.
std::string versionLine();

// UCX (version, transports, memory types) and hwloc, as the libraries report at run time.
std::string renderLibraries();
std::string renderUcx();  // the UCX rows of renderLibraries()

// The dense algorithms (TSR_ALGO) and the tensor algorithms (algorithm=), from their tables.
std::string renderAlgorithms();

// "  label:  value", values aligned.
std::string row(const std::string& label, const std::string& value);

struct SettingsReport {
  std::string text;
  int invalid = 0;  // settings whose environment value the runtime would refuse
};

// Every entry of runtime::configTable() as NAME=current, with its default, accepted values and
// meaning; then the TSR_ variables of `env` that are not settings.
SettingsReport renderSettings(const runtime::EnvMap& env);

}  // namespace tsr::tools::info
