#include "connectors/netbox.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using codec::ObjectReader;
using internal::json;

// The result objects of one or many pages, each with its path for errors.
std::vector<ObjectReader> Results(const json& pages) {
  std::vector<ObjectReader> out;
  auto add_page = [&](const json& page, const std::string& path) {
    if (page.is_array()) {
      for (size_t i = 0; i < page.size(); ++i) out.emplace_back(page[i], fmt::format("{}[{}]", path, i));
      return;
    }
    ObjectReader r(page, path);
    const json& results = r.Array("results");
    for (size_t i = 0; i < results.size(); ++i) {
      out.emplace_back(results[i], fmt::format("{}[{}]", r.Child("results"), i));
    }
  };
  if (pages.is_array() && !pages.empty() && pages[0].is_object() && pages[0].contains("results")) {
    for (size_t p = 0; p < pages.size(); ++p) add_page(pages[p], fmt::format("pages[{}]", p));
  } else {
    add_page(pages, "");
  }
  return out;
}

// {value,label} choice fields, or a bare string (older exports).
std::string ChoiceValue(const ObjectReader& r, std::string_view key) {
  if (!r.Has(key)) return "";
  const json& v = r.Raw(key);
  if (v.is_string()) return v.get<std::string>();
  ObjectReader o(v, r.Child(key));
  const json& value = o.Has("value") ? o.Raw("value") : json();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  return "";
}

// A nested object's slug (or name when it has no slug).
std::string NestedSlug(const ObjectReader& r, std::string_view key) {
  ObjectReader o(r.Raw(key), r.Child(key));
  if (o.Has("slug")) return o.String("slug");
  return o.StringOr("name", "");
}

int64_t NestedId(const ObjectReader& r, std::string_view key) {
  const json& v = r.Raw(key);
  if (v.is_number_integer()) return v.get<int64_t>();  // 3.x nested ints
  ObjectReader o(v, r.Child(key));
  return o.Int("id");
}

NetboxTermination ParseTermination(const ObjectReader& t) {
  NetboxTermination term;
  std::string type = t.StringOr("object_type", "dcim.interface");
  if (type != "dcim.interface") {
    term.interface_id = -1;  // front/rear ports, circuits, power: not a link end we model
    return term;
  }
  if (t.Has("object_id")) term.interface_id = t.Int("object_id");
  if (t.Has("object")) {
    ObjectReader o(t.Raw("object"), t.Child("object"));
    if (term.interface_id == 0 && o.Has("id")) term.interface_id = o.Int("id");
    term.interface = o.StringOr("name", "");
    if (o.Has("device")) {
      ObjectReader d(o.Raw("device"), o.Child("device"));
      term.device = d.StringOr("name", "");
    }
  }
  if (term.interface_id == 0) throw FieldError(t.Child("object_id"), "required");
  return term;
}

// NetBox < 3.3: termination_a_type / termination_a_id / termination_a.
NetboxTermination ParseLegacyTermination(const ObjectReader& c, char side) {
  std::string type_key = fmt::format("termination_{}_type", side);
  std::string id_key = fmt::format("termination_{}_id", side);
  std::string obj_key = fmt::format("termination_{}", side);
  NetboxTermination term;
  if (c.StringOr(type_key, "dcim.interface") != "dcim.interface") {
    term.interface_id = -1;
    return term;
  }
  term.interface_id = c.Int(id_key);
  if (c.Has(obj_key)) {
    ObjectReader o(c.Raw(obj_key), c.Child(obj_key));
    term.interface = o.StringOr("name", "");
    if (o.Has("device")) {
      ObjectReader d(o.Raw("device"), o.Child("device"));
      term.device = d.StringOr("name", "");
    }
  }
  return term;
}

}  // namespace

std::optional<double> GbpsFromNetboxType(std::string_view type) {
  std::string t = internal::ToLower(type);
  static const std::pair<const char*, double> kInfiniband[] = {
      {"infiniband-sdr", 10},   {"infiniband-ddr", 20},  {"infiniband-qdr", 40},
      {"infiniband-fdr10", 40}, {"infiniband-fdr", 56},  {"infiniband-edr", 100},
      {"infiniband-hdr", 200},  {"infiniband-ndr", 400}, {"infiniband-xdr", 800}};
  for (const auto& [name, gbps] : kInfiniband) {
    if (t == name) return gbps;
  }
  // "<number>[.<frac>][m|g|t]base..." e.g. 400gbase-x-osfp, 2.5gbase-t, 1000base-t (Mb/s).
  auto base = t.find("base");
  if (base == std::string::npos || base == 0) return std::nullopt;
  std::string_view head(t.data(), base);
  double scale = 1e-3;  // no unit letter: Mb/s
  if (head.back() == 'g')
    scale = 1, head.remove_suffix(1);
  else if (head.back() == 't')
    scale = 1000, head.remove_suffix(1);
  else if (head.back() == 'm')
    scale = 1e-3, head.remove_suffix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(head.data(), head.data() + head.size(), v);
  if (ec != std::errc() || p != head.data() + head.size() || v <= 0) return std::nullopt;
  return v * scale;
}

