// dflash-eval: the thin client for dflash-evald. See client/cli.h.
#include <iostream>

#include "client/cli.h"

int main(int argc, char** argv) {
  return dflash::client::RunCli(argc, argv, std::cout, std::cerr);
}
