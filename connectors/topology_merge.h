// Several topology sources, one fabric: intent (NetBox, topology.conf) merged
// with observation (LLDP), every node and link with its provenance, and the
// differences between them reported as drift.
//
// What each source is authoritative for:
//   intent       devices, tiers, pods, failure domains, speeds and the
//                cabling as planned (netbox, slurm-topology);
//   observation  which cables are really up and where they land (lldp),
//                for the systems it observed (an LLDP report's local system);
//   all          both (native documents, graph formats).
// Merging: devices match by normalised name (aliases, then DNS domain
// stripped, then case-insensitive); a node's attributes come from intent when
// any intent source knows it. A cable matches by its two devices and, when
// both sources name them, their ports. An intended cable that touches an
// observed system and is not seen is left out (it is down or miscabled); a
// cable seen but not intended is kept (it is there). Both are drift, as are
// speed mismatches between sources that both state a speed and devices that
// only one side knows.
//
// Pure: no I/O. Thread-safe (no shared state).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/topology.h"

namespace drainwise::connectors {

enum class TopologyAuthority { kIntent, kObservation, kAll };
std::string_view TopologyAuthorityName(TopologyAuthority a);
// "intent" | "observation" | "all". Errors name the value.
Result<TopologyAuthority> ParseTopologyAuthority(std::string_view name);

struct TopologyContribution {
  std::string source;  // the source's name, for provenance
  TopologyAuthority authority = TopologyAuthority::kAll;
  model::TopologySpec spec;
  // Observation: the systems whose own ports were observed (LLDP report
  // owners). An intended cable touching one of them must be seen to count.
  std::set<std::string> observed_systems;
  // Whether the links' speeds were measured or declared (NetBox, native) rather
  // than a connector default (LLDP's default_gbps): only stated speeds are
  // compared for drift.
  bool speeds_stated = true;
};

struct NameOptions {
  std::map<std::string, std::string> aliases;  // any spelling -> the topology's name (case-insensitive)
  bool strip_domain = false;                   // "leaf01.dc1.example.com" -> "leaf01"; IPs kept
};
// The normalised form of a device name under `options` (aliases first).
std::string NormaliseDeviceName(std::string_view name, const NameOptions& options);

struct DriftItem {
  // cable_not_seen | cable_not_intended | speed_mismatch | device_only_in
  std::string kind;
  std::string a, a_port, b, b_port;  // the cable, or `a` alone for a device
  std::string detail;                // plain language, with the numbers
  std::vector<std::string> sources;  // who made the claim(s)
};

struct MergedTopology {
  model::TopologySpec spec;
  std::map<std::string, std::vector<std::string>> node_sources;  // node id -> sources that named it
  std::vector<std::vector<std::string>> link_sources;            // parallel to spec.links
  std::vector<DriftItem> drift;
  // Switch -> drift items touching it, for assessments that drain or cross it.
  std::map<std::string, std::vector<size_t>> drift_by_device;
};

// GET /v1/topology/drift: {"items": [{"kind","a","a_port","b","b_port",
// "detail","sources"}], "counts": {kind: n}, "sources": {node: [source]}
// for the devices with drift, "provenance": {"nodes": {node: [source]},
// "links": [{"a","a_port","b","b_port","sources"}]} for the whole merged
// topology}. Text: one row per item, control characters escaped.
nlohmann::json DriftToJson(const MergedTopology& merged);
std::string DriftToText(const MergedTopology& merged);
// Drift by device for policies::Impact::drift: one sentence per item.
std::map<std::string, std::vector<std::string>> DriftByDevice(const MergedTopology& merged);

// Merges the contributions in order (earlier sources win ties between
// sources of the same authority). Errors: nothing to merge.
Result<MergedTopology> MergeTopologies(const std::vector<TopologyContribution>& contributions,
                                       const NameOptions& names = {});

}  // namespace drainwise::connectors
