// The console's state: one object shared by every view, changed only by the
// loaders and the user's actions.

export const S = {
  topo: null,          // indexed topology (indexTopology)
  jobs: [], jobById: new Map(),
  drains: [],          // active drains (GET /v1/drains)
  activeSwitches: new Set(), activeLinks: new Set(),
  selSwitches: [], selLinks: [],   // the what-if being built
  assessment: null,    // the last assessment shown
  zoomPod: null,       // the pod drawn in detail on a large fabric
  highlight: null,     // {id, switches, links, hosts, how}
  telemetry: new Map(),  // link key -> {util, degraded} from GET /v1/links
  pathsConfigured: true,
  health: new Map(),     // link key -> GET /v1/links/health item (info or worse)
  healthConfigured: false,
  planSwitches: [],
  shownCampaign: null,  // id of the campaign drawn (campaign.js)
};
