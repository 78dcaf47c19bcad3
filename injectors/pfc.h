// IEEE 802.1Qbb priority flow control (PFC) frames: building, parsing, and a generator that
// sends them at a fixed rate from an interface over AF_PACKET. On a real NIC this is a PFC
// storm; in the local lab it shows that the frames carry the configured fields.
//
// Frame: dst 01:80:C2:00:00:01, src = the interface's MAC, EtherType 0x8808 (MAC control),
// opcode 0x0101, class-enable vector (16 bits, low 8 used), eight 16-bit pause quanta (one
// quantum = 512 bit times), zero padding to 60 bytes (64 with the FCS the NIC appends).
//
// Thread-safety: PfcGenerator's methods may be called from any thread; it owns one sender
// thread and one socket.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace fl::injectors {

struct PfcFrame {
  std::array<uint8_t, 6> src{};
  uint16_t class_enable = 0;         // bit i: priority i paused
  std::array<uint16_t, 8> quanta{};  // per priority
};

inline constexpr size_t kPfcFrameLen = 60;
inline constexpr std::array<uint8_t, 6> kPfcDst = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

std::vector<uint8_t> BuildPfcFrame(const PfcFrame& f);
// NotFound when the bytes are not a PFC frame (other EtherType or opcode).
StatusOr<PfcFrame> ParsePfcFrame(const uint8_t* data, size_t len);

class PfcGenerator {
 public:
  // Starts sending from ifname in netns at frames_per_second. The MAC is read from the
  // interface.
  static StatusOr<std::unique_ptr<PfcGenerator>> Start(const std::string& netns,
                                                       const std::string& ifname, PfcFrame frame,
                                                       double frames_per_second);
  ~PfcGenerator();
  void Stop();
  uint64_t sent() const { return sent_.load(); }
  uint64_t errors() const { return errors_.load(); }

 private:
  PfcGenerator() = default;
  int fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> errors_{0};
};

// A capture socket on ifname in netns (ETH_P_ALL), for tests and the lab's checks: reads
// frames until deadline and returns the PFC frames among them.
class PfcCapture {
 public:
  static StatusOr<std::unique_ptr<PfcCapture>> Open(const std::string& netns,
                                                    const std::string& ifname);
  ~PfcCapture();
  // Collects PFC frames until at least min_frames were seen or timeout_ns passed.
  std::vector<PfcFrame> Collect(size_t min_frames, int64_t timeout_ns);

 private:
  PfcCapture() = default;
  int fd_ = -1;
};

}  // namespace fl::injectors
