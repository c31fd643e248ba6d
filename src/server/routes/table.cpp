// The route table: every route of the API, declared once. Auth (role),
// admission (where it runs), the metrics label and 404/405 all come from
// these rows; tests/server/openapi_test.cpp holds docs/openapi.yaml to them.
#include "server/api.h"

namespace drainwise::server {

const std::vector<Route>& Api::Routes() {
  constexpr auto kOpen = std::nullopt;
  constexpr auto kReader = Role::kReader;
  constexpr auto kOperator = Role::kOperator;
  constexpr auto kAdmin = Role::kAdmin;
  constexpr auto kInline = Admission::kInline;
  constexpr auto kRead = Admission::kRead;
  constexpr auto kSimulation = Admission::kSimulation;
  // Only probes and the console's static files answer on the I/O thread;
  // anything touching the store or rendering a document (12 MB of topology
  // at 32k GPUs) waits its turn on the read queue, and simulations on theirs.
  static const std::vector<server::Route> routes = {
      // operations
      {"GET", "/healthz", kOpen, kInline, &Api::Health, "Liveness"},
      {"GET", "/readyz", kOpen, kInline, &Api::Ready,
       "Readiness: a snapshot is loaded, the store can write, and no source is stale"},
      {"GET", "/metrics", kReader, kInline, &Api::GetMetrics, "Prometheus metrics"},
      // The console's static files hold no data; the page sends the token with its API calls.
      {"GET", "/", kOpen, kInline, &Api::GetConsole, "The operator console (a web page over this API)"},
      {"GET", "/ui/{file}", kOpen, kInline, &Api::GetConsole, "The operator console's scripts and styles"},
      {"GET", "/v1/openapi.json", kReader, kRead, &Api::GetOpenApi,
       "The OpenAPI 3.1 description of this API (docs/openapi.yaml)"},
      {"GET", "/v1/sources", kReader, kRead, &Api::GetSources, "Connectors and their freshness"},
      {"GET", "/v1/links", kReader, kRead, &Api::GetLinks, "Links with telemetry (degraded=true for the unhealthy)"},
      // documents
      {"GET", "/v1/topology", kReader, kRead, &Api::GetTopology, "The current topology document"},
      {"GET", "/v1/topology/drift", kReader, kRead, &Api::GetTopologyDrift,
       "What the topology sources disagree on (intent vs observation), with the source of each claim"},
      {"PUT", "/v1/topology", kAdmin, kRead, &Api::PutTopology, "Replace the topology (a new version)"},
      {"GET", "/v1/jobs", kReader, kRead, &Api::GetJobs, "The current jobs document"},
      {"PUT", "/v1/jobs", kAdmin, kRead, &Api::PutJobs, "Replace the jobs (a new version)"},
      // link health: before /v1/jobs/{id}, which would match /v1/jobs/at-risk too
      {"GET", "/v1/links/health", kReader, kRead, &Api::GetLinksHealth,
       "Links ranked by the risk of their health trends, with the evidence (format=text; link= for its history)"},
      {"GET", "/v1/jobs/at-risk", kReader, kSimulation, &Api::GetJobsAtRisk,
       "Jobs whose paths cross degrading links, worst first, with the what-if of draining each link or its switch"},
      {"GET", "/v1/jobs/{id}/network", kReader, kSimulation, &Api::GetJobNetwork,
       "Network or GPU? How much of a job's observed slowdown the degraded fabric explains, and along which links"},
      {"GET", "/v1/jobs/{id}", kReader, kRead, &Api::GetJob, "One job"},
      {"GET", "/v1/jobs/{id}/paths", kReader, kRead, &Api::GetJobPaths,
       "The links a job's traffic crosses, with load and health"},
      {"GET", "/v1/snapshots", kReader, kRead, &Api::GetSnapshots, "Stored versions and the snapshot in use"},
      {"GET", "/v1/policy", kReader, kRead, &Api::GetPolicy, "The gating policy in force"},
      {"PUT", "/v1/policy", kAdmin, kRead, &Api::PutPolicy, "Replace the gating policy"},
      // assessments and plans
      {"POST", "/v1/assessments", kOperator, kSimulation, &Api::PostAssessment, "Assess a proposed drain"},
      {"GET", "/v1/assessments", kReader, kRead, &Api::ListAssessments, "Stored assessments (filter: ticket)"},
      {"GET", "/v1/assessments/{id}", kReader, kRead, &Api::GetAssessment, "One stored assessment"},
      {"GET", "/v1/drain-candidates", kReader, kSimulation, &Api::DrainCandidates,
       "Every single-switch drain of a tier, safest first"},
      {"POST", "/v1/plans", kOperator, kSimulation, &Api::PostPlan, "Order a maintenance list into safe batches"},
      // drains
      {"GET", "/v1/drains", kReader, kRead, &Api::ListDrains, "Drains in progress (all=true for history)"},
      {"POST", "/v1/drains", kOperator, kRead, &Api::PostDrain, "Record a drain as started"},
      {"DELETE", "/v1/drains/{id}", kOperator, kRead, &Api::DeleteDrain, "End a drain"},
      // calibration
      {"POST", "/v1/observations", kOperator, kSimulation, &Api::PostObservations,
       "Observed iteration times, stored with the model's prediction"},
      {"GET", "/v1/observations", kReader, kRead, &Api::ListObservations, "Stored observations (filter: job)"},
      {"GET", "/v1/calibration", kReader, kRead, &Api::GetCalibration,
       "The calibration in force and the prediction error against observations"},
      // Admin like PUT: with apply=true the fit replaces the calibration in force.
      {"POST", "/v1/calibration", kAdmin, kSimulation, &Api::PostCalibration,
       "Fit the transport parameters to the observations (apply=true to use them)"},
      {"PUT", "/v1/calibration", kAdmin, kRead, &Api::PutCalibration,
       "Replace the calibration (drainwise.calibration/v1)"},
      // background simulations: the route only starts, reads or cancels a run, which runs on a
      // thread of its own (src/server/background.h), so these wait on the read queue; the POST
      // waits on the simulation queue: a packet run's blast radius (job and flow level) is
      // settled before it answers, to refuse one above the cap (routes/packet_run.h)
      {"POST", "/v1/simulations", kOperator, kSimulation, &Api::PostSimulationRun,
       "Start a long simulation in the background (mode task or packet); 202 with its Location"},
      {"GET", "/v1/simulations", kReader, kRead, &Api::ListSimulationRuns, "Background simulations remembered"},
      {"GET", "/v1/simulations/{id}", kReader, kRead, &Api::GetSimulationRun,
       "A background simulation: state, progress and, once done, its result (format=json|text|csv)"},
      {"DELETE", "/v1/simulations/{id}", kOperator, kRead, &Api::DeleteSimulationRun,
       "Cancel a running background simulation, or forget a finished one"},
      // Campaigns: timed maintenance schedules (src/server/routes/campaigns.cpp).
      {"POST", "/v1/campaigns", kOperator, kSimulation, &Api::PostCampaign,
       "Schedule a maintenance campaign: timed batches, actions and GPU-hour costs"},
      {"GET", "/v1/campaigns/{id}", kReader, kRead, &Api::GetCampaign, "One stored campaign"},
  };
  return routes;
}

}  // namespace drainwise::server
