#include "reports/store/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/units.h"

namespace fl::reports {
namespace {

using nlohmann::json;

constexpr uint64_t kDefaultMax = 256ull * 1024 * 1024;

uint32_t Crc32(std::string_view s) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char ch : s) c = kTable[(c ^ ch) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string Line(const json& j) {
  return SpoolRecordLine(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

json Opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json Opt(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }
json Opt(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

json ToJson(const SampleRecord& s) {
  return {{"t", "s"},          {"run", s.run_id},     {"rank", s.rank},
          {"it", s.iteration}, {"start", s.start_ns}, {"end", s.end_ns},
          {"bytes", s.bytes},  {"v", s.verified},     {"m", s.mismatch}};
}
json ToJson(const EventRecord& e) {
  return {{"t", "e"},          {"run", e.run_id}, {"rank", e.rank},
          {"wall", e.wall_ns}, {"kind", e.kind},  {"detail", e.detail_json}};
}
json ToJson(const NicSampleRecord& n) {
  return {{"t", "n"},
          {"run", n.run_id},
          {"host", n.host},
          {"nic", n.nic},
          {"wall", n.wall_ns},
          {"c",
           {n.rx_bytes, n.tx_bytes, n.rx_packets, n.tx_packets, n.rx_dropped, n.tx_dropped,
            n.rx_errors, n.tx_errors}},
          {"rx_pause", Opt(n.rx_pause)},
          {"tx_pause", Opt(n.tx_pause)},
          {"extra", n.extra}};
}
json ToJson(const FaultRecord& f) {
  return {{"t", "f"},
          {"run", f.run_id},
          {"id", f.fault_id},
          {"kind", f.kind},
          {"target", f.target},
          {"params", f.params_json},
          {"scheduled", Opt(f.scheduled_wall_ns)},
          {"requested", Opt(f.requested_wall_ns)},
          {"effective", Opt(f.effective_wall_ns)},
          {"reverted", Opt(f.reverted_wall_ns)},
          {"verified", Opt(f.revert_verified)},
          {"anchor", f.anchor}};
}
json ToJson(const RunEndRecord& r) {
  return {{"t", "end"},
          {"run", r.run_id},
          {"status", std::string(RunStatusName(r.status))},
          {"end", r.end_wall_ns},
          {"message", r.message}};
}

// A missing or mistyped field: thrown by the typed reads, caught per line.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
T Get(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw BadField(std::string("no \"") + key + "\"");
  const json& v = *it;
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>)
    ok = v.is_boolean();
  else if constexpr (std::is_unsigned_v<T>)
    ok = v.is_number_unsigned();
  else if constexpr (std::is_integral_v<T>)
    ok = v.is_number_integer() &&
         (v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX) : true);
  else
    ok = v.is_string();
  if (!ok) throw BadField(std::string("\"") + key + "\" has the wrong type");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (std::is_unsigned_v<T>) {
      const auto n = v.get<uint64_t>();
      if (n > std::numeric_limits<T>::max())
        throw BadField(std::string("\"") + key + "\" is out of range");
    } else {
      const auto n = v.get<int64_t>();
      if (n < std::numeric_limits<T>::min() || n > std::numeric_limits<T>::max())
        throw BadField(std::string("\"") + key + "\" is out of range");
    }
  }
  return v.get<T>();
}
template <typename T>
std::optional<T> GetOpt(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it != j.end() && it->is_null()) return std::nullopt;
  return Get<T>(j, key);
}

StatusOr<SpoolRow> RowOf(const json& j, const std::string& t) {
  if (t == "s") {
    SampleRecord s;
    s.run_id = Get<std::string>(j, "run");
    s.rank = Get<int32_t>(j, "rank");
    s.iteration = Get<int64_t>(j, "it");
    s.start_ns = Get<int64_t>(j, "start");
    s.end_ns = Get<int64_t>(j, "end");
    s.bytes = Get<uint64_t>(j, "bytes");
    s.verified = Get<bool>(j, "v");
    s.mismatch = Get<bool>(j, "m");
    return SpoolRow(std::move(s));
  }
  if (t == "e") {
    EventRecord e;
    e.run_id = Get<std::string>(j, "run");
    e.rank = Get<int32_t>(j, "rank");
    e.wall_ns = Get<int64_t>(j, "wall");
    e.kind = Get<std::string>(j, "kind");
    e.detail_json = Get<std::string>(j, "detail");
    return SpoolRow(std::move(e));
  }
  if (t == "n") {
    NicSampleRecord n;
    n.run_id = Get<std::string>(j, "run");
    n.host = Get<std::string>(j, "host");
    n.nic = Get<std::string>(j, "nic");
    n.wall_ns = Get<int64_t>(j, "wall");
    if (!j.contains("c") || !j.contains("extra")) return DataLossError("no counters");
    const json& c = j["c"];
    if (!c.is_array() || c.size() != 8) return DataLossError("\"c\" is not 8 counters");
    uint64_t* fields[] = {&n.rx_bytes,   &n.tx_bytes,   &n.rx_packets, &n.tx_packets,
                          &n.rx_dropped, &n.tx_dropped, &n.rx_errors,  &n.tx_errors};
    for (size_t i = 0; i < 8; ++i) {
      if (!c[i].is_number_unsigned()) return DataLossError("\"c\" holds a non-counter");
      *fields[i] = c[i].get<uint64_t>();
    }
    n.rx_pause = GetOpt<uint64_t>(j, "rx_pause");
    n.tx_pause = GetOpt<uint64_t>(j, "tx_pause");
    const json& extra = j["extra"];
    if (!extra.is_object()) return DataLossError("\"extra\" is not an object");
    for (const auto& [k, v] : extra.items()) {
      if (!v.is_number_unsigned()) return DataLossError("\"extra\" holds a non-counter");
      n.extra[k] = v.get<uint64_t>();
    }
    return SpoolRow(std::move(n));
  }
  if (t == "f") {
    FaultRecord f;
    f.run_id = Get<std::string>(j, "run");
    f.fault_id = Get<std::string>(j, "id");
    f.kind = Get<std::string>(j, "kind");
    f.target = Get<std::string>(j, "target");
    f.params_json = Get<std::string>(j, "params");
    f.scheduled_wall_ns = GetOpt<int64_t>(j, "scheduled");
    f.requested_wall_ns = GetOpt<int64_t>(j, "requested");
    f.effective_wall_ns = GetOpt<int64_t>(j, "effective");
    f.reverted_wall_ns = GetOpt<int64_t>(j, "reverted");
    f.revert_verified = GetOpt<bool>(j, "verified");
    f.anchor = Get<std::string>(j, "anchor");
    return SpoolRow(std::move(f));
  }
  if (t == "end") {
    RunEndRecord r;
    r.run_id = Get<std::string>(j, "run");
    FL_ASSIGN_OR_RETURN(r.status, ParseRunStatus(Get<std::string>(j, "status")));
    r.end_wall_ns = Get<int64_t>(j, "end");
    r.message = Get<std::string>(j, "message");
    return SpoolRow(std::move(r));
  }
  return DataLossError("unknown record type \"" + t + "\"");
}

// One line's JSON object, its checksum checked. An error names what is wrong, not the line.
StatusOr<json> ParseLine(std::string_view line) {
  if (line.size() < 10 || line[8] != ' ') return DataLossError("not a spool record");
  const std::string_view crc = line.substr(0, 8), body = line.substr(9);
  char* end = nullptr;
  const std::string crc_text(crc);
  const unsigned long want = std::strtoul(crc_text.c_str(), &end, 16);
  if (end != crc_text.c_str() + 8 ||
      crc_text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return DataLossError("not a spool record");
  if (want != Crc32(body)) return DataLossError("checksum mismatch");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("t") || !j["t"].is_string())
    return DataLossError("not a JSON record with a type");
  return j;
}

}  // namespace

