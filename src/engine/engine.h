// The engine: typed requests in, typed results out, computed on one View.
// No JSON and no HTTP here (engine/codec.h translates at the server's edge);
// no state of its own beyond a logger: the policy, calibration, link state
// and caches all come with the view.
//
// Thread safety: every method may be called from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "advisor/advisor.h"
#include "advisor/calibration.h"
#include "engine/view.h"
#include "model/drain.h"
#include "model/error.h"
#include "sim/job_sim.h"

namespace drainwise::engine {

// Per call: the time the answer is for and the request's cancellation.
struct Call {
  int64_t now = 0;  // unix seconds
  std::stop_token stop;
};

// POST /v1/assessments: a drain (or any_of), resolved on the view's topology.
using AssessRequest = advisor::Request;

// A degraded link direction the drain loads further.
struct DegradedLinkLoad {
  model::LinkId link;
  uint32_t direction = 0;  // 0: a -> b, 1: b -> a
  std::vector<std::string> reasons;
  double before_bps = 0;
  double after_bps = 0;
};

struct AssessOutcome {
  advisor::Assessment assessment;
  bool flow = false;                       // the flow-level pass ran
  bool background_from_telemetry = false;  // it subtracted the link state's measured load
  std::vector<DegradedLinkLoad> degraded_loaded;
  double total_ms = 0;
};

// GET /v1/drain-candidates: explicit switches, or every switch of a tier.
struct CandidatesRequest {
  std::string tier;                     // "" when switches are named
  std::vector<model::NodeId> switches;  // resolved, non-empty
};

struct CandidatesOutcome {
  std::vector<sim::DrainCandidate> candidates;  // safest first
  std::string tier;
  double total_ms = 0;
};

// POST /v1/plans: the switches that must all be drained.
struct PlanRequest {
  std::vector<model::NodeId> switches;
  bool flow = false;
};

struct PlanOutcome {
  advisor::Plan plan;
  double total_ms = 0;
};

// An observation as stored: the job by id, the drains in effect by their
// canonical JSON (empty = none). Ones whose job or drain elements the view's
// snapshot lacks are skipped and counted.
struct StoredObservation {
  std::string job_id;
  std::string drain_key;
  double iteration_s = 0;
};

struct FitOutcome {
  advisor::FitResult fit;
  advisor::CalibrationParams before;    // the parameters in force
  advisor::CalibrationParams defaults;  // the configuration's: the centre of the fit's penalty
  advisor::CalibrationPrior prior;      // the penalty's widths and noise
  Calibration fitted;                   // the view's calibration with the fit applied
  int skipped = 0;
  double total_ms = 0;
};

struct CampaignOutcome;  // engine/campaign.h

class Engine {
 public:
  virtual ~Engine() = default;

  // POST /v1/campaigns: a timed maintenance schedule (advisor/campaign.h) on
  // the view's advisor and policy. Not pure: the one implementation is in
  // engine/campaign.cpp, so test fakes need not provide it. Errors:
  // kInvalidArgument, kCancelled.
  virtual Result<CampaignOutcome> Campaign(const View& view, const advisor::CampaignRequest& request,
                                           const Call& call);

  // Errors: kInvalidArgument naming the field; kCancelled when call.stop fires.
  // REQUIRES (all): view.snapshot != nullptr.
  virtual Result<AssessOutcome> Assess(const View& view, const AssessRequest& request, const Call& call) = 0;
  virtual Result<CandidatesOutcome> DrainCandidates(const View& view, const CandidatesRequest& request,
                                                    const Call& call) = 0;
  virtual Result<PlanOutcome> Plan(const View& view, const PlanRequest& request, const Call& call) = 0;
  // The model's iteration time of `job` with `drain` applied (0 when the
  // drain cuts the job off). Errors: kCancelled.
  virtual Result<double> PredictIteration(const View& view, model::JobId job, const model::Drain& drain,
                                          const Call& call) = 0;
  // Fits the transport parameters to `observations` (bounded least squares
  // of relative errors, regularised towards the configuration's parameters;
  // identifiability and leave-one-out errors in the outcome).
  // Errors: kInvalidArgument (too few usable observations), kCancelled.
  virtual Result<FitOutcome> Calibrate(const View& view, const std::vector<StoredObservation>& observations,
                                       const Call& call) = 0;
};

// The engine of the advisor (simulators + policies); one log line per answer.
std::unique_ptr<Engine> MakeEngine(std::shared_ptr<spdlog::logger> log);

}  // namespace drainwise::engine
