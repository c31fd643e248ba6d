// Helpers shared by the flow-level tests: tiny fabrics and job documents.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model/jobs.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "testing/fabrics.h"

namespace drainwise::flowtest {

using nlohmann::json;

// Up to `max_jobs` jobs on consecutive runs of `hosts` (2 to `max_hosts`
// each): an all-to-all or an all-reduce of 10-200 MB, and half the time a
// second all-reduce of another size (staggered completions). Draws from
// `rng` in a fixed order, so a seed gives the same jobs.
inline model::JobsSpec RandomCollectiveJobs(const model::Topology& t, const std::vector<model::NodeId>& hosts,
                                            std::mt19937_64& rng, int max_jobs, int max_hosts) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  model::JobsSpec jobs;
  size_t cursor = 0;
  for (int j = 0; j < max_jobs && cursor + 2 <= hosts.size(); ++j) {
    model::JobSpec job;
    job.id = "j" + std::to_string(j);
    const size_t n = std::min<size_t>(hosts.size() - cursor, static_cast<size_t>(pick(2, max_hosts)));
    for (size_t k = 0; k < n; ++k) job.hosts.push_back(t.node(hosts[cursor + k]).name);
    cursor += n;
    model::CollectiveSpec c;
    c.kind = pick(0, 1) ? model::CollectiveKind::kAllToAll : model::CollectiveKind::kAllReduce;
    c.bytes = 1e6 * pick(10, 200);
    job.iteration.collectives.push_back(c);
    if (pick(0, 1)) {
      model::CollectiveSpec ar;
      ar.kind = model::CollectiveKind::kAllReduce;
      ar.bytes = 1e6 * pick(10, 200);
      job.iteration.collectives.push_back(ar);
    }
    jobs.jobs.push_back(job);
  }
  return jobs;
}

// Jobs({job}) with one job: clang passes the job object itself (a copy),
// GCC a one-element array; both mean a list of one job.
inline json Jobs(json jobs) {
  if (jobs.is_object()) jobs = json::array({std::move(jobs)});
  return {{"format", "drainwise.jobs/v1"}, {"jobs", std::move(jobs)}};
}

// A job of explicit flows: {{src, dst, bytes}, ...}.
inline json FlowsJob(const std::string& id, const std::vector<std::tuple<std::string, std::string, double>>& flows,
                     double compute_ms = 0, double overlap = 0) {
  json hosts = json::array();
  json fl = json::array();
  auto add_host = [&](const std::string& h) {
    for (const auto& x : hosts) {
      if (x == h) return;
    }
    hosts.push_back(h);
  };
  for (const auto& [s, d, b] : flows) {
    add_host(s);
    add_host(d);
    fl.push_back({{"src", s}, {"dst", d}, {"bytes", b}});
  }
  return {{"id", id},
          {"hosts", hosts},
          {"gpus_per_host", 1},
          {"iteration",
           {{"compute_ms", compute_ms},
            {"overlap", overlap},
            {"collectives", json::array({{{"kind", "flows"}, {"flows", fl}}})}}}};
}

// A topology document from (id, tier) switches, (id, gpus) hosts and links.
struct TopoBuilder {
  json nodes = json::array();
  json links = json::array();
  TopoBuilder& Switch(const std::string& id, const std::string& tier) {
    nodes.push_back({{"id", id}, {"kind", "switch"}, {"tier", tier}});
    return *this;
  }
  TopoBuilder& Host(const std::string& id, int gpus = 1) {
    nodes.push_back({{"id", id}, {"kind", "host"}, {"gpus", gpus}});
    return *this;
  }
  TopoBuilder& Link(const std::string& a, const std::string& b, double gbps, const std::string& a_port = "") {
    json l = {{"a", a}, {"b", b}, {"gbps", gbps}};
    if (!a_port.empty()) l["a_port"] = a_port;
    links.push_back(l);
    return *this;
  }
  json Build() const {
    return {{"format", "drainwise.topology/v1"}, {"name", "t"}, {"nodes", nodes}, {"links", links}};
  }
};

struct Run {
  model::SnapshotPtr snapshot;
  sim::FlowReport report;

  const sim::FlowJobResult& Job(const std::string& id) const {
    auto j = snapshot->jobs->FindJob(id);
    REQUIRE(j.has_value());
    return report.jobs[j->value];
  }
  std::string LinkName(uint32_t directed) const {
    const auto& t = *snapshot->topology;
    const auto& l = t.link(model::LinkId(directed / 2));
    const auto& a = t.node(directed % 2 == 0 ? l.a : l.b).name;
    const auto& b = t.node(directed % 2 == 0 ? l.b : l.a).name;
    return a + ">" + b;
  }
};

inline Run Simulate(const json& topology, const json& jobs, const json& drain, const sim::FlowOptions& options) {
  Run r;
  r.snapshot = testing::SnapshotFromJson(topology, jobs);
  model::Drain d = testing::DrainOf(*r.snapshot->topology, drain);
  auto rep = sim::SimulateFlows(*r.snapshot, d, options);
  REQUIRE_MESSAGE(rep.has_value(), (rep ? "" : rep.error().message));
  r.report = std::move(*rep);
  return r;
}

inline json NoDrain() { return json::object(); }

// testing::TwoByTwo with `gpus` GPUs per host, so that several one-GPU jobs
// can share a host.
inline json TwoByTwo(double uplink_gbps, double host_gbps, int gpus = 4) {
  json t = testing::TwoByTwo(uplink_gbps, host_gbps);
  for (auto& n : t["nodes"]) {
    if (n["kind"] == "host") n["gpus"] = gpus;
  }
  return t;
}

}  // namespace drainwise::flowtest
