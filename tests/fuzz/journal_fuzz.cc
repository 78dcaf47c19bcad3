// Fuzzes the fault journal's entry parser (injectors/journal.h ParseJournalEntry), which is what
// `faultline lab recover` and an agent at start-up run on whatever a crashed process left on
// disk. Every input must come back as an entry or as a status, never as an exception; an entry
// that reads back must round-trip through HandleToJson/HandleFromJson.
// Seeds: tests/fuzz/corpus/journal/ (hand-made entries in Record's format).
#include <string>

#include "injectors/injector.h"
#include "injectors/journal.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl;
  auto entry = injectors::ParseJournalEntry(fuzz::AsText(data, size), "fuzz.json");
  if (!entry.ok()) return 0;
  auto again = injectors::HandleFromJson(injectors::HandleToJson(entry->handle));
  FL_FUZZ_CHECK(again.ok());
  FL_FUZZ_CHECK(again->id == entry->handle.id && again->spec.kind == entry->handle.spec.kind &&
                again->spec.target == entry->handle.spec.target &&
                again->spec.params == entry->handle.spec.params &&
                again->state == entry->handle.state);
  return 0;
}
