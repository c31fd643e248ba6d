// The unit vocabulary (after htsim's config.h): one unit per quantity, the
// unit in the name. Bandwidth in bits per second, sizes in bytes, time in
// seconds (double) inside the simulators. Conversions happen at the edges,
// through these helpers only: "GB/s" vs "Gb/s" is an 8x bug.
#pragma once

namespace drainwise::units {

inline constexpr double kBitsPerByte = 8.0;

constexpr double BpsFromGbps(double gbps) { return gbps * 1e9; }
constexpr double GbpsFromBps(double bps) { return bps / 1e9; }
constexpr double BpsFromKbps(double kbps) { return kbps * 1e3; }
constexpr double BpsFromMbps(double mbps) { return mbps * 1e6; }
constexpr double BpsFromBytesPerSec(double bytes_per_s) { return bytes_per_s * kBitsPerByte; }
constexpr double BitsFromBytes(double bytes) { return bytes * kBitsPerByte; }
constexpr double SecondsFromMs(double ms) { return ms / 1e3; }
constexpr double SecondsFromUs(double us) { return us / 1e6; }
constexpr double SecondsFromNs(double ns) { return ns / 1e9; }
constexpr double MsFromSeconds(double s) { return s * 1e3; }

}  // namespace drainwise::units
