// The process's peak resident memory, per phase of a benchmark: Linux keeps
// it as VmHWM in /proc/self/status, and writing 5 to /proc/self/clear_refs
// starts it again from the current resident size (Linux 4.0 and later).
// Elsewhere, or where /proc is not readable, both report failure and the
// benchmark leaves the counters out.
#pragma once

#include <fstream>
#include <optional>
#include <string>

namespace drainwise::bench {

// VmHWM in MB (1e6 bytes); nullopt when /proc/self/status does not say.
inline std::optional<double> PeakRssMB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      if (status >> kib) return kib * 1024 / 1e6;
      return std::nullopt;
    }
    status.ignore(1 << 16, '\n');
  }
  return std::nullopt;
}

// Starts the peak again from the current resident size; false when the
// kernel does not let this process.
inline bool ResetPeakRss() {
  std::ofstream refs("/proc/self/clear_refs");
  if (!refs) return false;
  refs << "5\n";
  refs.flush();
  return static_cast<bool>(refs);
}

}  // namespace drainwise::bench
