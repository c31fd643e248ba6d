#include "connectors/prometheus.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using internal::json;

bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool NameChar(char c) { return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::optional<double> ParseGoFloat(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

struct LineParser {
  std::string_view s;
  size_t pos = 0;
  void SkipBlanks() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  }
  std::string Name() {
    size_t start = pos;
    if (pos < s.size() && NameStart(s[pos])) {
      ++pos;
      while (pos < s.size() && NameChar(s[pos])) ++pos;
    }
    return std::string(s.substr(start, pos - start));
  }
};

Result<PromSample> ParseLine(std::string_view line, size_t line_no) {
  auto fail = [&](std::string msg) {
    return InvalidArgument(fmt::format("prometheus text line {}: {}", line_no, msg));
  };
  LineParser p{line};
  PromSample sample;
  p.SkipBlanks();
  sample.name = p.Name();
  if (sample.name.empty()) return fail("expected a metric name");
  p.SkipBlanks();
  if (p.pos < line.size() && line[p.pos] == '{') {
    ++p.pos;
    while (true) {
      p.SkipBlanks();
      if (p.pos < line.size() && line[p.pos] == '}') {
        ++p.pos;
        break;
      }
      std::string label = p.Name();
      if (label.empty()) return fail(fmt::format("{}: expected a label name", sample.name));
      p.SkipBlanks();
      if (p.pos >= line.size() || line[p.pos] != '=')
        return fail(fmt::format("{}: expected '=' after label '{}'", sample.name, label));
      ++p.pos;
      p.SkipBlanks();
      if (p.pos >= line.size() || line[p.pos] != '"')
        return fail(fmt::format("{}: label '{}': expected '\"'", sample.name, label));
      ++p.pos;
      std::string value;
      bool closed = false;
      while (p.pos < line.size()) {
        char c = line[p.pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (p.pos >= line.size()) break;
          char e = line[p.pos++];
          if (e == 'n')
            value += '\n';
          else if (e == '\\' || e == '"')
            value += e;
          else
            return fail(fmt::format("{}: label '{}': unknown escape '\\{}'", sample.name, label, e));
        } else {
          value += c;
        }
      }
      if (!closed) return fail(fmt::format("{}: label '{}': missing closing quote", sample.name, label));
      if (sample.labels.count(label)) return fail(fmt::format("{}: label '{}' repeated", sample.name, label));
      sample.labels[label] = std::move(value);
      p.SkipBlanks();
      if (p.pos < line.size() && line[p.pos] == ',') {
        ++p.pos;
        continue;
      }
      p.SkipBlanks();
      if (p.pos < line.size() && line[p.pos] == '}') {
        ++p.pos;
        break;
      }
      return fail(fmt::format("{}: expected ',' or '}}' after label '{}'", sample.name, label));
    }
  }
  p.SkipBlanks();
  size_t vstart = p.pos;
  while (p.pos < line.size() && line[p.pos] != ' ' && line[p.pos] != '\t') ++p.pos;
  std::string_view vtext = line.substr(vstart, p.pos - vstart);
  if (vtext.empty()) return fail(fmt::format("{}: missing value", sample.name));
  auto v = ParseGoFloat(vtext);
  if (!v) return fail(fmt::format("{}: bad value '{}'", sample.name, vtext));
  sample.value = *v;
  p.SkipBlanks();
  if (p.pos < line.size()) {
    size_t tstart = p.pos;
    while (p.pos < line.size() && line[p.pos] != ' ' && line[p.pos] != '\t') ++p.pos;
    std::string_view ttext = line.substr(tstart, p.pos - tstart);
    int64_t ts = 0;
    auto [q, ec] = std::from_chars(ttext.data(), ttext.data() + ttext.size(), ts);
    if (ec != std::errc() || q != ttext.data() + ttext.size()) {
      return fail(fmt::format("{}: bad timestamp '{}'", sample.name, ttext));
    }
    sample.timestamp_ms = ts;
    p.SkipBlanks();
    if (p.pos < line.size()) return fail(fmt::format("{}: unexpected text after the timestamp", sample.name));
  }
  return sample;
}

}  // namespace

