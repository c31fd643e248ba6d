// What the server needs from the simulators and the advisor, as a small
// interface: the server only translates HTTP <-> JSON and stores the results;
// main() wires in the implementation (advisor + sim), tests can use a fake.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/drain.h"
#include "model/error.h"
#include "model/snapshot.h"
#include "store/store.h"

namespace drainwise::server {

struct EngineContext {
  model::SnapshotPtr snapshot;
  model::Drain active;  // drains in progress, already applied to every assessment
  int active_drain_count = 0;
  int64_t now = 0;      // unix seconds
  std::stop_token stop;
};

struct EngineResult {
  nlohmann::json body;  // the result document returned to the client and stored
  std::string verdict;  // allow | warn | deny, or "" when the request asked for none
};

class Engine {
 public:
  virtual ~Engine() = default;

  // POST /v1/assessments: `request` is the client's JSON (drain, modes, ...).
  // Errors: kInvalidArgument naming the field; kCancelled when ctx.stop fires.
  virtual Result<EngineResult> Assess(const EngineContext& ctx, const nlohmann::json& request) = 0;
  // GET /v1/drain-candidates: tier or explicit switches, ranked safest first.
  virtual Result<nlohmann::json> DrainCandidates(const EngineContext& ctx, const std::string& tier,
                                                 const std::vector<std::string>& switches) = 0;
  // POST /v1/plans: an ordered, batched drain plan.
  virtual Result<EngineResult> Plan(const EngineContext& ctx, const nlohmann::json& request) = 0;
  // The policy in force, and replacing it (validated; the old one stays on error).
  virtual nlohmann::json PolicyJson() const = 0;
  virtual Status SetPolicy(const nlohmann::json& policy) = 0;
  // The model's iteration time of `job` with `drain` applied (for
  // observations). Errors: kNotFound (job), kCancelled.
  virtual Result<double> PredictIteration(const EngineContext& ctx, const std::string& job,
                                          const model::Drain& drain) = 0;
  // The calibration in force: parameters, where they came from, last fit.
  virtual nlohmann::json CalibrationJson() const = 0;
  // Fits the transport parameters to `observations` (bounded least squares);
  // with `apply`, they are used from now on. Returns the fit.
  virtual Result<nlohmann::json> Calibrate(const EngineContext& ctx,
                                           const std::vector<store::ObservationRecord>& observations,
                                           bool apply) = 0;
  // Replaces the calibration (drainwise.calibration/v1), validated.
  virtual Status SetCalibration(const nlohmann::json& calibration) = 0;
  // A terminal table for `kind` ("assessment", "plan", "candidates").
  virtual std::string RenderText(std::string_view kind, const nlohmann::json& body) const = 0;
};

}  // namespace drainwise::server
