// `faultline store replay FILE`: writes what a run's writer spooled while the results store
// was unreachable (reports/store/spool.h) into the store, once it is back.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "reports/store/batch_writer.h"

namespace fl::harness {

void AddStoreCommands(CLI::App& app, int* exit_code) {
  auto* store = AddCommandGroup(app, "store", "the results store's own upkeep");
  struct ReplayArgs {
    std::string file, db;
  };
  auto args = std::make_shared<ReplayArgs>();
  auto* replay = store->add_subcommand("replay", HelpText(R"(
write the rows a run spooled while the results store did not take writes (a database
restarting, a full file system) into the store, in order, and remove the spool file.
A run that ended before the store was back exits 3 naming its spool
(STATE_DIR/spool/RUN.spool, STATE_DIR being $FAULTLINE_STATE_DIR or /run/faultline).
Rows a replay has written are marked in the file, so a replay cut short can be run
again without writing them twice.
Exit codes: 0 every row is in the store, 2 not a spool file (or a damaged one),
3 the store is still out)"));
  replay->add_option("file", args->file, "the spool file")->required();
  replay->add_option("--db", args->db,
                     "the results database to write to (default: the one the spool names; a\n"
                     "PostgreSQL URI whose password the spool does not keep must be given)");
  replay->callback([args, exit_code] {
    QuietLogsUnlessAsked();
    auto fail = [&](const Status& s, int code) {
      std::fprintf(stderr, "faultline store replay: %s\n", s.ToUserString().c_str());
      *exit_code = code;
    };
    // Read first: a file that is no spool is bad input, whatever the store is doing.
    auto contents = reports::ReadSpool(args->file);
    if (!contents.ok()) return fail(contents.status(), 2);
    std::string db = args->db;
    if (db.empty()) {
      db = contents->header.store;
      if (db.find("***") != std::string::npos)
        return fail(InvalidArgumentError(args->file + " names the store " + db +
                                         " without its password: give it with --db"),
                    2);
    }
    auto done = reports::ReplaySpoolFile(args->file, db, [](uint64_t at, uint64_t total) {
      std::fprintf(stderr, "[%llu/%llu] rows\n", static_cast<unsigned long long>(at),
                   static_cast<unsigned long long>(total));
    });
    if (!done.ok()) return fail(Status(done.status()).Prepend(args->file), 3);
    std::printf("replayed %llu row(s) of run %s into %s (%llu already there)%s; %s removed\n",
                static_cast<unsigned long long>(done->written), done->header.run_id.c_str(),
                db.c_str(), static_cast<unsigned long long>(done->skipped),
                done->ended_run ? ", its final status with them" : "", args->file.c_str());
    if (done->torn_tail)
      std::fprintf(stderr,
                   "faultline store replay: the file's last record was cut short (a crash "
                   "while it was written) and is not in the store\n");
    *exit_code = 0;
  });
}

}  // namespace fl::harness
