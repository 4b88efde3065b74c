// File: cli.h
// The dflash-eval command line: subcommands over EvalClient. Exit codes:
//   0 success; 1 the server answered with an error; 2 the server could not
//   be reached (or timed out); 3 a checkpoint failed validation; 64 usage.
#pragma once

#include <ostream>

namespace dflash::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUnreachable = 2;
inline constexpr int kExitValidationFailed = 3;
inline constexpr int kExitUsage = 64;

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace dflash::client
