// The drainwise subcommands. Each Register* adds its CLI11 subcommand to
// `app`; the callback runs the command and stores its exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace drainwise::app {

void RegisterFabric(CLI::App& app, int* exit_code);
void RegisterServe(CLI::App& app, int* exit_code);
void RegisterSimulate(CLI::App& app, int* exit_code);
void RegisterCheck(CLI::App& app, int* exit_code);
void RegisterBench(CLI::App& app, int* exit_code);
void RegisterCalibrate(CLI::App& app, int* exit_code);
void RegisterHashToken(CLI::App& app, int* exit_code);
void RegisterConfig(CLI::App& app, int* exit_code);        // config check|show FILE
void RegisterPacketWorker(CLI::App& app, int* exit_code);  // hidden: a daemon's packet-level run

}  // namespace drainwise::app
