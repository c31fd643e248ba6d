// NetBox DCIM: devices, interfaces and cables (REST pages) -> TopologySpec.
//
// Accepts NetBox 3.x and 4.x shapes: device role as `role` (3.6+) or
// `device_role` (<= 3.5), interface `speed` in kbit/s or null (then the
// `type.value`, e.g. "400gbase-x-osfp", gives the speed), cables with
// `a_terminations`/`b_terminations` (3.3+) or the older `termination_a`/
// `termination_b`, nested `cable` as an integer id (3.x) or an object (4.x).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/topology.h"

namespace drainwise::connectors {

struct NetboxOptions {
  std::string name = "netbox";  // TopologySpec.name
  // Role slug -> switch tier. Devices of any other role are hosts when cabled
  // to a leaf, otherwise ignored. Tiers other than leaf/spine/superspine need
  // an entry in `tier_levels`.
  std::map<std::string, std::string> role_tiers = {
      {"leaf", "leaf"}, {"tor", "leaf"}, {"spine", "spine"}, {"superspine", "superspine"}, {"core", "superspine"}};
  std::map<std::string, int> tier_levels;
  // When non-empty, only devices of these role slugs can be hosts.
  std::set<std::string> host_roles;
  // Devices whose status.value is listed here are ignored, with their cables.
  std::set<std::string> skip_device_statuses = {"offline", "planned", "inventory", "decommissioning"};
  // Cables whose status.value is listed here are ignored.
  std::set<std::string> skip_cable_statuses = {"planned", "decommissioning"};
  // Speed of a cable when neither interface has a speed or a known type; 0 =
  // such a cable is an error naming it.
  double default_gbps = 0;
  // GPUs of a host: custom field `gpus_custom_field` when set, else this.
  std::string gpus_custom_field = "gpus";
  int default_gpus = 8;
};

struct NetboxDevice {
  int64_t id = 0;
  std::string name;
  std::string role;    // slug
  std::string status;  // status.value, "" when absent
  std::string site;    // slug
  std::string rack;    // name
  std::optional<int> gpus;
};

struct NetboxInterface {
  int64_t id = 0;
  int64_t device_id = 0;
  std::string device;  // device name
  std::string name;
  std::optional<double> gbps;  // from speed, else type
  std::string type;            // type.value
  bool enabled = true;
};

struct NetboxTermination {
  int64_t interface_id = 0;
  std::string device;  // name, from the nested object ("" when not nested)
  std::string interface;
};

struct NetboxCable {
  int64_t id = 0;
  std::string status;
  std::vector<NetboxTermination> a;
  std::vector<NetboxTermination> b;
};

// Each accepts one page envelope {count,next,previous,results}, a bare
// results array, or an array of page envelopes. Errors name the item
// ("netbox interfaces: results[3].speed: expected a number, got string").
Result<std::vector<NetboxDevice>> ParseNetboxDevices(const nlohmann::json& pages, const NetboxOptions& options = {});
Result<std::vector<NetboxInterface>> ParseNetboxInterfaces(const nlohmann::json& pages);
Result<std::vector<NetboxCable>> ParseNetboxCables(const nlohmann::json& pages);

// Gb/s of a NetBox interface type value: "400gbase-x-osfp" -> 400,
// "1000base-t" -> 1, "infiniband-ndr" -> 400; nullopt when unknown.
std::optional<double> GbpsFromNetboxType(std::string_view type);

// Builds the fabric: switches from role_tiers, hosts = other-role devices
// cabled to a leaf; a cable becomes a link when both ends are kept devices
// and it is not host-host; link speed is the lower of the two interface
// speeds that are known. Multi-termination cables pair a[i] with b[i].
// Devices without a kept cable are left out. Domains: site, rack.
// Errors: no cable gave a link, with the count each rule dropped and the
// device roles that role_tiers does not know ("0 of 12 cables gave a fabric
// link: 12 joined devices whose roles role_tiers does not name (roles seen:
// 'gpu-node' ×8, 'tor' ×4; role_tiers: leaf, spine)").
Result<model::TopologySpec> BuildNetboxTopology(const std::vector<NetboxDevice>& devices,
                                                const std::vector<NetboxInterface>& interfaces,
                                                const std::vector<NetboxCable>& cables,
                                                const NetboxOptions& options = {});

// The three documents in one: {"devices": pages, "interfaces": pages,
// "cables": pages} (the form a file or command source provides).
Result<model::TopologySpec> ParseNetboxBundle(const nlohmann::json& bundle, const NetboxOptions& options = {});

// Pagination: GETs `first_url`, then each `next` until null, concatenating
// `results`. `fetch` returns the body for a URL. Stops with an error after
// `max_pages` pages or when a page repeats a URL. Returns {"results": [...]}.
using FetchFn = std::function<Result<std::string>(const std::string& url)>;
Result<nlohmann::json> FetchNetboxPages(const FetchFn& fetch, const std::string& first_url, int max_pages = 1000);

}  // namespace drainwise::connectors
