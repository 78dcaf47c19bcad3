#include "harness/cli/cli.h"

int main(int argc, char** argv) { return fl::harness::RunCli(argc, argv); }
