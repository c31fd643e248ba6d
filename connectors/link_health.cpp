#include "connectors/link_health.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "connectors/gnmi.h"
#include "connectors/util.h"

namespace drainwise::connectors {

namespace {

using internal::json;

struct NamedMetric {
  std::string_view name;
  HealthMetric metric;
};

// Exact exporter names (docs/link-health.md lists them per exporter).
const std::vector<NamedMetric>& PrometheusNames() {
  static const std::vector<NamedMetric> names = {
      // snmp_exporter, if_mib module (IF-MIB) and EtherLike-MIB
      {"ifInErrors", {"in_errors", true, 1}},
      {"ifOutErrors", {"out_errors", true, 1}},
      {"ifInDiscards", {"in_discards", true, 1}},
      {"ifOutDiscards", {"out_discards", true, 1}},
      {"ifHCInOctets", {"rx_bps", true, 8}},
      {"ifHCOutOctets", {"tx_bps", true, 8}},
      {"ifHighSpeed", {"speed_bps", false, 1e6}},
      {"dot3StatsFCSErrors", {"in_errors", true, 1}},
      // node_exporter, netdev and netclass collectors
      {"node_network_receive_errs_total", {"in_errors", true, 1}},
      {"node_network_transmit_errs_total", {"out_errors", true, 1}},
      {"node_network_receive_drop_total", {"in_discards", true, 1}},
      {"node_network_transmit_drop_total", {"out_discards", true, 1}},
      {"node_network_carrier_changes_total", {"carrier_transitions", true, 1}},
      {"node_network_receive_bytes_total", {"rx_bps", true, 8}},
      {"node_network_transmit_bytes_total", {"tx_bps", true, 8}},
      {"node_network_speed_bytes", {"speed_bps", false, 8}},
      // node_exporter, ethtool collector (ethtool -S of an mlx5 NIC)
      {"node_ethtool_rx_corrected_bits_phy", {"fec_corrected", true, 1}},
      {"node_ethtool_rx_ecn_mark", {"ecn_marked", true, 1}},
  };
  return names;
}

std::string_view Leaf(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view leaf = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto colon = leaf.rfind(':');
  return colon == std::string_view::npos ? leaf : leaf.substr(colon + 1);
}

std::string_view Parent(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  return Leaf(path.substr(0, slash));
}

std::optional<double> ParseFloatText(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<HealthMetric> HealthMetricForPrometheus(std::string_view name) {
  for (const auto& n : PrometheusNames()) {
    if (n.name == name) return n.metric;
  }
  // node_ethtool_{rx,tx}_prio<N>_pause (mlx5 per-priority PFC pause frames).
  if ((name.rfind("node_ethtool_rx_prio", 0) == 0 || name.rfind("node_ethtool_tx_prio", 0) == 0) && name.size() > 6 &&
      name.substr(name.size() - 6) == "_pause") {
    return HealthMetric{"pfc_pause", true, 1};
  }
  return std::nullopt;
}

std::optional<HealthMetric> HealthMetricForGnmicPath(std::string_view path) {
  std::string_view leaf = Leaf(path);
  if (leaf == "instant") {
    std::string_view parent = Parent(path);
    if (parent == "input-power") return HealthMetric{"rx_power_dbm", false, 1};
    if (parent == "output-power") return HealthMetric{"tx_power_dbm", false, 1};
    return std::nullopt;
  }
  static const std::vector<NamedMetric> leaves = {
      {"in-errors", {"in_errors", true, 1}},
      {"in-fcs-errors", {"in_errors", true, 1}},  // used only without in-errors (which counts them)
      {"out-errors", {"out_errors", true, 1}},
      {"in-discards", {"in_discards", true, 1}},
      {"out-discards", {"out_discards", true, 1}},
      {"carrier-transitions", {"carrier_transitions", true, 1}},
      {"in-octets", {"rx_bps", true, 8}},
      {"out-octets", {"tx_bps", true, 8}},
      {"corrected-bits", {"fec_corrected", true, 1}},
      {"rs-fec-corrected-symbols", {"fec_corrected", true, 1}},
      {"fc-fec-corrected-blocks", {"fec_corrected", true, 1}},
      {"rs-fec-uncorrectable-blocks", {"fec_uncorrectable", true, 1}},
      {"fc-fec-uncorrected-blocks", {"fec_uncorrectable", true, 1}},
      {"fec-uncorrectable-blocks", {"fec_uncorrectable", true, 1}},
  };
  for (const auto& n : leaves) {
    if (n.name == leaf) return n.metric;
  }
  return std::nullopt;
}

Result<std::vector<HealthSample>> HealthSamplesFromGnmicEvents(std::string_view text, const std::string& device_option,
                                                               double time_s) {
  auto docs = internal::ParseConcatenatedJson(text);
  if (!docs) return tl::unexpected(docs.error().Wrap("gnmic events"));
  return internal::Guard("gnmic events", [&] {
    std::vector<HealthSample> out;
    auto handle = [&](const json& ev, const std::string& at) {
      codec::ObjectReader r(ev, at);
      if (!r.Has("values") || !r.Has("tags")) return;
      codec::ObjectReader tags(r.Raw("tags"), r.Child("tags"));
      std::string iface = tags.StringOr("interface_name", "");
      if (iface.empty()) iface = tags.StringOr("name", "");
      if (iface.empty()) iface = tags.StringOr("component_name", "");
      if (iface.empty()) return;
      std::string device = device_option;
      if (device.empty()) {
        device = internal::StripPort(tags.StringOr("source", ""));
        if (device.empty()) throw codec::FieldError(tags.Child("source"), "required (or set the device option)");
      }
      double t = time_s;
      if (r.Has("timestamp")) {
        auto ns = internal::NumberOrNumericString(r.Raw("timestamp"));
        if (!ns) throw codec::FieldError(r.Child("timestamp"), "expected nanoseconds");
        t = *ns / 1e9;
      }
      const json& values = r.Raw("values");
      if (!values.is_object()) throw codec::FieldError(r.Child("values"), "expected an object");
      bool has_in_errors = false;
      for (auto v = values.begin(); v != values.end(); ++v) has_in_errors |= Leaf(v.key()) == "in-errors";
      for (auto v = values.begin(); v != values.end(); ++v) {
        std::string_view leaf = Leaf(v.key());
        if (leaf == "in-fcs-errors" && has_in_errors) continue;
        std::optional<HealthMetric> m;
        double value = 0;
        if (leaf == "port-speed" && v.value().is_string()) {
          auto bps = BpsFromOpenconfigSpeed(v.value().get<std::string>());
          if (!bps) continue;
          m = HealthMetric{"speed_bps", false, 1};
          value = *bps;
        } else {
          m = HealthMetricForGnmicPath(v.key());
          if (!m) continue;
          auto n = internal::NumberOrNumericString(v.value());
          if (!n) {
            throw codec::FieldError(r.Child("values") + "[\"" + v.key() + "\"]",
                                    fmt::format("expected a number or numeric string, got {}", v.value().dump()));
          }
          value = *n * m->scale;
        }
        out.push_back({device, iface, m->signal, t, value, m->cumulative});
      }
    };
    for (size_t d = 0; d < docs->size(); ++d) {
      const json& doc = (*docs)[d];
      std::string at = fmt::format("[{}]", d);
      if (doc.is_array()) {
        for (size_t i = 0; i < doc.size(); ++i) handle(doc[i], fmt::format("{}[{}]", at, i));
      } else if (doc.is_object()) {
        handle(doc, at);
      }
    }
    return out;
  });
}

Result<std::vector<RangeSeries>> ParsePrometheusRange(const json& doc) {
  return internal::Guard("prometheus query_range", [&] {
    const json& data_doc = internal::PrometheusData(doc, "matrix");
    codec::ObjectReader data(data_doc, "data");
    std::vector<RangeSeries> out;
    for (const auto& r : data.Objects("result")) {
      RangeSeries s;
      s.labels = r.StringMap("metric");
      const json& values = r.Array("values");
      s.points.reserve(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        const json& p = values[i];
        std::string at = fmt::format("{}[{}]", r.Child("values"), i);
        if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
          throw codec::FieldError(at, "expected [unix_seconds, \"value\"]");
        }
        auto v = ParseFloatText(p[1].get<std::string>());
        if (!v) throw codec::FieldError(at, fmt::format("bad value '{}'", p[1].get<std::string>()));
        s.points.emplace_back(p[0].get<double>(), *v);
      }
      out.push_back(std::move(s));
    }
    return out;
  });
}

LinkEndIndex::LinkEndIndex(const model::Topology& topology, NameOptions names) : names_(std::move(names)) {
  for (size_t i = 0; i < topology.link_count(); ++i) {
    const model::Link& l = topology.links()[i];
    model::LinkId id(i);
    if (!l.a_port.empty()) ends_[{internal::ToLower(topology.node(l.a).name), l.a_port}] = {id, true};
    if (!l.b_port.empty()) ends_[{internal::ToLower(topology.node(l.b).name), l.b_port}] = {id, false};
  }
}

std::optional<LinkEndIndex::End> LinkEndIndex::Find(std::string_view device, std::string_view interface) const {
  auto it = ends_.find({internal::ToLower(NormaliseDeviceName(device, names_)), std::string(interface)});
  if (it == ends_.end()) return std::nullopt;
  return it->second;
}

}  // namespace drainwise::connectors
