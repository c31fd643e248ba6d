#include "report/job_report.h"

#include <fmt/format.h>

#include "model/units.h"
#include "report/table.h"

namespace drainwise::report {

using nlohmann::json;

namespace {

json LinkJson(const model::Topology& t, model::LinkId id) {
  const model::Link& l = t.link(id);
  json o = {{"a", t.node(l.a).name}, {"b", t.node(l.b).name}};
  if (!l.a_port.empty()) o["a_port"] = l.a_port;
  return o;
}

json Names(const model::Topology& t, const std::vector<model::NodeId>& ids) {
  json a = json::array();
  for (model::NodeId n : ids) a.push_back(t.node(n).name);
  return a;
}

json DrainJson(const model::Topology& t, const model::Drain& drain) {
  json links = json::array();
  for (model::LinkId l : drain.links) links.push_back(LinkJson(t, l));
  return {{"switches", Names(t, drain.switches)}, {"links", std::move(links)}};
}

json Fraction(double v) { return v; }

std::string Frac(double v) { return fmt::format("{:.3f}", v); }
std::string Pct(double v) { return fmt::format("{:.0f}%", v * 100); }
std::string Paths(const std::optional<double>& v) {
  if (!v) return "-";
  return fmt::format("{:.0f}", *v);
}
std::string Gbps(double bps) { return fmt::format("{:.0f}G", units::GbpsFromBps(bps)); }

// "a, b, c +N more" for a table cell.
std::string Join(const std::vector<std::string>& items, size_t max_items = 3) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  if (items.size() > max_items) out += fmt::format(" +{} more", items.size() - max_items);
  return out.empty() ? "-" : out;
}

json JobJson(const sim::JobImpact& j, const model::Snapshot& s) {
  const model::Topology& t = *s.topology;
  const model::Job& job = s.jobs->job(j.job);
  json links = json::array();
  for (model::LinkId l : j.crossed_links) links.push_back(LinkJson(t, l));
  return {{"id", job.id},
          {"name", job.name},
          {"tenant", job.tenant},
          {"priority", job.priority},
          {"hosts", job.hosts.size()},
          {"gpus", j.gpus},
          {"affected", j.affected},
          {"connected", j.connected},
          {"path_fraction", Fraction(j.path_fraction)},
          {"min_paths_after", j.min_paths_after ? json(*j.min_paths_after) : json(nullptr)},
          {"bandwidth_fraction", Fraction(j.bandwidth_fraction)},
          {"crossing",
           {{"switches", Names(t, j.crossed_switches)}, {"links", std::move(links)}, {"share", j.crossing_share}}},
          {"host_pairs", j.host_pairs},
          {"host_pairs_crossing", j.host_pairs_crossing},
          {"host_pairs_cut", j.host_pairs_cut}};
}

json FabricJson(const sim::FabricImpact& f, const model::Topology& t) {
  json capacity = json::array();
  for (const sim::CapacityChange& c : f.capacity) {
    capacity.push_back({{"tier", c.tier},
                        {"pod", c.pod},
                        {"removed_bps", c.removed_bps},
                        {"total_bps", c.total_bps},
                        {"removed_fraction", c.total_bps > 0 ? c.removed_bps / c.total_bps : 0.0}});
  }
  json leaves = json::array();
  for (const sim::LeafUplinks& l : f.single_uplink_leaves) {
    leaves.push_back(
        {{"leaf", t.node(l.leaf).name}, {"uplinks_before", l.uplinks_before}, {"uplinks_after", l.uplinks_after}});
  }
  json domains = json::array();
  for (const sim::DomainTouch& d : f.domains) {
    domains.push_back({{"key", d.key}, {"value", d.value}, {"switches", Names(t, d.switches)}});
  }
  return {{"switches_drained", f.switches_drained},
          {"links_down", f.links_down},
          {"capacity", std::move(capacity)},
          {"single_uplink_leaves", std::move(leaves)},
          {"hosts_cut_off", Names(t, f.hosts_cut_off)},
          {"hosts_degraded", Names(t, f.hosts_degraded)},
          {"domains", std::move(domains)}};
}

}  // namespace

json JobAssessmentToJson(const sim::JobAssessment& a, const model::Snapshot& s, const model::Drain& drain,
                         const JobJsonOptions& options) {
  json jobs = json::array();
  for (model::JobId id : sim::RankJobs(a, *s.jobs)) {
    const sim::JobImpact& j = a.jobs[id.value];
    if (!j.affected && !options.include_unaffected) break;  // ranked: affected first
    jobs.push_back(JobJson(j, s));
  }
  return {{"drain", DrainJson(*s.topology, drain)},
          {"summary",
           {{"jobs", a.jobs.size()},
            {"jobs_affected", a.jobs_affected},
            {"jobs_disconnected", a.jobs_disconnected},
            {"gpus_affected", a.gpus_affected}}},
          {"jobs", std::move(jobs)},
          {"fabric", FabricJson(a.fabric, *s.topology)}};
}

