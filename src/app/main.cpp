// drainwise: what a switch drain will do to the AI jobs on a fabric.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "process/malloc_tunables.h"

#ifndef DRAINWISE_VERSION
#define DRAINWISE_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  drainwise::process::ReexecWithMallocTunables(argv);
  CLI::App app{"drainwise: what a switch drain will do to the AI jobs on a fabric"};
  app.set_version_flag("--version", std::string("drainwise ") + DRAINWISE_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  drainwise::app::RegisterFabric(app, &exit_code);
  drainwise::app::RegisterServe(app, &exit_code);
  drainwise::app::RegisterSimulate(app, &exit_code);
  drainwise::app::RegisterCheck(app, &exit_code);
  drainwise::app::RegisterHashToken(app, &exit_code);
  drainwise::app::RegisterCalibrate(app, &exit_code);
  drainwise::app::RegisterConfig(app, &exit_code);
  drainwise::app::RegisterPacketWorker(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors exit 2, as drainwise check promises
  }
  return exit_code;
}
