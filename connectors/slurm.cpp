#include "connectors/slurm.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "connectors/hostlist.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using codec::ObjectReader;
using internal::json;

struct SwitchLine {
  std::string name;
  std::vector<std::string> switches;
  std::vector<std::string> nodes;
  std::optional<double> link_speed;
  int line = 0;
};

std::string TierName(int level) {
  switch (level) {
    case model::kLeafLevel: return "leaf";
    case model::kSpineLevel: return "spine";
    case model::kSuperspineLevel: return "superspine";
    default: return fmt::format("tier{}", level);
  }
}

}  // namespace

Result<model::TopologySpec> ParseSlurmTopologyConf(std::string_view text, const SlurmTopologyOptions& options) {
  std::vector<SwitchLine> lines;
  std::map<std::string, size_t> by_name;
  // Join '\' continuations, then split into logical lines.
  std::vector<std::pair<int, std::string>> logical;
  {
    std::string cur;
    int line_no = 0, start_line = 1;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      ++line_no;
      if (cur.empty()) start_line = line_no;
      auto hash = raw.find('#');
      if (hash != std::string_view::npos) raw = raw.substr(0, hash);
      raw = internal::Trim(raw);
      if (!raw.empty() && raw.back() == '\\') {
        cur += std::string(raw.substr(0, raw.size() - 1)) + " ";
      } else {
        cur += std::string(raw);
        if (!internal::Trim(cur).empty()) logical.emplace_back(start_line, cur);
        cur.clear();
      }
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
    if (!internal::Trim(cur).empty()) logical.emplace_back(start_line, cur);
  }

  HostlistBudget hostlists;  // every Switches= and Nodes= of the file together
  for (const auto& [line_no, text_line] : logical) {
    auto where = [&, line_no = line_no](const std::string& msg) {
      return InvalidArgument(fmt::format("topology.conf line {}: {}", line_no, msg));
    };
    SwitchLine sw;
    sw.line = line_no;
    std::string_view rest = text_line;
    bool has_nodes = false, has_switches = false;
    while (true) {
      rest = internal::Trim(rest);
      if (rest.empty()) break;
      size_t end = rest.find_first_of(" \t");
      std::string_view token = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
      auto eq = token.find('=');
      if (eq == std::string_view::npos) return where(fmt::format("'{}' is not Key=Value", token));
      std::string key = internal::ToLower(token.substr(0, eq));
      std::string_view value = token.substr(eq + 1);
      if (key == "switchname") {
        sw.name = std::string(value);
      } else if (key == "switches" || key == "nodes") {
        auto hosts = ExpandHostlist(value, hostlists);
        if (!hosts) return where(fmt::format("{}: {}", token.substr(0, eq), hosts.error().message));
        auto& dst = key == "switches" ? sw.switches : sw.nodes;
        dst.insert(dst.end(), hosts->begin(), hosts->end());
        (key == "switches" ? has_switches : has_nodes) = true;
      } else if (key == "linkspeed") {
        double v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v <= 0) {
          return where(fmt::format("LinkSpeed '{}' is not a positive number", value));
        }
        sw.link_speed = v;
      } else {
        return where(fmt::format("unknown key '{}' (SwitchName, Switches, Nodes, LinkSpeed)",
                                 token.substr(0, eq)));
      }
    }
    if (sw.name.empty()) return where("SwitchName= required");
    if (!has_nodes && !has_switches) return where(fmt::format("switch '{}' has neither Switches= nor Nodes=", sw.name));
    if (by_name.count(sw.name)) return where(fmt::format("switch '{}' defined twice", sw.name));
    by_name[sw.name] = lines.size();
    lines.push_back(std::move(sw));
  }

  // Levels from tree depth: leaves are 1, parents 1 + max(child).
  std::vector<int> level(lines.size(), 0);  // 0 = not computed, -1 = on the stack
  std::function<Result<int>(size_t)> level_of = [&](size_t i) -> Result<int> {
    if (level[i] > 0) return level[i];
    if (level[i] < 0) {
      return InvalidArgument(fmt::format("topology.conf line {}: switch '{}' is part of a cycle",
                                         lines[i].line, lines[i].name));
    }
    level[i] = -1;
    int l = 1;
    for (const auto& child : lines[i].switches) {
      auto it = by_name.find(child);
      if (it == by_name.end()) {
        return InvalidArgument(fmt::format("topology.conf line {}: switch '{}' lists undefined switch '{}'",
                                           lines[i].line, lines[i].name, child));
      }
      auto cl = level_of(it->second);
      if (!cl) return cl;
      l = std::max(l, *cl + 1);
    }
    level[i] = l;
    return l;
  };

  model::TopologySpec spec;
  spec.name = options.name;
  std::set<std::string> hosts_seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto l = level_of(i);
    if (!l) return tl::unexpected(l.error());
    model::NodeSpec n;
    n.id = lines[i].name;
    n.kind = model::NodeKind::kSwitch;
    n.tier = TierName(*l);
    n.level = *l;
    spec.nodes.push_back(std::move(n));
  }
  for (const auto& sw : lines) {
    double gbps = options.default_gbps;
    if (sw.link_speed && options.link_speed_unit_gbps > 0) gbps = *sw.link_speed * options.link_speed_unit_gbps;
    for (const auto& child : sw.switches) spec.links.push_back({child, sw.name, gbps, "", ""});
    for (const auto& host : sw.nodes) {
      if (by_name.count(host)) {
        return InvalidArgument(fmt::format("topology.conf line {}: '{}' is a switch, listed in Nodes=",
                                           sw.line, host));
      }
      if (hosts_seen.insert(host).second) {
        model::NodeSpec n;
        n.id = host;
        n.kind = model::NodeKind::kHost;
        n.gpus = options.gpus_per_host;
        spec.nodes.push_back(std::move(n));
      }
      spec.links.push_back({host, sw.name, gbps, "", ""});
    }
  }
  return spec;
}

