#include "connectors/gnmi.h"

#include <charconv>
#include <map>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using internal::json;

// Sets the counter named by the last path element; false when not one of ours.
bool SetLeaf(InterfaceCounters& c, std::string_view leaf, const json& value, const std::string& path) {
  auto number = [&]() {
    auto v = internal::NumberOrNumericString(value);
    if (!v) throw FieldError(path, fmt::format("expected a counter (number or numeric string), got {}", value.dump()));
    return *v;
  };
  if (leaf == "in-octets")
    c.rx_bytes = number();
  else if (leaf == "out-octets")
    c.tx_bytes = number();
  else if (leaf == "in-errors")
    c.rx_errors = number();
  else if (leaf == "out-errors")
    c.tx_errors = number();
  else if (leaf == "in-discards")
    c.rx_discards = number();
  else if (leaf == "out-discards")
    c.tx_discards = number();
  else if (leaf == "oper-status" && value.is_string())
    c.oper_up = value.get<std::string>() == "UP";
  else if (leaf == "port-speed" && value.is_string())
    c.speed_bps = BpsFromOpenconfigSpeed(value.get<std::string>());
  else
    return false;
  return true;
}

std::string_view LastElement(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view leaf = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto colon = leaf.rfind(':');  // module prefix
  return colon == std::string_view::npos ? leaf : leaf.substr(colon + 1);
}

}  // namespace

std::optional<double> BpsFromOpenconfigSpeed(std::string_view s) {
  auto colon = s.rfind(':');
  if (colon != std::string_view::npos) s = s.substr(colon + 1);
  if (s.substr(0, 6) != "SPEED_") return std::nullopt;
  s.remove_prefix(6);
  double scale = 0;
  if (s.size() > 2 && s.substr(s.size() - 2) == "GB")
    scale = 1e9;
  else if (s.size() > 2 && s.substr(s.size() - 2) == "MB")
    scale = 1e6;
  else
    return std::nullopt;
  s.remove_suffix(2);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v * scale;
}

Result<CounterSample> ParseGnmicEvents(std::string_view text, const GnmiOptions& options, double time_s) {
  auto docs = internal::ParseConcatenatedJson(text);
  if (!docs) return tl::unexpected(docs.error().Wrap("gnmic events"));
  return internal::Guard("gnmic events", [&] {
    CounterSample out;
    out.time_s = time_s;
    std::map<std::pair<std::string, std::string>, size_t> index;
    auto handle = [&](const json& ev, const std::string& path) {
      codec::ObjectReader r(ev, path);
      if (!r.Has("values") || !r.Has("tags")) return;
      codec::ObjectReader tags(r.Raw("tags"), r.Child("tags"));
      std::string iface = tags.StringOr("interface_name", "");
      if (iface.empty()) return;
      std::string device = options.device;
      if (device.empty()) {
        device = internal::StripPort(tags.StringOr("source", ""));
        if (device.empty()) throw FieldError(tags.Child("source"), "required (or set the device option)");
      }
      auto [it, inserted] = index.try_emplace({device, iface}, out.interfaces.size());
      if (inserted) {
        InterfaceCounters fresh;
        fresh.device = device;
        fresh.interface = iface;
        out.interfaces.push_back(std::move(fresh));
      }
      InterfaceCounters& c = out.interfaces[it->second];
      if (r.Has("timestamp")) {
        auto ns = internal::NumberOrNumericString(r.Raw("timestamp"));
        if (!ns) throw FieldError(r.Child("timestamp"), "expected nanoseconds");
        c.time_s = std::max(c.time_s.value_or(0), *ns / 1e9);
      }
      const json& values = r.Raw("values");
      if (!values.is_object()) throw FieldError(r.Child("values"), "expected an object");
      for (auto v = values.begin(); v != values.end(); ++v) {
        SetLeaf(c, LastElement(v.key()), v.value(), r.Child("values") + "[\"" + v.key() + "\"]");
      }
    };
    for (size_t d = 0; d < docs->size(); ++d) {
      const json& doc = (*docs)[d];
      std::string base = docs->size() > 1 ? fmt::format("doc[{}]", d) : "";
      if (doc.is_array()) {
        for (size_t i = 0; i < doc.size(); ++i) handle(doc[i], fmt::format("{}[{}]", base, i));
      } else {
        handle(doc, base);
      }
    }
    return out;
  });
}

Result<CounterSample> ParseOpenconfigInterfaces(const json& doc, const GnmiOptions& options, double time_s) {
  return internal::Guard("openconfig interfaces", [&] {
    if (options.device.empty()) throw FieldError("", "the device option is required for JSON_IETF documents");
    codec::ObjectReader top(doc, "");
    std::string key = top.Has("openconfig-interfaces:interfaces") ? "openconfig-interfaces:interfaces" : "interfaces";
    if (!top.Has(key)) throw FieldError("openconfig-interfaces:interfaces", "required");
    codec::ObjectReader ifs(top.Raw(key), key);
    CounterSample out;
    out.time_s = time_s;
    for (const auto& i : ifs.Objects("interface")) {
      InterfaceCounters c;
      c.device = options.device;
      c.interface = i.String("name");
      if (i.Has("state")) {
        codec::ObjectReader st(i.Raw("state"), i.Child("state"));
        if (st.Has("oper-status")) SetLeaf(c, "oper-status", st.Raw("oper-status"), st.Child("oper-status"));
        if (st.Has("counters")) {
          const json& counters = st.Raw("counters");
          if (!counters.is_object()) throw FieldError(st.Child("counters"), "expected an object");
          for (auto v = counters.begin(); v != counters.end(); ++v) {
            SetLeaf(c, LastElement(v.key()), v.value(), st.Child("counters") + "." + v.key());
          }
        }
      }
      for (const char* eth : {"openconfig-if-ethernet:ethernet", "ethernet"}) {
        if (!i.Has(eth)) continue;
        codec::ObjectReader e(i.Raw(eth), i.Child(eth));
        if (!e.Has("state")) continue;
        codec::ObjectReader es(e.Raw("state"), e.Child("state"));
        if (es.Has("port-speed")) SetLeaf(c, "port-speed", es.Raw("port-speed"), es.Child("port-speed"));
      }
      out.interfaces.push_back(std::move(c));
    }
    return out;
  });
}

}  // namespace drainwise::connectors