Result<std::vector<NetboxDevice>> ParseNetboxDevices(const json& pages, const NetboxOptions& options) {
  return internal::Guard("netbox devices", [&] {
    std::vector<NetboxDevice> out;
    for (const auto& r : Results(pages)) {
      NetboxDevice d;
      d.id = r.Int("id");
      // Unnamed devices exist in NetBox; they cannot be addressed by name.
      d.name = r.StringOr("name", "");
      if (r.Has("role"))
        d.role = NestedSlug(r, "role");
      else if (r.Has("device_role"))
        d.role = NestedSlug(r, "device_role");
      d.status = ChoiceValue(r, "status");
      if (r.Has("site")) d.site = NestedSlug(r, "site");
      if (r.Has("rack")) {
        ObjectReader rack(r.Raw("rack"), r.Child("rack"));
        d.rack = rack.StringOr("name", "");
      }
      if (!options.gpus_custom_field.empty() && r.Has("custom_fields")) {
        ObjectReader cf(r.Raw("custom_fields"), r.Child("custom_fields"));
        if (cf.Has(options.gpus_custom_field)) d.gpus = static_cast<int>(cf.Int(options.gpus_custom_field));
      }
      out.push_back(std::move(d));
    }
    return out;
  });
}

Result<std::vector<NetboxInterface>> ParseNetboxInterfaces(const json& pages) {
  return internal::Guard("netbox interfaces", [&] {
    std::vector<NetboxInterface> out;
    for (const auto& r : Results(pages)) {
      NetboxInterface i;
      i.id = r.Int("id");
      i.name = r.String("name");
      if (!r.Has("device")) throw FieldError(r.Child("device"), "required");
      i.device_id = NestedId(r, "device");
      if (r.Raw("device").is_object()) {
        ObjectReader d(r.Raw("device"), r.Child("device"));
        i.device = d.StringOr("name", "");
      }
      i.type = ChoiceValue(r, "type");
      i.enabled = r.BoolOr("enabled", true);
      if (auto kbps = r.OptNumber("speed"); kbps && *kbps > 0) {
        i.gbps = *kbps / 1e6;  // NetBox stores kbit/s
      } else {
        i.gbps = GbpsFromNetboxType(i.type);
      }
      out.push_back(std::move(i));
    }
    return out;
  });
}

Result<std::vector<NetboxCable>> ParseNetboxCables(const json& pages) {
  return internal::Guard("netbox cables", [&] {
    std::vector<NetboxCable> out;
    for (const auto& r : Results(pages)) {
      NetboxCable c;
      c.id = r.Int("id");
      c.status = ChoiceValue(r, "status");
      if (r.Has("a_terminations") || r.Has("b_terminations")) {
        for (const auto& t : r.Objects("a_terminations")) c.a.push_back(ParseTermination(t));
        for (const auto& t : r.Objects("b_terminations")) c.b.push_back(ParseTermination(t));
      } else if (r.Has("termination_a_id") || r.Has("termination_a")) {
        c.a.push_back(ParseLegacyTermination(r, 'a'));
        c.b.push_back(ParseLegacyTermination(r, 'b'));
      } else {
        throw FieldError(r.Child("a_terminations"), "required");
      }
      out.push_back(std::move(c));
    }
    return out;
  });
}

