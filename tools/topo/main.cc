// tsr-topo: inspect a machine's topology (hwloc) and the ring/torus a job would use on it.
//
//   tsr-topo                                  this machine: summary, affinity matrix, bindings
//   tsr-topo --topology-xml box.xml           a machine described by hwloc XML
//   tsr-topo --hostfile hosts -np 16          + ring order and torus layout of that job
//   tsr-topo -H node1:4,node2:4               the same from a host list (tsrun's forms)
//   tsr-topo --json | --dot                   the same as JSON (fields: json_report.cc) or Graphviz
//   tsr-topo --dump-xml out.xml               write the topology as hwloc XML
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "base/bounded_file.h"
#include "tools/topo/report.h"
#include "topology/discovery.h"
#include "topology/local_host.h"

namespace {

using namespace tsr;
using namespace tsr::topology;

constexpr size_t kMaxHostfileBytes = size_t{1} << 20;

int fail(const Status& status) {
  std::cerr << "tsr-topo: error: " << status.message() << "\n";
  return 1;
}

// A command line that asks for something impossible: exit 2, as CLI11's own usage errors.
int usageError(const std::string& message) {
  std::cerr << "tsr-topo: " << message << "\nRun 'tsr-topo --help' for usage.\n";
  return 2;
}

int run(int argc, char** argv) {
  CLI::App app{
      "tsr-topo: machine topology (sockets, NUMA, GPUs, NICs), GPU/NIC affinity, "
      "rank binding, and the ring/torus a job would use",
      "tsr-topo"};
  std::string xml, hostfile, hostList, dumpPath, bind = "numa";
  int np = 0, localRanks = 0;
  bool json = false, dot = false;
  app.add_option("--topology-xml", xml, "Read the machine from this hwloc XML file (TSR_TOPO_FILE)");
  auto* hostfileOption = app.add_option("--hostfile,--machinefile", hostfile,
                                        "Show the ring and torus of a job on these hosts (lines: 'host slots=N', "
                                        "'host:N' or 'host', as tsrun reads them); each host is taken to look like the "
                                        "inspected machine");
  app.add_option("-H,--host", hostList, "The same from a host list: host1:4,host2:4 (bare host = 1 slot)")
      ->excludes(hostfileOption);
  app.add_option("-n,--np", np,  // also -np, see below
                 "Number of ranks of the job (default: every slot)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--bind", bind, "Binding mode to show: none|numa|core (TSR_BIND)");
  app.add_option("--local-ranks", localRanks,
                 "Local ranks to show bindings for (default: the job's most ranks on one host with --hostfile "
                 "or -H; else one per GPU, else one per NUMA node)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--json", json, "Print JSON instead of text");
  app.add_flag("--dot", dot, "Print Graphviz (the job's ring/torus with --hostfile, else the machine)");
  app.add_option("--dump-xml", dumpPath, "Write the topology as hwloc XML to this file (TSR_TOPO_DUMP_FILE)");
  // mpirun spells it -np; CLI11 would read that as -n -p.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.push_back(std::string(argv[i]) == "-np" ? "--np" : argv[i]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // a usage error: exit 2, as tsrun and tsr-bench
    std::fprintf(stderr, "tsr-topo: %s\nRun 'tsr-topo --help' for usage.\n", e.what());
    return 2;
  }
  if (json && dot) return usageError("--json and --dot exclude each other");
  // An empty path given is a mistake (an unset shell variable), not "none given".
  for (const char* name : {"--topology-xml", "--hostfile", "-H", "--dump-xml"})
    if (app.count(name) > 0 && app[name]->as<std::string>().empty()) return usageError(std::string(name) + " is empty");
  auto mode = parseBindMode(bind);
  if (!mode.isOk()) return usageError(mode.status().message());

  auto machine = xml.empty() ? discoverLocal() : loadXml(xml);
  if (!machine.isOk()) return fail(machine.status());
  if (!dumpPath.empty()) {
    Status dumped = dumpXml(dumpPath, xml);
    if (!dumped.isOk()) return fail(dumped);
    std::cerr << "tsr-topo: wrote " << dumpPath << "\n";
  }
  const MachineTopology& m = machine.value();
  const bool localRanksGiven = localRanks > 0;  // 0: the default
  if (localRanks == 0)
    localRanks =
        !m.gpus.empty() ? static_cast<int>(m.gpus.size()) : std::max<int>(1, static_cast<int>(m.numaNodes.size()));
  tools::topo::Report report =
      tools::topo::makeReport(xml.empty() ? "local machine" : xml, machine.take(), mode.value(), localRanks);
  if (!hostfile.empty() || !hostList.empty()) {
    auto hosts = [&]() -> Result<std::vector<HostEntry>> {
      if (hostfile.empty()) return parseHostList(hostList);
      TSR_ASSIGN_OR_RETURN(std::string text, readBoundedFile(hostfile, kMaxHostfileBytes, "hostfile"));
      return parseHostfile(text, hostfile);
    }();
    if (!hosts.isOk()) return fail(hosts.status());
    auto job = tools::topo::makeJob(report, hostfile, hostList, hosts.value(), np, localHostNames());
    if (!job.isOk()) return fail(job.status());
    report.job = job.take();
    // A host of the job binds its own ranks (-H n1:4,n2:4: 4), not one per GPU of the machine.
    if (!localRanksGiven) tools::topo::setBindings(report, tools::topo::mostRanksPerHost(*report.job));
  } else if (np != 0) {
    return usageError("-np needs --hostfile or -H");
  }
  std::cout << (json  ? tools::topo::renderJson(report)
                : dot ? tools::topo::renderDot(report)
                      : tools::topo::renderText(report));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tsr-topo: error: " << e.what() << "\n";
    return 1;
  }
}
