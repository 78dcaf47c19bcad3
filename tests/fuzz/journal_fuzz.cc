// Fuzzes the fault journal reader (injectors/journal.h): the input is written as one entry
// file, DIR/f.json, and read back with FaultJournal::List, which is what `faultline lab
// recover` and an agent at start-up do with whatever a crashed process left on disk. A
// handle that reads back is also written as JSON and read again (HandleToJson/HandleFromJson
// must round-trip).
// Seeds: tests/fuzz/corpus/journal/ (hand-made entries in Record's format).
//
// TODO(parse): once injectors/journal.h has the pure ParseJournalEntry, call it directly
// instead of going through a file (same coverage, no file system per input).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "injectors/injector.h"
#include "injectors/journal.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace fl;

// Never destroyed: the exit handler that removes the directory runs after static destructors.
const std::string& Dir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* t = new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/fl-fuzz-journal.XXXXXX");
    FL_FUZZ_CHECK(mkdtemp(t->data()) != nullptr);
    std::atexit([] {
      unlink((Dir() + "/f.json").c_str());
      rmdir(Dir().c_str());
    });
    return t;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = Dir();
  {
    // Not WriteFileAtomic: its fsync would make each input cost a disk flush.
    FILE* f = std::fopen((dir + "/f.json").c_str(), "wb");
    FL_FUZZ_CHECK(f != nullptr);
    FL_FUZZ_CHECK(size == 0 || std::fwrite(data, 1, size, f) == size);
    FL_FUZZ_CHECK(std::fclose(f) == 0);
  }
  injectors::FaultJournal journal(dir);
  std::vector<std::string> errors;
  auto entries = journal.List(&errors);
  FL_FUZZ_CHECK(entries.ok());
  FL_FUZZ_CHECK(entries->size() + errors.size() == 1);
  for (const injectors::JournalEntry& e : *entries) {
    auto again = injectors::HandleFromJson(injectors::HandleToJson(e.handle));
    FL_FUZZ_CHECK(again.ok());
    FL_FUZZ_CHECK(again->id == e.handle.id && again->spec.kind == e.handle.spec.kind &&
                  again->spec.target == e.handle.spec.target &&
                  again->spec.params == e.handle.spec.params && again->state == e.handle.state);
  }
  return 0;
}
