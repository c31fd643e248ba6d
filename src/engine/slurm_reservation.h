// A Slurm maintenance reservation for one campaign batch: the hosts to keep
// jobs off during its window, as the `scontrol create reservation` command
// and as the slurmrestd body of POST /slurm/v0.0.43/reservation (schema
// v0.0.43_reservation_desc_msg; docs/campaigns.md says where it was checked).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace drainwise::engine {

struct SlurmReservation {
  std::string name;  // ReservationName: [A-Za-z0-9._-] only
  int64_t start_unix_s = 0;
  int64_t duration_s = 0;          // rounded up to whole minutes (Slurm's unit)
  std::vector<std::string> hosts;  // Slurm node names = drainwise host names
  std::string users = "root";      // a reservation must name users or accounts
  std::string comment;
};

int64_t ReservationMinutes(const SlurmReservation& r);
// "scontrol create reservation ReservationName=… StartTime=YYYY-MM-DDTHH:MM:SS
// Duration=<minutes> Nodes=a,b Users=root Flags=MAINT,IGNORE_JOBS" (StartTime in
// UTC: slurmctld reads it in its own time zone, so run it with TZ=UTC).
std::string ScontrolCreateReservation(const SlurmReservation& r);
// {"name", "start_time": {"set": true, "number": unix s}, "duration": {"set":
// true, "number": minutes}, "node_list": [...], "users": [...], "flags":
// ["MAINT", "IGNORE_JOBS"], "comment"}.
nlohmann::json SlurmrestdReservation(const SlurmReservation& r);

}  // namespace drainwise::engine