Result<std::vector<PromSample>> ParsePrometheusText(std::string_view text) {
  std::vector<PromSample> out;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view t = internal::Trim(line);
    if (t.empty() || t.front() == '#') continue;
    auto s = ParseLine(line, line_no);
    if (!s) return tl::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::vector<PromSample>> ParsePrometheusQuery(const json& doc) {
  return internal::Guard("prometheus query", [&] {
    const json& data_doc = internal::PrometheusData(doc, "vector", "matrix");
    codec::ObjectReader data(data_doc, "data");
    const std::string type = data.String("resultType");
    std::vector<PromSample> out;
    for (const auto& r : data.Objects("result")) {
      PromSample s;
      s.labels = r.StringMap("metric");
      auto n = s.labels.find("__name__");
      if (n != s.labels.end()) {
        s.name = n->second;
        s.labels.erase(n);
      }
      const json* point = nullptr;
      std::string point_path;
      if (type == "vector") {
        point = &r.Array("value");
        point_path = r.Child("value");
      } else {
        const json& values = r.Array("values");
        if (values.empty()) continue;
        point = &values.back();
        point_path = fmt::format("{}[{}]", r.Child("values"), values.size() - 1);
      }
      if (!point->is_array() || point->size() != 2 || !(*point)[0].is_number() || !(*point)[1].is_string()) {
        throw codec::FieldError(point_path, "expected [unix_seconds, \"value\"]");
      }
      auto v = ParseGoFloat((*point)[1].get<std::string>());
      if (!v) throw codec::FieldError(point_path, fmt::format("bad value '{}'", (*point)[1].get<std::string>()));
      s.value = *v;
      s.timestamp_ms = static_cast<int64_t>(std::llround((*point)[0].get<double>() * 1000));
      out.push_back(std::move(s));
    }
    return out;
  });
}

namespace {

enum class Field {
  kRxBytes,
  kTxBytes,
  kRxErrors,
  kTxErrors,
  kRxDiscards,
  kTxDiscards,
  kSpeedBytes,
  kSpeedMbps,
  kUp,
  kOperStatus
};

struct MetricDef {
  const char* name;
  Field field;
  bool snmp;  // interface label ifName/ifDescr instead of device
};

constexpr MetricDef kMetrics[] = {
    {"node_network_receive_bytes_total", Field::kRxBytes, false},
    {"node_network_transmit_bytes_total", Field::kTxBytes, false},
    {"node_network_receive_errs_total", Field::kRxErrors, false},
    {"node_network_transmit_errs_total", Field::kTxErrors, false},
    {"node_network_receive_drop_total", Field::kRxDiscards, false},
    {"node_network_transmit_drop_total", Field::kTxDiscards, false},
    {"node_network_speed_bytes", Field::kSpeedBytes, false},
    {"node_network_up", Field::kUp, false},
    {"ifHCInOctets", Field::kRxBytes, true},
    {"ifHCOutOctets", Field::kTxBytes, true},
    {"ifInErrors", Field::kRxErrors, true},
    {"ifOutErrors", Field::kTxErrors, true},
    {"ifInDiscards", Field::kRxDiscards, true},
    {"ifOutDiscards", Field::kTxDiscards, true},
    {"ifHighSpeed", Field::kSpeedMbps, true},
    {"ifOperStatus", Field::kOperStatus, true},
};

}  // namespace

Result<CounterSample> CountersFromPrometheus(const std::vector<PromSample>& samples,
                                             const PrometheusTelemetryOptions& options, double time_s) {
  CounterSample out;
  out.time_s = time_s;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& s : samples) {
    const MetricDef* def = nullptr;
    for (const auto& m : kMetrics) {
      if (s.name == m.name) def = &m;
    }
    if (!def) continue;
    std::string iface;
    auto get = [&](const char* key) -> std::string {
      auto it = s.labels.find(key);
      return it == s.labels.end() ? "" : it->second;
    };
    iface = def->snmp ? get("ifName") : get("device");
    if (iface.empty() && def->snmp) iface = get("ifDescr");
    if (iface.empty()) continue;
    bool skip = false;
    for (const auto& sk : options.skip_interfaces) skip = skip || sk == iface;
    if (skip) continue;
    std::string device = options.device;
    if (device.empty()) {
      std::string raw = get(options.device_label.c_str());
      if (raw.empty()) {
        return InvalidArgument(fmt::format("prometheus {}{{{}=\"{}\"}}: no '{}' label and no device option", s.name,
                                           def->snmp ? "ifName" : "device", iface, options.device_label));
      }
      device = internal::StripPort(raw);
      if (!options.strip_suffix.empty() && device.size() > options.strip_suffix.size() &&
          device.compare(device.size() - options.strip_suffix.size(), std::string::npos, options.strip_suffix) == 0) {
        device.resize(device.size() - options.strip_suffix.size());
      }
    }
    auto [it, inserted] = index.try_emplace({device, iface}, out.interfaces.size());
    if (inserted) {
      InterfaceCounters fresh;
      fresh.device = device;
      fresh.interface = iface;
      out.interfaces.push_back(std::move(fresh));
    }
    InterfaceCounters& c = out.interfaces[it->second];
    if (s.timestamp_ms) c.time_s = std::max(c.time_s.value_or(0), *s.timestamp_ms / 1000.0);
    double v = s.value;
    if (std::isnan(v)) continue;
    switch (def->field) {
      case Field::kRxBytes:
        c.rx_bytes = v;
        break;
      case Field::kTxBytes:
        c.tx_bytes = v;
        break;
      case Field::kRxErrors:
        c.rx_errors = v;
        break;
      case Field::kTxErrors:
        c.tx_errors = v;
        break;
      case Field::kRxDiscards:
        c.rx_discards = v;
        break;
      case Field::kTxDiscards:
        c.tx_discards = v;
        break;
      case Field::kSpeedBytes:
        if (v > 0) c.speed_bps = v * 8;
        break;
      case Field::kSpeedMbps:
        if (v > 0) c.speed_bps = v * 1e6;
        break;
      case Field::kUp:
        c.oper_up = v == 1;
        break;
      case Field::kOperStatus:
        c.oper_up = v == 1;
        break;
    }
  }
  return out;
}

}  // namespace drainwise::connectors
