// File: server_main.h
// dflash-evald from start to stop: parse the settings (server_config.h), set
// up logging, build the core, the job service, metrics and the gRPC server,
// preload, serve until SIGINT/SIGTERM, then stop cleanly. server/main.cc
// only calls this.
#pragma once

namespace dflash::app {

// Returns the process's exit status: 0 after a clean stop; 1 when a setting
// or a startup step fails (logged as critical); CLI11's status for --help,
// --version and flags it cannot parse.
int ServerMain(int argc, char** argv);

}  // namespace dflash::app
