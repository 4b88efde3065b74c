// dflash-evald: the evaluation server. Everything from flags to shutdown is
// in app/server_main.h; the server's parts live in core/, service/, metrics/.
#include "app/server_main.h"

int main(int argc, char** argv) {
  return dflash::app::ServerMain(argc, argv);
}