namespace {

// Slurm numbers: plain, or {"set","infinite","number"} since v0.0.40.
std::optional<double> SlurmNumber(const ObjectReader& r, std::string_view key) {
  if (!r.Has(key)) return std::nullopt;
  const json& v = r.Raw(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_object()) {
    ObjectReader o(v, r.Child(key));
    if (!o.BoolOr("set", true) || o.BoolOr("infinite", false)) return std::nullopt;
    return o.Number("number");
  }
  throw FieldError(r.Child(key), fmt::format("expected a number or a {{set,infinite,number}} object, got {}",
                                             codec::JsonTypeName(v)));
}

std::vector<std::string> JobStates(const ObjectReader& r) {
  if (!r.Has("job_state")) throw FieldError(r.Child("job_state"), "required");
  const json& v = r.Raw("job_state");
  if (v.is_string()) return {v.get<std::string>()};
  if (v.is_array()) return r.StringList("job_state");
  throw FieldError(r.Child("job_state"), fmt::format("expected a string or a list, got {}", codec::JsonTypeName(v)));
}

// "gres/gpu:8", "gres/gpu:h100:8", "gres:gpu:8", "gres/gpu=8" -> 8.
int GpusFromTres(std::string_view tres) {
  int gpus = 0;
  size_t pos = 0;
  while (pos < tres.size()) {
    size_t comma = tres.find(',', pos);
    std::string_view item = tres.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (item.find("gpu") != std::string_view::npos) {
      size_t sep = item.find_last_of(":=");
      if (sep != std::string_view::npos) {
        int v = 0;
        auto num = item.substr(sep + 1);
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
        if (ec == std::errc() && p == num.data() + num.size()) gpus = v;
      }
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return gpus;
}

}  // namespace

Result<model::JobsSpec> ParseSlurmJobs(const nlohmann::json& doc, const SlurmJobsOptions& options) {
  return internal::Guard("slurm jobs", [&]() -> model::JobsSpec {
    ObjectReader top(doc, "");
    // slurmrestd reports failures in-band (HTTP 200 is possible); an error
    // with an empty job list must not read as "nothing is running".
    if (top.Has("errors")) {
      const json& errors = top.Array("errors");
      if (!errors.empty()) {
        std::string what = errors[0].is_object() ? errors[0].value("description", errors[0].value("error", errors[0].dump()))
                                                 : errors[0].dump();
        throw FieldError("errors[0]", fmt::format("slurm reported: {}", what));
      }
    }
    if (!top.Has("jobs")) throw FieldError("jobs", "required");
    model::JobsSpec spec;
    HostlistBudget hostlists;  // the nodes of every job of the reply together
    for (const auto& r : top.Objects("jobs")) {
      auto states = JobStates(r);
      if (std::find(states.begin(), states.end(), "RUNNING") == states.end()) continue;
      std::string nodes = r.StringOr("nodes", "");
      if (internal::Trim(nodes).empty()) continue;
      auto hosts = ExpandHostlist(nodes, hostlists);
      if (!hosts) throw FieldError(r.Child("nodes"), hosts.error().message);
      model::JobSpec j;
      auto id = SlurmNumber(r, "job_id");
      if (!id) throw FieldError(r.Child("job_id"), "required");
      j.id = options.id_prefix + fmt::format("{}", static_cast<int64_t>(*id));
      j.name = r.StringOr("name", "");
      j.tenant = r.StringOr("account", "");
      j.hosts = std::move(*hosts);
      j.gpus_per_host = GpusFromTres(r.StringOr("tres_per_node", ""));
      if (auto t = SlurmNumber(r, "start_time"); t && *t > 0) j.started_at = static_cast<int64_t>(*t);
      if (auto t = SlurmNumber(r, "end_time"); t && *t > 0) j.expected_end = static_cast<int64_t>(*t);
      for (auto [label, key] : {std::pair{"partition", "partition"}, {"user", "user_name"},
                                {"account", "account"}, {"qos", "qos"}, {"slurm_job_name", "name"}}) {
        if (r.Has(key) && r.Raw(key).is_string() && !r.Raw(key).get_ref<const std::string&>().empty()) {
          j.labels[label] = r.Raw(key).get<std::string>();
        }
      }
      j.profile_source = "default";
      spec.jobs.push_back(std::move(j));
    }
    return spec;
  });
}

}  // namespace drainwise::connectors
