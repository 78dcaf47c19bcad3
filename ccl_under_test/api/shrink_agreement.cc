#include "ccl_under_test/api/shrink_agreement.h"

#include <algorithm>
#include <charconv>

namespace fl::ccl {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::string Key(const ShrinkAgreementOptions& o, const std::string& tail) {
  return o.prefix + "/" + std::to_string(o.generation) + "/" + tail;
}

}  // namespace

std::string EncodeShrinkDecision(int leader, uint64_t resume, const std::vector<int>& survivors) {
  std::string s = std::to_string(leader) + ";" + std::to_string(resume) + ";";
  for (size_t i = 0; i < survivors.size(); ++i) s += (i ? "," : "") + std::to_string(survivors[i]);
  return s;
}

StatusOr<ShrinkDecision> DecodeShrinkDecision(const std::string& text, int rank, int world_size) {
  auto bad = [&](const std::string& why) {
    return DataLossError("shrink decision '" + text + "': " + why);
  };
  const size_t a = text.find(';');
  const size_t b = a == std::string::npos ? a : text.find(';', a + 1);
  if (b == std::string::npos) return bad("not leader;resume;ranks");
  ShrinkDecision d;
  const std::string_view view(text);
  if (!ParseNumber(view.substr(0, a), d.leader)) return bad("bad leader");
  if (!ParseNumber(view.substr(a + 1, b - a - 1), d.resume_iteration)) return bad("bad iteration");
  std::string_view rest = view.substr(b + 1);
  while (!rest.empty()) {
    const size_t c = rest.find(',');
    int r = 0;
    if (!ParseNumber(rest.substr(0, c), r) || r < 0 || r >= world_size) return bad("bad rank");
    if (!d.survivors.empty() && r <= d.survivors.back()) return bad("ranks not ascending");
    d.survivors.push_back(r);
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  if (d.survivors.empty()) return bad("no survivors");
  if (!std::binary_search(d.survivors.begin(), d.survivors.end(), d.leader))
    return bad("the leader is not a survivor");
  for (int r = 0; r < world_size; ++r)
    if (!std::binary_search(d.survivors.begin(), d.survivors.end(), r)) d.excluded.push_back(r);
  auto it = std::lower_bound(d.survivors.begin(), d.survivors.end(), rank);
  d.new_rank =
      it != d.survivors.end() && *it == rank ? static_cast<int>(it - d.survivors.begin()) : -1;
  d.new_size = static_cast<int>(d.survivors.size());
  return d;
}

StatusOr<ShrinkDecision> AgreeOnSurvivors(Store& store, const ShrinkAgreementOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size)
    return InvalidArgumentError("shrink agreement: rank " + std::to_string(o.rank) +
                                " of world size " + std::to_string(o.world_size));
  const Deadline grace = Deadline::After(o.grace);
  FL_RETURN_IF_ERROR(
      store.Set(Key(o, "alive/" + std::to_string(o.rank)), std::to_string(o.resume_iteration)));
  // 1. Whom this rank hears from within its grace (one absolute deadline for all keys: a key
  // set before it ends is seen, also when an earlier Get already waited it out).
  std::vector<int> heard;
  uint64_t resume = o.resume_iteration;
  for (int q = 0; q < o.world_size; ++q) {
    if (q == o.rank) {
      heard.push_back(q);
      continue;
    }
    auto v = store.Get(Key(o, "alive/" + std::to_string(q)), grace);
    if (!v.ok()) {
      if (v.status().code() == Code::kDeadlineExceeded) continue;
      return Status(v.status()).Prepend("shrink agreement");
    }
    uint64_t it = 0;
    if (!ParseNumber(std::string_view(*v), it))
      return DataLossError("shrink agreement: rank " + std::to_string(q) + " published '" + *v +
                           "'");
    heard.push_back(q);
    resume = std::min(resume, it);
  }
  // 2. A decision already made (this rank came late, or a lower rank led) is the answer.
  const std::string decision_key = Key(o, "decision");
  auto existing = store.Get(decision_key, Deadline::After(0));
  if (existing.ok()) return DecodeShrinkDecision(*existing, o.rank, o.world_size);
  if (existing.status().code() != Code::kDeadlineExceeded)
    return Status(existing.status()).Prepend("shrink agreement");
  if (heard.front() == o.rank) {
    const std::string text = EncodeShrinkDecision(o.rank, resume, heard);
    FL_RETURN_IF_ERROR(store.Set(decision_key, text));
    return DecodeShrinkDecision(text, o.rank, o.world_size);
  }
  auto decided = store.Get(decision_key, Deadline::After(o.decision_timeout));
  if (!decided.ok())
    return Status(decided.status())
        .Prepend("shrink agreement: no decision from rank " + std::to_string(heard.front()));
  return DecodeShrinkDecision(*decided, o.rank, o.world_size);
}

}  // namespace fl::ccl