Result<model::TopologySpec> BuildNetboxTopology(const std::vector<NetboxDevice>& devices,
                                                const std::vector<NetboxInterface>& interfaces,
                                                const std::vector<NetboxCable>& cables, const NetboxOptions& options) {
  std::unordered_map<int64_t, const NetboxDevice*> device_by_id;
  std::unordered_map<std::string, const NetboxDevice*> device_by_name;
  for (const auto& d : devices) {
    if (d.name.empty() || options.skip_device_statuses.count(d.status)) continue;
    device_by_id[d.id] = &d;
    device_by_name[d.name] = &d;
  }
  std::unordered_map<int64_t, const NetboxInterface*> iface_by_id;
  for (const auto& i : interfaces) iface_by_id[i.id] = &i;

  auto tier_of = [&](const NetboxDevice& d) -> const std::string* {
    auto it = options.role_tiers.find(d.role);
    return it == options.role_tiers.end() ? nullptr : &it->second;
  };
  auto is_leaf = [&](const NetboxDevice& d) {
    const std::string* t = tier_of(d);
    if (!t) return false;
    auto lv = options.tier_levels.find(*t);
    int level = lv != options.tier_levels.end() ? lv->second : model::LevelForTier(*t);
    return level == model::kLeafLevel;
  };
  auto may_be_host = [&](const NetboxDevice& d) {
    return !tier_of(d) && (options.host_roles.empty() || options.host_roles.count(d.role));
  };

  // Resolve a termination to (device, interface record or null, port name).
  struct End {
    const NetboxDevice* device = nullptr;
    const NetboxInterface* iface = nullptr;
    std::string port;
  };
  auto resolve = [&](const NetboxTermination& t) -> End {
    End e;
    if (t.interface_id < 0) return e;
    auto it = iface_by_id.find(t.interface_id);
    if (it != iface_by_id.end()) {
      e.iface = it->second;
      e.port = it->second->name;
      auto d = device_by_id.find(it->second->device_id);
      if (d != device_by_id.end()) e.device = d->second;
    }
    if (!e.device && !t.device.empty()) {
      auto d = device_by_name.find(t.device);
      if (d != device_by_name.end()) e.device = d->second;
    }
    if (e.port.empty()) e.port = t.interface;
    return e;
  };

  model::TopologySpec spec;
  spec.name = options.name;
  std::vector<std::string> used;  // device names in first-use order
  std::unordered_map<std::string, bool> used_set;
  auto use = [&](const NetboxDevice* d) {
    if (!used_set[d->name]) {
      used_set[d->name] = true;
      used.push_back(d->name);
    }
  };
  // What each rule dropped, for the refusal when nothing is left.
  size_t considered = 0, skipped_status = 0, unknown_end = 0, same_device = 0, no_switch = 0, not_host_leaf = 0;
  std::map<std::string, int> untiered_roles;
  for (const auto& c : cables) {
    if (options.skip_cable_statuses.count(c.status)) {
      ++skipped_status;
      continue;
    }
    size_t n = std::min(c.a.size(), c.b.size());
    for (size_t k = 0; k < n; ++k) {
      ++considered;
      End a = resolve(c.a[k]);
      End b = resolve(c.b[k]);
      if (!a.device || !b.device) {
        ++unknown_end;
        continue;
      }
      if (a.device == b.device) {
        ++same_device;
        continue;
      }
      bool a_switch = tier_of(*a.device) != nullptr;
      bool b_switch = tier_of(*b.device) != nullptr;
      if (!a_switch && !b_switch) {  // host-host or two unknown roles
        ++no_switch;
        ++untiered_roles[a.device->role];
        ++untiered_roles[b.device->role];
        continue;
      }
      if ((!a_switch && !(may_be_host(*a.device) && is_leaf(*b.device))) ||
          (!b_switch && !(may_be_host(*b.device) && is_leaf(*a.device)))) {
        ++not_host_leaf;
        continue;
      }
      std::optional<double> gbps;
      for (const End* e : {&a, &b}) {
        if (e->iface && e->iface->gbps) gbps = gbps ? std::min(*gbps, *e->iface->gbps) : *e->iface->gbps;
      }
      if (!gbps) {
        if (options.default_gbps <= 0) {
          return InvalidArgument(
              fmt::format("netbox cable {} ({}:{} - {}:{}): no speed on either interface (speed null, type unknown); "
                          "set the interface speed or the default_gbps option",
                          c.id, a.device->name, a.port, b.device->name, b.port));
        }
        gbps = options.default_gbps;
      }
      use(a.device);
      use(b.device);
      spec.links.push_back({a.device->name, b.device->name, *gbps, a.port, b.port});
    }
  }
  if (spec.links.empty()) {
    std::vector<std::string> why;
    if (cables.empty()) why.push_back("NetBox returned no cables");
    if (skipped_status) why.push_back(fmt::format("{} had a skipped status (skip_cable_statuses)", skipped_status));
    if (unknown_end) {
      why.push_back(fmt::format("{} ended on a device that is unknown, unnamed or of a skipped status", unknown_end));
    }
    if (same_device) why.push_back(fmt::format("{} looped back to their own device", same_device));
    if (no_switch) {
      std::string roles, tiers;
      for (const auto& [role, count] : untiered_roles) {
        roles += fmt::format("{}'{}' ×{}", roles.empty() ? "" : ", ", role.empty() ? "(no role)" : role, count);
      }
      for (const auto& [role, tier] : options.role_tiers) tiers += (tiers.empty() ? "" : ", ") + role;
      why.push_back(
          fmt::format("{} joined two devices whose roles role_tiers does not name (roles seen: {}; "
                      "role_tiers: {})",
                      no_switch, roles, tiers.empty() ? "none" : tiers));
    }
    if (not_host_leaf) {
      why.push_back(
          fmt::format("{} joined a switch to a device that is neither a leaf's host (host_roles) nor a "
                      "switch",
                      not_host_leaf));
    }
    std::string joined;
    for (const auto& w : why) joined += (joined.empty() ? "" : ", ") + w;
    return InvalidArgument(fmt::format("netbox: 0 of {} cable terminations gave a fabric link: {}", considered,
                                       joined.empty() ? "none was considered" : joined));
  }
  for (const auto& name : used) {
    const NetboxDevice& d = *device_by_name[name];
    model::NodeSpec n;
    n.id = d.name;
    if (const std::string* tier = tier_of(d)) {
      n.kind = model::NodeKind::kSwitch;
      n.tier = *tier;
      auto lv = options.tier_levels.find(*tier);
      if (lv != options.tier_levels.end()) n.level = lv->second;
    } else {
      n.kind = model::NodeKind::kHost;
      n.gpus = d.gpus.value_or(options.default_gpus);
    }
    if (!d.site.empty()) n.domains["site"] = d.site;
    if (!d.rack.empty()) n.domains["rack"] = d.rack;
    spec.nodes.push_back(std::move(n));
  }
  return spec;
}

