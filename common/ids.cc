#include "common/ids.h"

#include <sys/random.h>

#include <cstdio>
#include <ctime>
#include <vector>

namespace fl {

std::string RandomHex(size_t n_bytes) {
  std::vector<unsigned char> buf(n_bytes);
  size_t got = 0;
  while (got < n_bytes) {
    ssize_t r = getrandom(buf.data() + got, n_bytes - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n_bytes);
  for (unsigned char c : buf) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string NewRunId(Nanos wall_ns) {
  time_t secs = static_cast<time_t>(wall_ns / kNsPerSec);
  tm t;
  gmtime_r(&secs, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "r%04d%02d%02d-%02d%02d%02d-", t.tm_year + 1900, t.tm_mon + 1,
                t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
  return buf + RandomHex(3);
}

std::vector<std::string_view> TargetParts(std::string_view target) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= target.size(); ++i) {
    if (i == target.size() || target[i] == '.' || target[i] == '/' || target[i] == ':') {
      if (i > start) out.push_back(target.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace fl