uint64_t DefaultSpoolMaxBytes() {
  if (const char* v = std::getenv("FAULTLINE_SPOOL_MAX"); v != nullptr && *v != '\0') {
    auto n = ParseBytes(v);
    if (n.ok() && *n > 0) return std::min<uint64_t>(*n, InputCap(InputKind::kSpool));
  }
  return kDefaultMax;
}

std::string SpoolRecordLine(std::string_view body) {
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x ", Crc32(body));
  std::string line = crc;
  line.append(body);
  line += '\n';
  return line;
}

std::string SpoolLine(const SpoolRow& row) {
  return std::visit([](const auto& r) { return Line(ToJson(r)); }, row);
}

std::string SpoolHeaderLine(const SpoolHeader& header) {
  json j = {{"t", "spool"},
            {"version", header.version},
            {"store", header.store},
            {"run", header.run_id},
            {"created", header.created_wall_ns}};
  if (header.version >= 2) j["writer"] = header.writer;
  return Line(j);
}

StatusOr<std::unique_ptr<SpoolWriter>> SpoolWriter::Create(const std::string& path,
                                                           const SpoolHeader& header,
                                                           uint64_t max_bytes) {
  if (const size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    FL_RETURN_IF_ERROR(MakeDirs(path.substr(0, slash), 0700));
  }
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return UnavailableError("cannot create the spool " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<SpoolWriter> w(new SpoolWriter(path, std::move(fd), max_bytes));
  FL_RETURN_IF_ERROR(w->Write(SpoolHeaderLine(header)));
  return w;
}

Status SpoolWriter::Write(const std::string& text) {
  if (bytes_ + text.size() > max_bytes_) {
    return UnavailableError("the spool " + path_ + " would pass its bound of " +
                            FormatBytes(max_bytes_) + " (FAULTLINE_SPOOL_MAX)");
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd_.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // What was written of this append is cut away: a record is in the file whole or not.
      if (ftruncate(fd_.get(), static_cast<off_t>(bytes_)) != 0) {
        // The line stays torn at the end, which a reader ignores.
      }
      return UnavailableError("writing the spool " + path_ + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd_.get()) != 0) {
    return UnavailableError("syncing the spool " + path_ + ": " + std::strerror(errno));
  }
  bytes_ += text.size();
  return OkStatus();
}

Status SpoolWriter::Append(std::span<const SpoolRow> rows, uint64_t batch) {
  std::string text;
  if (batch > 0) text = Line({{"t", "batch"}, {"seq", batch}});
  for (const SpoolRow& r : rows) text += SpoolLine(r);
  FL_RETURN_IF_ERROR(Write(text));
  rows_ += rows.size();
  return OkStatus();
}

Status SpoolWriter::Mark(uint64_t rows) { return Write(Line({{"t", "mark"}, {"rows", rows}})); }

Status AppendSpoolMark(const std::string& path, uint64_t rows) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0)
    return UnavailableError("cannot open the spool " + path + ": " + std::strerror(errno));
  const std::string line = Line({{"t", "mark"}, {"rows", rows}});
  if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      fdatasync(fd.get()) != 0)
    return UnavailableError("cannot mark the spool " + path + ": " + std::strerror(errno));
  return OkStatus();
}

