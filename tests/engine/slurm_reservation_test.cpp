// A campaign batch as a Slurm maintenance reservation: the scontrol text and
// the slurmrestd body (schema v0.0.43_reservation_desc_msg; see
// docs/campaigns.md for where the schema was checked).
#include <doctest/doctest.h>

#include "engine/slurm_reservation.h"

using namespace drainwise;

TEST_CASE("slurm reservation: scontrol text and slurmrestd body, duration rounded up to minutes") {
  engine::SlurmReservation r;
  r.name = "drainwise-c-1-b2";
  r.start_unix_s = 1796083200 + 300;  // 2026-12-01T00:05:00Z
  r.duration_s = 3601;                // 60 minutes and a second: 61 minutes
  r.hosts = {"h2", "h3"};
  r.comment = "drainwise campaign c-1 batch 2";
  CHECK(engine::ReservationMinutes(r) == 61);
  CHECK(engine::ScontrolCreateReservation(r) ==
        "scontrol create reservation ReservationName=drainwise-c-1-b2 StartTime=2026-12-01T00:05:00 Duration=61 "
        "Nodes=h2,h3 Users=root Flags=MAINT,IGNORE_JOBS");
  auto body = engine::SlurmrestdReservation(r);
  CHECK(body["name"] == "drainwise-c-1-b2");
  CHECK(body["start_time"] == nlohmann::json({{"set", true}, {"number", 1796083500}}));
  CHECK(body["duration"] == nlohmann::json({{"set", true}, {"number", 61}}));
  CHECK(body["node_list"] == nlohmann::json({"h2", "h3"}));
  CHECK(body["users"] == nlohmann::json({"root"}));
  CHECK(body["flags"] == nlohmann::json({"MAINT", "IGNORE_JOBS"}));
  CHECK(body["comment"] == "drainwise campaign c-1 batch 2");
  // Only fields of v0.0.43_reservation_desc_msg.
  for (auto it = body.begin(); it != body.end(); ++it) {
    CHECK(std::string("accounts burst_buffer comment core_count duration end_time features flags groups licenses "
                      "max_start_delay name node_count node_list partition purge_completed start_time tres users")
              .find(it.key()) != std::string::npos);
  }
  r.duration_s = 10;  // less than a minute is still one
  CHECK(engine::ReservationMinutes(r) == 1);
}
