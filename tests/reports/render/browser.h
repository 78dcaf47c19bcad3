// Headless Chromium for the page tests (browser_test.cc: the HTML report from file://;
// serve_test.cc: `faultline serve`'s pages over HTTP): finding the browser, running it on a
// page with --dump-dom or --screenshot, and reading back what the page's own script wrote
// (#fl-render-status), PNG sizes and console errors; `faultline serve` as a process.
//
// Chromium is a Debian package that scripts/setup.sh installs; FL_CHROMIUM names another.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {

inline std::string FindChromium() {
  if (const char* env = std::getenv("FL_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      std::string p = dir + "/" + name;
      if (access(p.c_str(), X_OK) == 0) return p;
    }
  return "";
}

class Browser {
 public:
  explicit Browser(std::string binary) : binary_(std::move(binary)) {}

  // Runs the browser headless on a file (file://) or a URL with extra arguments; its output
  // goes to log.
  testing::ProcessResult Run(const std::string& html, const std::vector<std::string>& extra,
                             const std::string& log) {
    std::vector<std::string> argv = {binary_,
                                     "--headless",
                                     "--no-sandbox",  // needed as root (CI); harmless otherwise
                                     "--disable-gpu",
                                     "--disable-dev-shm-usage",
                                     "--no-first-run",
                                     "--no-default-browser-check",
                                     "--disable-extensions",
                                     "--hide-scrollbars",
                                     "--force-device-scale-factor=1",
                                     "--enable-logging=stderr",
                                     "--v=0",
                                     "--user-data-dir=" + profile_.File("profile"),
                                     "--virtual-time-budget=10000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(html.find("://") == std::string::npos ? "file://" + html : html);
    return testing::RunProcess(argv, log, std::chrono::seconds(90));
  }

 private:
  std::string binary_;
  testing::TempDir profile_;  // a throwaway --user-data-dir, removed with the test
};

// The attributes of <div id="fl-render-status" ...> in a DOM dump.
inline std::map<std::string, std::string> RenderStatus(const std::string& dom) {
  std::map<std::string, std::string> attrs;
  size_t p = dom.find("id=\"fl-render-status\"");
  if (p == std::string::npos) return attrs;
  size_t b = dom.rfind('<', p), e = dom.find('>', p);
  std::string tag = dom.substr(b, e - b);
  std::regex re("([a-z-]+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(tag.begin(), tag.end(), re), end; it != end; ++it)
    attrs[(*it)[1]] = (*it)[2];
  // The element's text: the script errors, if any.
  size_t close = dom.find("</div>", e);
  attrs["text"] = dom.substr(e + 1, close - e - 1);
  return attrs;
}

inline std::vector<long> Numbers(const std::string& list) {
  std::vector<long> out;
  std::regex re("-?[0-9]+");
  for (std::sregex_iterator it(list.begin(), list.end(), re), end; it != end; ++it)
    out.push_back(std::stol(it->str()));
  return out;
}

// Width and height from a PNG's IHDR chunk; {0, 0} when it is not a PNG.
inline std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](size_t o) {
    return (uint32_t(uint8_t(png[o])) << 24) | (uint32_t(uint8_t(png[o + 1])) << 16) |
           (uint32_t(uint8_t(png[o + 2])) << 8) | uint32_t(uint8_t(png[o + 3]));
  };
  return {be32(16), be32(20)};
}

// Console errors the browser logged (uncaught exceptions, console.error), from its stderr.
inline std::vector<std::string> ConsoleErrors(const std::string& log) {
  std::vector<std::string> out;
  std::stringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("CONSOLE") != std::string::npos &&
        (line.find("Uncaught") != std::string::npos || line.find(":ERROR:") != std::string::npos))
      out.push_back(line);
  return out;
}

inline std::string ChromiumOrFail() {
  std::string binary = FindChromium();
  if (binary.empty())
    FAIL(
        "chromium not found: scripts/setup.sh installs it (Debian package 'chromium'); "
        "FL_CHROMIUM=/path/to/browser names another");
  return binary;
}

// One HTTP/1.1 request to 127.0.0.1:port; the whole reply ("" when it cannot connect).
inline std::string HttpGet(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[65536];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// `faultline serve` as a process, on the port it chose; stopped with SIGINT (it must exit 0).
struct ServeProcess {
  int pid = -1;
  int port = 0;
  std::string log;
  ServeProcess(const std::string& db, const std::string& dir,
               const std::vector<std::string>& extra = {})
      : log(dir + "/serve.log") {
    ProcessSpec spec;
    spec.argv = {FL_FAULTLINE_BIN, "serve", "--db", db, "--listen", "127.0.0.1:0"};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.out.kind = Stdio::kNull;
    spec.err = {Stdio::kFile, log};
    auto p = Spawn(spec);
    REQUIRE(p.ok());
    pid = p->pid();
    const std::regex re("https?://127\\.0\\.0\\.1:([0-9]+)/");
    REQUIRE(WaitUntil(
        [&] {
          std::smatch m;
          const std::string text = testing::ReadAll(log);
          if (!std::regex_search(text, m, re)) return false;
          port = std::stoi(m[1]);
          return true;
        },
        Deadline::After(30 * kNsPerSec), 50 * kNsPerMs));
  }
  int StopAndWait() {
    kill(pid, SIGINT);
    auto st = WaitExit(pid, Deadline::After(10 * kNsPerSec));
    pid = -1;
    return st.ok() ? st->Code() : -1;
  }
  ~ServeProcess() {
    if (pid > 0) Stop(pid, kNsPerSec);
  }
};

}  // namespace fl::reports::render