StatusOr<SpoolContents> ParseSpool(std::string_view text) {
  SpoolContents out;
  size_t pos = 0;
  uint64_t line_no = 0;
  bool have_header = false;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    const bool last = nl == std::string_view::npos || nl + 1 == text.size();
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    auto where = [&](const Status& s) {
      return DataLossError("line " + std::to_string(line_no) + ": " + s.message());
    };
    StatusOr<json> j = ParseLine(line);
    if (!j.ok()) {
      // A crash can cut the last append short: that line is not there, nothing else is lost.
      if (have_header && last) {
        out.torn_tail = true;
        break;
      }
      return where(j.status());
    }
    try {
      const std::string t = (*j)["t"].get<std::string>();
      if (!have_header) {
        if (t != "spool") return where(DataLossError("the first record is not a spool header"));
        out.header.version = Get<int>(*j, "version");
        if (out.header.version != 1 && out.header.version != 2)
          return where(DataLossError("spool version " + std::to_string(out.header.version) +
                                     " (this build reads versions 1 and 2)"));
        out.header.store = Get<std::string>(*j, "store");
        out.header.run_id = Get<std::string>(*j, "run");
        out.header.created_wall_ns = Get<int64_t>(*j, "created");
        if (out.header.version >= 2) out.header.writer = Get<std::string>(*j, "writer");
        have_header = true;
        continue;
      }
      if (t == "mark") {
        const auto n = Get<uint64_t>(*j, "rows");
        if (n < out.replayed || n > out.rows.size())
          return where(DataLossError("a mark of " + std::to_string(n) + " rows after " +
                                     std::to_string(out.rows.size()) + " rows (last mark " +
                                     std::to_string(out.replayed) + ")"));
        out.replayed = n;
        continue;
      }
      if (t == "batch") {
        const auto seq = Get<uint64_t>(*j, "seq");
        if (out.header.version < 2 || seq == 0 ||
            (!out.batches.empty() && seq <= out.batches.back().seq))
          return where(DataLossError("batch " + std::to_string(seq) + " out of order"));
        out.batches.push_back({out.rows.size(), seq});
        continue;
      }
      StatusOr<SpoolRow> row = RowOf(*j, t);
      if (!row.ok()) return where(row.status());
      out.rows.push_back(std::move(*row));
    } catch (const BadField& e) {
      return where(DataLossError(e.what()));
    } catch (const json::exception& e) {
      return where(DataLossError(e.what()));
    }
  }
  if (!have_header) return DataLossError("an empty spool: no header");
  return out;
}