Result<model::TopologySpec> ParseNetboxBundle(const json& bundle, const NetboxOptions& options) {
  if (!bundle.is_object()) return InvalidArgument("netbox: expected an object {devices, interfaces, cables}");
  for (const char* key : {"devices", "interfaces", "cables"}) {
    if (!bundle.contains(key)) return InvalidArgument(fmt::format("netbox: {}: required", key));
  }
  auto devices = ParseNetboxDevices(bundle["devices"], options);
  if (!devices) return tl::unexpected(devices.error());
  auto interfaces = ParseNetboxInterfaces(bundle["interfaces"]);
  if (!interfaces) return tl::unexpected(interfaces.error());
  auto cables = ParseNetboxCables(bundle["cables"]);
  if (!cables) return tl::unexpected(cables.error());
  return BuildNetboxTopology(*devices, *interfaces, *cables, options);
}

namespace {

// "https://nb.example:8443/api/dcim/devices/?limit=50" -> ("https://nb.example:8443", "/api/...").
std::pair<std::string, std::string> SplitOrigin(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return {"", url};
  auto path = url.find('/', scheme + 3);
  if (path == std::string::npos) return {url, "/"};
  return {url.substr(0, path), url.substr(path)};
}

}  // namespace

Result<json> FetchNetboxPages(const FetchFn& fetch, const std::string& first_url, int max_pages) {
  json results = json::array();
  std::string url = first_url;
  std::string origin = SplitOrigin(first_url).first;
  std::set<std::string> seen;
  for (int page = 0;; ++page) {
    if (page >= max_pages) {
      return InvalidArgument(fmt::format("netbox {}: more than {} pages", first_url, max_pages));
    }
    if (!seen.insert(url).second) {
      return InvalidArgument(fmt::format("netbox {}: page {} repeats '{}'", first_url, page, url));
    }
    auto body = fetch(url);
    if (!body) return tl::unexpected(body.error().Wrap(fmt::format("netbox page {}", url)));
    auto doc = codec::ParseJsonText(*body);
    if (!doc) return tl::unexpected(doc.error().Wrap(fmt::format("netbox page {}", url)));
    if (!doc->is_object() || !doc->contains("results") || !(*doc)["results"].is_array()) {
      return InvalidArgument(fmt::format("netbox page {}: results: expected an array", url));
    }
    for (auto& r : (*doc)["results"]) results.push_back(std::move(r));
    const json& next = doc->value("next", json());
    if (next.is_null()) break;
    if (!next.is_string()) return InvalidArgument(fmt::format("netbox page {}: next: expected a string or null", url));
    // NetBox behind a proxy often advertises the wrong scheme or host in
    // `next`: keep the origin we were configured with, take path and query.
    url = origin + SplitOrigin(next.get<std::string>()).second;
  }
  return json{{"results", std::move(results)}};
}

}  // namespace drainwise::connectors