std::string JobAssessmentTable(const sim::JobAssessment& a, const model::Snapshot& s, const model::Drain& drain,
                               int max_rows) {
  const model::Topology& t = *s.topology;
  std::vector<std::string> drained;
  for (model::NodeId n : drain.switches) drained.push_back(t.node(n).name);
  for (model::LinkId l : drain.links) drained.push_back(t.LinkName(l));
  std::string out = fmt::format("drain {}: {} switch(es), {} link(s) down\n", Join(drained, 6),
                                a.fabric.switches_drained, a.fabric.links_down);
  out += fmt::format("{} of {} jobs affected ({} GPUs), {} left disconnected\n\n", a.jobs_affected, a.jobs.size(),
                     a.gpus_affected, a.jobs_disconnected);

  if (a.jobs_affected > 0) {
    Table table(
        {"JOB", "TENANT", "PRIO", "GPUS", "CONNECTED", "PATHS", "MIN PATHS", "BANDWIDTH", "CROSSING", "CROSSED"});
    int rows = 0;
    for (model::JobId id : sim::RankJobs(a, *s.jobs)) {
      const sim::JobImpact& j = a.jobs[id.value];
      if (!j.affected) break;
      if (rows++ == max_rows) {
        out += fmt::format("(+{} more affected jobs: use --format json)\n", a.jobs_affected - max_rows);
        break;
      }
      const model::Job& job = s.jobs->job(id);
      std::vector<std::string> crossed;
      for (model::NodeId n : j.crossed_switches) crossed.push_back(t.node(n).name);
      for (model::LinkId l : j.crossed_links) crossed.push_back(t.LinkName(l));
      table.Add({job.id, job.tenant.empty() ? "-" : job.tenant, std::to_string(job.priority), std::to_string(j.gpus),
                 j.connected ? "yes" : "NO", Frac(j.path_fraction), Paths(j.min_paths_after),
                 Frac(j.bandwidth_fraction), Pct(j.crossing_share), Join(crossed)});
    }
    out = out + table.Render();
    out += "\n";
  }

  const sim::FabricImpact& f = a.fabric;
  if (!f.capacity.empty()) {
    Table cap({"TIER", "POD", "REMOVED", "OF", "SHARE"});
    for (const sim::CapacityChange& c : f.capacity) {
      cap.Add({c.tier, c.pod.empty() ? "-" : c.pod, Gbps(c.removed_bps), Gbps(c.total_bps),
               Pct(c.total_bps > 0 ? c.removed_bps / c.total_bps : 0)});
    }
    out += "capacity removed (per direction):\n" + cap.Render();
  }
  if (!f.single_uplink_leaves.empty()) {
    std::vector<std::string> leaves;
    for (const auto& l : f.single_uplink_leaves) {
      leaves.push_back(fmt::format("{} ({}/{})", t.node(l.leaf).name, l.uplinks_after, l.uplinks_before));
    }
    out += fmt::format("leaves left with <= 1 uplink: {}\n", Join(leaves, 8));
  }
  if (!f.hosts_cut_off.empty()) {
    std::vector<std::string> hosts;
    for (model::NodeId h : f.hosts_cut_off) hosts.push_back(t.node(h).name);
    out += fmt::format("hosts cut off: {}\n", Join(hosts, 8));
  }
  if (!f.hosts_degraded.empty()) out += fmt::format("hosts losing a NIC: {}\n", f.hosts_degraded.size());
  if (!f.domains.empty()) {
    std::vector<std::string> domains;
    for (const auto& d : f.domains) domains.push_back(fmt::format("{}={} ({})", d.key, d.value, d.switches.size()));
    out += fmt::format("failure domains touched: {}\n", Join(domains, 10));
  }
  return out;
}

json DrainCandidatesToJson(std::span<const sim::DrainCandidate> candidates, const model::Snapshot& s,
                           int max_jobs_per_candidate) {
  const model::Topology& t = *s.topology;
  json list = json::array();
  int rank = 0;
  for (const sim::DrainCandidate& c : candidates) {
    json jobs = json::array();
    for (model::JobId id : c.affected_jobs) {
      if (max_jobs_per_candidate > 0 && static_cast<int>(jobs.size()) == max_jobs_per_candidate) break;
      jobs.push_back(s.jobs->job(id).id);
    }
    const model::Node& n = t.node(c.sw);
    list.push_back({{"rank", ++rank},
                    {"switch", n.name},
                    {"tier", n.tier},
                    {"pod", n.pod},
                    {"jobs_affected", c.jobs_affected},
                    {"jobs_disconnected", c.jobs_disconnected},
                    {"gpus_affected", c.gpus_affected},
                    {"gpus_disconnected", c.gpus_disconnected},
                    {"worst_path_fraction", c.worst_path_fraction},
                    {"worst_bandwidth_fraction", c.worst_bandwidth_fraction},
                    {"min_paths_after", c.min_paths_after ? json(*c.min_paths_after) : json(nullptr)},
                    {"hosts_cut_off", c.hosts_cut_off},
                    {"affected_jobs", std::move(jobs)}});
  }
  return {{"candidates", std::move(list)}};
}

std::string DrainCandidatesTable(std::span<const sim::DrainCandidate> candidates, const model::Snapshot& s,
                                 int max_rows) {
  const model::Topology& t = *s.topology;
  Table table({"RANK", "SWITCH", "TIER", "POD", "JOBS", "GPUS", "DISCONNECTED GPUS", "WORST BW", "WORST PATHS",
               "MIN PATHS", "HOSTS CUT"});
  int rank = 0;
  for (const sim::DrainCandidate& c : candidates) {
    if (rank == max_rows) break;
    const model::Node& n = t.node(c.sw);
    table.Add({std::to_string(++rank), n.name, n.tier, n.pod.empty() ? "-" : n.pod, std::to_string(c.jobs_affected),
               std::to_string(c.gpus_affected), std::to_string(c.gpus_disconnected), Frac(c.worst_bandwidth_fraction),
               Frac(c.worst_path_fraction), Paths(c.min_paths_after), std::to_string(c.hosts_cut_off)});
  }
  std::string out = table.Render();
  if (static_cast<int>(candidates.size()) > max_rows) {
    out += fmt::format("(+{} more candidates)\n", candidates.size() - max_rows);
  }
  return out;
}

}  // namespace drainwise::report