StatusOr<SpoolContents> ReadSpool(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kSpool));
  StatusOr<SpoolContents> c = ParseSpool(text);
  if (!c.ok()) return Status(c.status()).Prepend(path);
  return c;
}

std::vector<ReplayStep> PlanReplay(const SpoolContents& c, uint64_t from, uint64_t stored_seq,
                                   size_t max_rows) {
  max_rows = std::max<size_t>(max_rows, 1);
  // The file as runs of rows, each one batch (or, before the first, unnumbered), from `from` on.
  std::vector<ReplayStep> runs;
  const uint64_t n = c.rows.size();
  const uint64_t numbered = c.batches.empty() ? n : c.batches.front().first_row;
  for (uint64_t at = from; at < std::min(numbered, n); at += max_rows)
    runs.push_back({at, std::min<uint64_t>({at + max_rows, numbered, n}), 0, 0, false});
  for (size_t i = 0; i < c.batches.size(); ++i) {
    const uint64_t end = i + 1 < c.batches.size() ? c.batches[i + 1].first_row : n;
    const uint64_t begin = std::max(c.batches[i].first_row, from);
    if (begin >= end) continue;
    const uint64_t seq = c.batches[i].seq;
    runs.push_back({begin, end, seq, seq, seq <= stored_seq});
  }
  // Merge neighbours of the same kind: numbered batches within max_rows, stored ones freely.
  std::vector<ReplayStep> steps;
  for (const ReplayStep& r : runs) {
    if (!steps.empty()) {
      ReplayStep& last = steps.back();
      const bool both_stored = last.in_store && r.in_store;
      const bool both_new = !last.in_store && !r.in_store && last.last_seq > 0 && r.first_seq > 0 &&
                            r.end - last.begin <= max_rows;
      if (last.end == r.begin && (both_stored || both_new)) {
        last.end = r.end;
        last.last_seq = r.last_seq;
        continue;
      }
    }
    steps.push_back(r);
  }
  return steps;
}

}  // namespace fl::reports
