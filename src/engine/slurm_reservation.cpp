#include "engine/slurm_reservation.h"

#include <fmt/format.h>

#include "codec/json_reader.h"

namespace drainwise::engine {

int64_t ReservationMinutes(const SlurmReservation& r) { return std::max<int64_t>(1, (r.duration_s + 59) / 60); }

namespace {
// FormatRfc3339 without the zone designator: Slurm's YYYY-MM-DDTHH:MM:SS.
std::string SlurmTime(int64_t unix_s) {
  std::string t = codec::FormatRfc3339(unix_s);
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  return t;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}
}  // namespace

std::string ScontrolCreateReservation(const SlurmReservation& r) {
  // MAINT: a maintenance reservation (node state shows it, accounting charges
  // nobody); IGNORE_JOBS: jobs already running there (ones the schedule waits
  // for or moves first) do not block creating it.
  return fmt::format(
      "scontrol create reservation ReservationName={} StartTime={} Duration={} Nodes={} Users={} "
      "Flags=MAINT,IGNORE_JOBS",
      r.name, SlurmTime(r.start_unix_s), ReservationMinutes(r), Join(r.hosts), r.users);
}

nlohmann::json SlurmrestdReservation(const SlurmReservation& r) {
  nlohmann::json out = {{"name", r.name},
                        {"start_time", {{"set", true}, {"number", r.start_unix_s}}},
                        {"duration", {{"set", true}, {"number", ReservationMinutes(r)}}},
                        {"node_list", r.hosts},
                        {"users", {r.users}},
                        {"flags", {"MAINT", "IGNORE_JOBS"}}};
  if (!r.comment.empty()) out["comment"] = r.comment;
  return out;
}

}  // namespace drainwise::engine
