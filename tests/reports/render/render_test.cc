// Unit tests of reports/render: escaping, throughput binning (the charts' downsampling), and
// the HTML, Markdown and text views of a synthetic run read back from a real SQLite file.
#include <catch2/catch.hpp>

#include <numeric>
#include <regex>

#include "reports/render/escape.h"
#include "reports/render/html.h"
#include "reports/render/markdown.h"
#include "reports/render/run_view.h"
#include "reports/render/throughput.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

using testing::MakeSyntheticRun;
using testing::SyntheticRunSpec;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

// The run as the report command sees it: written into SQLite and loaded back.
RunData ThroughStore(const RunData& run, const std::string& db) {
  REQUIRE(testing::WriteRun(db, run).ok());
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  auto loaded = (*store)->LoadRun(run.run.id);
  REQUIRE(loaded.ok());
  return *loaded;
}

TEST_CASE("HtmlEscape escapes markup and keeps UTF-8", "[unit]") {
  CHECK(HtmlEscape("<b a=\"1\" c='2'>&amp;</b>") ==
        "&lt;b a=&quot;1&quot; c=&#39;2&#39;&gt;&amp;amp;&lt;/b&gt;");
  CHECK(HtmlEscape("µs → ok") == "µs → ok");
  CHECK(HtmlEscape(std::string("a\xff"
                               "b",
                               3)) ==
        "a\xEF\xBF\xBD"
        "b");                                                                   // invalid byte
  CHECK(HtmlEscape(std::string("\xC0\xAF", 2)) == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  CHECK(HtmlEscape(std::string("x\0y", 3)) == "x\xEF\xBF\xBDy");
}

TEST_CASE("XmlEscape leaves no character XML 1.0 forbids", "[unit]") {
  CHECK(XmlEscape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;");
  CHECK(XmlEscape("l1\nl2\tx") == "l1&#10;l2&#9;x");
  CHECK(XmlEscape("\x01\x1b[31m") == "\xEF\xBF\xBD\xEF\xBF\xBD[31m");
  CHECK(XmlEscape("\xEF\xBF\xBF") == "\xEF\xBF\xBD");  // U+FFFF
}

TEST_CASE("JsonString cannot end a script element", "[unit]") {
  CHECK(JsonString("</script><!--") == "\"\\u003c/script\\u003e\\u003c!--\"");
  CHECK(JsonString("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"");
  CHECK(JsonString("\x01") == "\"\\u0001\"");
  CHECK(JsonString("\xE2\x80\xA8") == "\"\\u2028\"");
}

TEST_CASE("MarkdownEscape keeps a message inside its table cell", "[unit]") {
  CHECK(MarkdownEscape("a | b\nc") == "a \\| b c");
  CHECK(MarkdownEscape("[x](http://e) **b** <img> </a>") ==
        "\\[x\\](http://e) \\*\\*b\\*\\* &lt;img> &lt;/a>");
  CHECK(MarkdownEscape("40 ms <= 100 ms & more; &amp;") == "40 ms <= 100 ms & more; &amp;amp;");
}

TEST_CASE("BinThroughput keeps the bytes and shows a stall as zero", "[unit]") {
  // One rank: 1000 bytes over [0, 1 s), nothing over [1, 2 s), 1000 bytes over [2, 4 s).
  std::vector<SampleRecord> s(2);
  s[0].start_ns = 0, s[0].end_ns = kNsPerSec, s[0].bytes = 1000;
  s[1].start_ns = 2 * kNsPerSec, s[1].end_ns = 4 * kNsPerSec, s[1].bytes = 1000;
  ThroughputSeries t = BinThroughput(s, 0, 4 * kNsPerSec, 8);
  REQUIRE(t.bins == 8);
  REQUIRE(t.ranks == std::vector<int32_t>{0});
  const auto& v = t.values[0];
  CHECK(*v[0] == Approx(1000));  // bytes per second
  CHECK(*v[1] == Approx(1000));
  CHECK(*v[2] == Approx(0));  // the stall
  CHECK(*v[3] == Approx(0));
  CHECK(*v[4] == Approx(500));
  CHECK(*v[7] == Approx(500));
  CHECK(t.BinCenterSeconds(0) == Approx(0.25));
}

TEST_CASE("BinThroughput downsamples a long run to at most max_bins points", "[unit]") {
  SyntheticRunSpec spec;
  spec.ranks = 3;
  spec.duration_s = 120;
  spec.iterations_per_s = 200;
  RunData run = MakeSyntheticRun(spec);
  const Nanos t0 = run.run.start_wall_ns, t1 = *run.run.end_wall_ns;
  ThroughputSeries t = BinThroughput(run.samples, t0, t1, 1000);
  CHECK(run.samples.size() > 50'000);
  CHECK(t.bins <= 1000);
  CHECK(t.bins >= 990);
  REQUIRE(t.values.size() == 3);
  // Area under each rank's curve = the bytes that rank moved.
  double bytes_rank0 = 0;
  for (const auto& x : run.samples)
    if (x.rank == 0) bytes_rank0 += static_cast<double>(x.bytes);
  double area = 0;
  for (const auto& v : t.values[0]) area += v.value_or(0) * static_cast<double>(t.bin_ns) / 1e9;
  CHECK(area == Approx(bytes_rank0).epsilon(1e-9));
  // Before the first sample (at 0.2 s; bins of 120 ms) there is no value.
  CHECK_FALSE(t.values[0][0].has_value());
}

TEST_CASE("BinThroughput ends a rank's line at its last sample", "[unit]") {
  std::vector<SampleRecord> s(2);
  s[0].rank = 0, s[0].start_ns = 0, s[0].end_ns = 10 * kNsPerSec, s[0].bytes = 10;
  s[1].rank = 1, s[1].start_ns = 0, s[1].end_ns = 2 * kNsPerSec, s[1].bytes = 10;
  ThroughputSeries t = BinThroughput(s, 0, 10 * kNsPerSec, 10);
  REQUIRE(t.values.size() == 2);
  CHECK(t.values[1][1].has_value());
  CHECK_FALSE(t.values[1][2].has_value());
  CHECK(t.values[0][9].has_value());
}

TEST_CASE("ExplainVerdict says expected and measured", "[unit]") {
  VerdictRecord v;
  v.expectation = "max_detection_ms";
  v.observed = 160;
  v.limit = 100;
  VerdictText t = ExplainVerdict(v);
  CHECK(t.expected == "detection latency <= 100 ms");
  CHECK(t.measured == "160 ms");
  v.observed.reset();
  v.message = "no fault_detected event after the injection";
  CHECK(ExplainVerdict(v).measured == "not measured: no fault_detected event after the injection");
  v.expectation = "min_degraded_ratio";
  v.observed = 0.5;
  v.limit = 0.3;
  CHECK(ExplainVerdict(v).expected == "degraded ratio >= 0.300");
  CHECK(ExplainVerdict(v).measured == "0.500");
}

TEST_CASE("HTML report of a stored run escapes every text from the database", "[unit]") {
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.hostile = true;
  RunData run = ThroughStore(MakeSyntheticRun(spec), dir.File("r.db"));
  REQUIRE(run.faults.size() == 2);
  std::string html = RenderHtml(run);
  // Exactly our four script elements: the error capture, the data, uPlot, the report script.
  CHECK(Count(html, "<script") == 4);
  CHECK(Count(html, "</script>") == 4);
  CHECK(html.find("<div id=\"pwned\"") == std::string::npos);
  CHECK(html.find("<img src=x") == std::string::npos);
  CHECK(html.find("&lt;div id=&quot;pwned&quot;&gt;") != std::string::npos);
  // Every fault and host is there; the verdicts table has one row per verdict.
  CHECK(Count(html, "class=\"fault-row\"") == run.faults.size());
  CHECK(Count(html, "<th class=\"host\">") == run.hosts.size());  // one column per host
  CHECK(Count(html, "<td class=\"badge fail\">FAIL</td>") == 1);  // f1 detected late
  // The last host runs another firmware: highlighted.
  CHECK(html.find("<tr class=\"differs\"><td class=\"mark\">≠</td><th>nics[0].firmware</th>") !=
        std::string::npos);
  CHECK(html.find("<tr><td></td><th>kernel</th>") != std::string::npos);  // the same everywhere
  CHECK(html.find("1 differing row(s)") != std::string::npos);
  // Self-contained: nothing loaded from elsewhere.
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("uPlot") != std::string::npos);
}

// The JSON the page's script draws from.
std::string ChartJson(const std::string& html) {
  std::string data = html.substr(html.find("id=\"fl-data\">") + 13);
  return data.substr(0, data.find("</script>"));
}

TEST_CASE("HTML header has the duration and the replay command, the data the timeline and levels",
          "[unit]") {
  SyntheticRunSpec spec;
  spec.duration_s = 60;  // faults at 15 s and 45 s, 8 s each
  RunData run = MakeSyntheticRun(spec);
  HtmlOptions options;
  options.db_path = "/var/lib/fl/results db.sqlite";
  std::string html = RenderHtml(run, options);
  CHECK(html.find("<span id=\"run-duration\">took 60.000 s</span>") != std::string::npos);
  CHECK(html.find("<code id=\"replay-command\">faultline replay 20261130-040000-synth --db "
                  "&#39;/var/lib/fl/results db.sqlite&#39;</code>") != std::string::npos);
  run.run.end_wall_ns.reset();
  CHECK(RenderHtml(run).find("no end recorded") != std::string::npos);
  run = MakeSyntheticRun(spec);

  std::string data = ChartJson(RenderHtml(run));
  // f0: detected 40 ms after it took effect, reverted 8 s after; f1's max_detection_ms limit
  // (100 ms) failed (160 ms).
  CHECK(data.find("{\"id\":\"f0\",\"label\":\"f0 nic_flap h0/nic0\",\"t\":15.000,\"marks\":[[\""
                  "detected\",40]") != std::string::npos);
  CHECK(data.find("[\"reverted\",8000]") != std::string::npos);
  CHECK(data.find("{\"name\":\"detection\",\"ms\":100,\"passed\":false}") != std::string::npos);
  CHECK(data.find("{\"name\":\"recovery\",\"ms\":2000,\"passed\":true}") != std::string::npos);
  CHECK(data.find("\"first progress\"") != std::string::npos);
  CHECK(data.find("\"failed back\"") != std::string::npos);
  // The job line, the baseline level and each fault's degraded level.
  CHECK(data.find("\"job\":[") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(data, m, std::regex("\"baseline\":([0-9.]+)")));
  const double baseline = std::stod(m[1]);
  CHECK(baseline == Approx(64.0 * (1 << 20) * 20 / 1e9).epsilon(0.02));  // GB/s
  REQUIRE(std::regex_search(data, m, std::regex("\"degraded\":([0-9.]+)")));
  CHECK(std::stod(m[1]) == Approx(baseline * spec.degraded).epsilon(0.05));
  // NIC series, one per host and NIC.
  CHECK(data.find("\"labels\":[\"h0.nic0\",\"h0.nic1\",\"h1.nic0\"") != std::string::npos);
  CHECK(html.find("id=\"chart-nics\"") != std::string::npos);
  run.nics.clear();
  CHECK(RenderHtml(run).find("No NIC counters stored for this run.") != std::string::npos);
}

NicSampleRecord Nic(std::string host, std::string nic, double t_s, uint64_t rx, uint64_t tx) {
  NicSampleRecord s;
  s.host = std::move(host);
  s.nic = std::move(nic);
  s.wall_ns = testing::Sec(t_s);
  s.rx_bytes = rx;
  s.tx_bytes = tx;
  return s;
}

TEST_CASE("BinJobThroughput: the algbw of the job's iterations, first start to last end",
          "[unit]") {
  auto sample = [](int32_t rank, int64_t it, double s, double e, uint64_t bytes) {
    SampleRecord r;
    r.rank = rank;
    r.iteration = it;
    r.start_ns = testing::Sec(s);
    r.end_ns = testing::Sec(e);
    r.bytes = bytes;
    return r;
  };
  // Iteration 0 spans [0, 1] over both ranks (1000 B/s although each rank took 0.5 s);
  // iteration 1 spans [1, 3] (500 B/s); iteration 2 only rank 0 reported: left out.
  std::vector<SampleRecord> s = {sample(0, 0, 0, 0.5, 1000), sample(1, 0, 0.5, 1, 1000),
                                 sample(0, 1, 1, 3, 1000), sample(1, 1, 1, 2.5, 1000),
                                 sample(0, 2, 3, 4, 1000)};
  ThroughputSeries bins = BinThroughput(s, 0, testing::Sec(4), 8, 1);  // 0.5 s bins
  REQUIRE(bins.bins == 8);
  auto job = BinJobThroughput(s, bins);
  REQUIRE(job.size() == 8);
  CHECK(*job[0] == Approx(1000));
  CHECK(*job[1] == Approx(1000));
  for (size_t k = 2; k < 6; ++k) CHECK(*job[k] == Approx(500));
  CHECK_FALSE(job[6].has_value());
  CHECK_FALSE(job[7].has_value());
  // In a synthetic run the line before the first fault is at the baseline_algbw metric.
  RunData run = MakeSyntheticRun(SyntheticRunSpec{});
  RunView view(run);
  ThroughputSeries tp = BinThroughput(run.samples, view.t0(), view.t1(), 600, testing::Sec(0.2));
  auto line = BinJobThroughput(run.samples, tp);
  REQUIRE(view.RunMetric("baseline_algbw"));
  size_t checked = 0;
  for (size_t k = 0; k < tp.bins; ++k) {
    double t = tp.BinCenterSeconds(k);
    if (t < 1 || t > 14 || !line[k]) continue;
    CHECK(*line[k] == Approx(*view.RunMetric("baseline_algbw")).epsilon(0.01));
    ++checked;
  }
  CHECK(checked > 50);
}

TEST_CASE("BinNicTraffic: rates from cumulative counters, gaps and resets", "[unit]") {
  // h1.nic0: 1000 B/s rx + 1000 B/s tx for 2 s, then a counter reset (skipped), then 500 B/s.
  // h0.nic1: sampled from 1 s on, 300 B/s.
  std::vector<NicSampleRecord> s = {
      Nic("h1", "nic0", 0, 0, 0),       Nic("h1", "nic0", 1, 1000, 1000),
      Nic("h1", "nic0", 2, 2000, 2000), Nic("h1", "nic0", 3, 10, 10),
      Nic("h1", "nic0", 4, 260, 260),   Nic("h0", "nic1", 1.5, 100, 0),
      Nic("h0", "nic1", 2.5, 400, 0),   Nic("h0", "nic1", 3.5, 700, 0),
  };
  NicTrafficSeries t = BinNicTraffic(s, 0, testing::Sec(4), 4);
  CHECK(t.bin_ns == testing::Sec(1));
  REQUIRE(t.bins == 4);
  REQUIRE(t.labels == std::vector<std::string>{"h0.nic1", "h1.nic0"});
  const auto& h0 = t.values[0];
  const auto& h1 = t.values[1];
  CHECK_FALSE(h0[0].has_value());  // not sampled yet
  CHECK(*h0[1] == Approx(300));    // half covered: the rate, not half of it
  CHECK(*h0[2] == Approx(300));
  CHECK(*h0[3] == Approx(300));
  CHECK(*h1[0] == Approx(2000));
  CHECK(*h1[1] == Approx(2000));
  CHECK_FALSE(h1[2].has_value());  // the reset: no rate
  CHECK(*h1[3] == Approx(500));
  CHECK(t.BinCenterSeconds(1) == Approx(1.5));
  // Many samples: at most max_bins bins, but never narrower than the sampling interval.
  std::vector<NicSampleRecord> many;
  for (int i = 0; i <= 1000; ++i) many.push_back(Nic("h0", "nic0", i * 0.1, i * 100, 0));
  NicTrafficSeries m = BinNicTraffic(many, 0, testing::Sec(100), 200);
  CHECK(m.bins == 200);
  for (const auto& v : m.values[0]) CHECK(v.value_or(0) == Approx(1000));
  NicTrafficSeries fine = BinNicTraffic(many, 0, testing::Sec(100), 100'000);
  CHECK(static_cast<double>(fine.bin_ns) == Approx(1e8).margin(2));  // the median interval
  CHECK(BinNicTraffic({}, 0, testing::Sec(1), 10).labels.empty());
}

TEST_CASE("HTML chart data stays small for a long run", "[unit]") {
  SyntheticRunSpec spec;
  spec.duration_s = 300;
  spec.iterations_per_s = 100;
  RunData run = MakeSyntheticRun(spec);
  // A begin/end pair per collective per rank: listed, not drawn.
  for (const auto& s : run.samples) {
    EventRecord e;
    e.rank = s.rank;
    e.wall_ns = s.start_ns;
    e.kind = "collective_begin";
    run.events.push_back(e);
  }
  HtmlOptions options;
  options.max_points = 300;
  std::string html = RenderHtml(run, options);
  std::smatch m;
  std::string data = html.substr(html.find("id=\"fl-data\">"));
  data = data.substr(0, data.find("</script>"));
  REQUIRE(std::regex_search(data, m, std::regex("\"x\":\\[([^\\]]*)\\]")));
  std::string xs = m[1];
  CHECK(static_cast<size_t>(std::count(xs.begin(), xs.end(), ',')) + 1 <= 300);
  CHECK(data.find("collective_begin") == std::string::npos);
  CHECK(data.find("\"fault_detected\"") != std::string::npos);
  CHECK(html.find("<tr><td>collective_begin</td><td>" + std::to_string(run.samples.size()) +
                  "</td>") != std::string::npos);
  // 240,000 samples, yet the page is a few hundred KiB (uPlot itself is ~50 KiB).
  CHECK(run.samples.size() > 200'000);
  CHECK(html.size() < 400 * 1024);
}

TEST_CASE("Markdown summary has the status and the verdict and per-fault tables", "[unit]") {
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.hostile = true;
  RunData run = ThroughStore(MakeSyntheticRun(spec), dir.File("r.db"));
  std::string md = RenderMarkdown(run);
  CHECK(md.rfind("### ❌ faultline: ", 0) == 0);
  CHECK(md.find("**Verdicts: " + std::to_string(run.verdicts.size() - 1) + " passed, 1 failed**") !=
        std::string::npos);
  CHECK(Count(md, "| ✅ |") + Count(md, "| ❌ |") == run.verdicts.size());
  CHECK(md.find("| ❌ | max\\_detection\\_ms | f1 tor\\_port\\_down h1/nic0 ") != std::string::npos);
  CHECK(md.find("detection latency <= 100 ms | 160 ms |") != std::string::npos);
  // Per-fault table: one row per fault, the detection column filled.
  CHECK(md.find("| f0 | nic\\_flap | h0/nic0 ") != std::string::npos);
  CHECK(md.find("| 40.0 ms |") != std::string::npos);
  // No markup from the database gets through: no raw tags, no unescaped table pipes.
  CHECK(md.find("<div") == std::string::npos);
  CHECK(md.find("<img") == std::string::npos);
  CHECK(md.find("[link](") == std::string::npos);
  for (size_t start = 0, end; (end = md.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = md.substr(start, end - start);
    if (line.rfind("| ✅", 0) != 0 && line.rfind("| ❌", 0) != 0) continue;
    size_t pipes = 0;
    for (size_t i = 0; i < line.size(); ++i)
      pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    CHECK(pipes == 6);  // 5 columns
  }
}

TEST_CASE("Text summary lists verdicts and faults", "[unit]") {
  SyntheticRunSpec spec;
  RunData run = MakeSyntheticRun(spec);
  std::string text = RenderTextSummary(run);
  CHECK(text.find("run 20261130-040000-synth  nic_flap_synthetic  failed") == 0);
  CHECK(text.find("verdicts: " + std::to_string(run.verdicts.size() - 1) + " passed, 1 failed") !=
        std::string::npos);
  CHECK(Count(text, "  FAIL  ") == 1);
  CHECK(text.find("f0 nic_flap h0/nic0: detection 40.0 ms") != std::string::npos);
}

TEST_CASE("FormatMetric: milliseconds under one print in microseconds", "[unit]") {
  CHECK(FormatMetric(0.04, "ms") == "40 us");
  CHECK(FormatMetric(0.5704, "ms") == "570 us");
  CHECK(FormatMetric(0, "ms") == "0.0 ms");
  CHECK(FormatMetric(1.25, "ms") == "1.2 ms");
  CHECK(FormatMetric(320.4, "ms") == "320 ms");
}

}  // namespace
}  // namespace fl::reports::render
