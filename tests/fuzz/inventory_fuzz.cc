// Fuzzes the inventory loader (harness/lab/inventory.h): ParseInventory, then, for an
// inventory that parses, the lookups the coordinator and agents make on it (the host of
// every rank, every host by name, the host-side fault kinds).
// Seeds: configs/inventories/.
#include "harness/lab/inventory.h"
#include "tests/fuzz/fuzz_util.h"

using namespace fl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = FL_SOURCE_DIR "/configs/inventories/fuzz-input.yaml";
  auto inventory = lab::ParseInventory(fuzz::AsText(data, size), kName);
  if (!inventory.ok()) {
    fuzz::CheckLoaderError(inventory.status(), kName);
    return 0;
  }
  const lab::Inventory& inv = *inventory;
  FL_FUZZ_CHECK(!inv.hosts.empty());
  const int world = inv.world_size();
  FL_FUZZ_CHECK(world > 0);
  for (int rank = 0; rank < world && rank < 4096; ++rank) {
    int local = -1;
    const lab::InventoryHost* host = inv.HostOfRank(rank, &local);
    FL_FUZZ_CHECK(host != nullptr && local >= 0 && local < host->ranks);
  }
  for (const auto& h : inv.hosts) FL_FUZZ_CHECK(inv.FindHost(h.name) == &h);
  (void)lab::InventoryFaultKinds();
  return 0;
}
