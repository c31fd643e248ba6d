#include "connectors/slurm.h"

#include <algorithm>
#include <charconv>
#include <cmath>
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

}  // namespace

namespace {

// topology.conf as (first line number, logical line): comments stripped, '\'
// continuations joined, blank lines dropped.
std::vector<std::pair<int, std::string>> LogicalLines(std::string_view text) {
  std::vector<std::pair<int, std::string>> logical;
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
  return logical;
}

std::vector<std::string_view> SplitComma(std::string_view s) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    auto item = internal::Trim(s.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (!item.empty()) out.push_back(item);
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  return out;
}

// topograph's bucket for nodes it could not place: not a switch.
constexpr std::string_view kNoTopologySwitch = "no-topology";

struct BlockLine {
  std::string name;
  std::vector<std::string> nodes;
  int line = 0;
};

}  // namespace

Result<model::TopologySpec> ParseSlurmTopologyConf(std::string_view text, const SlurmTopologyOptions& options,
                                                   Diagnostics* diagnostics) {
  std::vector<SwitchLine> lines;
  std::vector<BlockLine> blocks;
  std::vector<int> block_sizes;
  int block_sizes_line = 0;
  std::vector<std::string> unplaced;  // nodes under topograph's no-topology
  std::map<std::string, size_t> by_name;
  HostlistBudget hostlists;  // every Switches= and Nodes= of the file together

  for (const auto& [line_no, text_line] : LogicalLines(text)) {
    auto where = [&, line_no = line_no](const std::string& msg) {
      return InvalidArgument(fmt::format("topology.conf line {}: {}", line_no, msg));
    };
    SwitchLine sw;
    sw.line = line_no;
    std::string block_name;
    bool is_block = false, is_sizes = false;
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
      } else if (key == "blockname") {
        block_name = std::string(value);
        is_block = true;
      } else if (key == "blocksizes") {
        is_sizes = true;
        for (const auto& item : SplitComma(value)) {
          int v = 0;
          auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
          if (ec != std::errc() || p != item.data() + item.size() || v <= 0) {
            return where(fmt::format("BlockSizes: '{}' is not a positive whole number", item));
          }
          if (!block_sizes.empty() && v <= block_sizes.back()) {
            return where(
                fmt::format("BlockSizes: {} does not grow after {} (sizes must increase)", v, block_sizes.back()));
          }
          block_sizes.push_back(v);
        }
        if (block_sizes.empty()) return where("BlockSizes: empty");
        block_sizes_line = line_no;
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
        return where(fmt::format("unknown key '{}' (SwitchName, Switches, Nodes, LinkSpeed; BlockName, BlockSizes)",
                                 token.substr(0, eq)));
      }
    }
    if (is_sizes) {
      if (is_block || !sw.name.empty() || has_nodes || has_switches) {
        return where("BlockSizes= stands on a line of its own");
      }
      continue;
    }
    if (is_block) {
      if (!sw.name.empty())
        return where("a line has either SwitchName= (topology/tree) or BlockName= (topology/block)");
      if (has_switches) return where(fmt::format("block '{}': Switches= is not part of topology/block", block_name));
      if (!has_nodes) return where(fmt::format("block '{}' has no Nodes=", block_name));
      if (block_name.empty()) return where("BlockName= is empty");
      if (by_name.count(block_name)) return where(fmt::format("block '{}' defined twice", block_name));
      by_name[block_name] = blocks.size();
      blocks.push_back({block_name, std::move(sw.nodes), line_no});
      continue;
    }
    if (sw.name.empty()) return where("SwitchName= (or BlockName=) required");
    if (!has_nodes && !has_switches) return where(fmt::format("switch '{}' has neither Switches= nor Nodes=", sw.name));
    if (sw.name == kNoTopologySwitch) {
      if (has_switches) return where("no-topology lists Switches=; topograph puts only Nodes= there");
      unplaced.insert(unplaced.end(), sw.nodes.begin(), sw.nodes.end());
      continue;
    }
    if (by_name.count(sw.name)) return where(fmt::format("switch '{}' defined twice", sw.name));
    by_name[sw.name] = lines.size();
    lines.push_back(std::move(sw));
  }
  if (!blocks.empty() && !lines.empty()) {
    return InvalidArgument(fmt::format(
        "topology.conf line {}: BlockName= (topology/block) and SwitchName= (topology/tree, line {}) in one file",
        blocks.front().line, lines.front().line));
  }
  if (!block_sizes.empty() && blocks.empty()) {
    return InvalidArgument(
        fmt::format("topology.conf line {}: BlockSizes= without any BlockName= line", block_sizes_line));
  }

  model::TopologySpec spec;
  spec.name = options.name;
  std::set<std::string> hosts_seen;
  auto add_host = [&](const std::string& host, const std::string& pod) {
    if (!hosts_seen.insert(host).second) return;
    model::NodeSpec n;
    n.id = host;
    n.kind = model::NodeKind::kHost;
    n.gpus = options.gpus_per_host;
    n.pod = pod;
    spec.nodes.push_back(std::move(n));
  };

  if (!blocks.empty()) {
    // Blocks aggregate in powers of two of the base block at each planning
    // size; the first aggregation level is what we call a pod.
    size_t per_pod = 0;
    if (block_sizes.size() >= 2) per_pod = static_cast<size_t>(block_sizes[1] / block_sizes[0]);
    model::NodeSpec spine;
    spine.id = options.block_spine;
    spine.kind = model::NodeKind::kSwitch;
    spine.tier = "spine";
    spine.level = model::kSpineLevel;
    spec.nodes.push_back(spine);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto& b = blocks[i];
      if (!block_sizes.empty() && b.nodes.size() > static_cast<size_t>(block_sizes[0])) {
        return InvalidArgument(
            fmt::format("topology.conf line {}: block '{}' has {} nodes, more than the base block "
                        "size {} (BlockSizes, line {})",
                        b.line, b.name, b.nodes.size(), block_sizes[0], block_sizes_line));
      }
      std::string pod = per_pod > 0 ? fmt::format("block-pod-{}", i / per_pod) : "";
      model::NodeSpec leaf;
      leaf.id = b.name;
      leaf.kind = model::NodeKind::kSwitch;
      leaf.tier = "leaf";
      leaf.level = model::kLeafLevel;
      leaf.pod = pod;
      spec.nodes.push_back(std::move(leaf));
      spec.links.push_back({b.name, options.block_spine, options.default_gbps, "", ""});
      for (const auto& host : b.nodes) {
        if (hosts_seen.count(host)) {
          return InvalidArgument(fmt::format("topology.conf line {}: node '{}' is in two blocks", b.line, host));
        }
        add_host(host, pod);
        spec.links.push_back({host, b.name, options.default_gbps, "", ""});
      }
    }
  } else {
    // Levels from tree depth: leaves are 1, parents 1 + max(child).
    std::vector<int> level(lines.size(), 0);  // 0 = not computed, -1 = on the stack
    std::function<Result<int>(size_t)> level_of = [&](size_t i) -> Result<int> {
      if (level[i] > 0) return level[i];
      if (level[i] < 0) {
        return InvalidArgument(
            fmt::format("topology.conf line {}: switch '{}' is part of a cycle", lines[i].line, lines[i].name));
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
    for (size_t i = 0; i < lines.size(); ++i) {
      auto l = level_of(i);
      if (!l) return tl::unexpected(l.error());
      model::NodeSpec n;
      n.id = lines[i].name;
      n.kind = model::NodeKind::kSwitch;
      n.tier = internal::TierNameOfLevel(*l);
      n.level = *l;
      spec.nodes.push_back(std::move(n));
    }
    for (const auto& sw : lines) {
      double gbps = options.default_gbps;
      if (sw.link_speed && options.link_speed_unit_gbps > 0) gbps = *sw.link_speed * options.link_speed_unit_gbps;
      for (const auto& child : sw.switches) spec.links.push_back({child, sw.name, gbps, "", ""});
      for (const auto& host : sw.nodes) {
        if (by_name.count(host)) {
          return InvalidArgument(
              fmt::format("topology.conf line {}: '{}' is a switch, listed in Nodes=", sw.line, host));
        }
        add_host(host, "");
        spec.links.push_back({host, sw.name, gbps, "", ""});
      }
    }
  }
  for (const auto& host : unplaced) {
    if (hosts_seen.count(host)) continue;  // placed elsewhere after all
    if (diagnostics) {
      diagnostics->Skip(fmt::format("node {}", host),
                        "listed under SwitchName=no-topology (topograph could not place it): no fabric links");
    }
  }
  if (spec.nodes.empty()) {
    return InvalidArgument(unplaced.empty()
                               ? "topology.conf: no SwitchName= or BlockName= line"
                               : fmt::format("topology.conf: every node ({}) is under no-topology; no switch to "
                                             "build a fabric from",
                                             unplaced.size()));
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

// A SlurmNumber that must be a whole number from 0 to 2^53 (job ids, Unix
// times in seconds): anything else names the field, instead of a cast
// whose result is undefined (found by the fuzzer: a start_time of 1.8e114).
std::optional<int64_t> SlurmWholeNumber(const ObjectReader& r, std::string_view key) {
  auto n = SlurmNumber(r, key);
  if (!n) return std::nullopt;
  constexpr double kMax = 9007199254740992.0;  // 2^53: every whole number below is exact in a double
  if (!(*n >= 0 && *n <= kMax) || *n != std::floor(*n)) {
    throw FieldError(r.Child(key), fmt::format("expected a whole number from 0 to 2^53, got {}", *n));
  }
  return static_cast<int64_t>(*n);
}

std::vector<std::string> JobStates(const ObjectReader& r) {
  if (!r.Has("job_state")) throw FieldError(r.Child("job_state"), "required");
  const json& v = r.Raw("job_state");
  if (v.is_string()) return {v.get<std::string>()};
  if (v.is_array()) return r.StringList("job_state");
  throw FieldError(r.Child("job_state"), fmt::format("expected a string or a list, got {}", codec::JsonTypeName(v)));
}

// The GPU count in one TRES string: "gres/gpu:8", "gres/gpu:h100:8",
// "gres:gpu:8" (per-node forms) or "cpu=16,mem=..,gres/gpu=8,gres/gpu:l40s=8"
// (allocation form, where the typed entry repeats the untyped one). nullopt
// when the string names no GPU at all.
std::optional<int> GpusInTres(std::string_view tres) {
  std::optional<int> untyped, typed;
  size_t pos = 0;
  while (pos < tres.size()) {
    size_t comma = tres.find(',', pos);
    std::string_view item = tres.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    auto gpu = item.find("gpu");
    if (gpu != std::string_view::npos) {
      size_t sep = item.find_last_of(":=");
      int v = 0;
      if (sep != std::string_view::npos && sep > gpu) {
        auto num = item.substr(sep + 1);
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
        if (ec != std::errc() || p != num.data() + num.size()) v = 0;
      }
      // "gres/gpu=8" or "gres/gpu:8" is untyped; "gres/gpu:h100:8" or
      // "gres/gpu:h100=8" carries a type between "gpu" and the count.
      bool has_type =
          item.substr(gpu + 3, sep == std::string_view::npos ? 0 : sep - gpu - 3).find(':') != std::string_view::npos;
      (has_type ? typed : untyped) = v;
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return untyped ? untyped : typed;
}

// Whether the job holds GPUs, from every TRES field squeue and slurmrestd
// report. nullopt when none of them is present (an old or trimmed output):
// nothing says either way.
std::optional<bool> HoldsGpus(const ObjectReader& r) {
  bool any_field = false;
  for (const char* key : {"tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket", "tres_alloc_str"}) {
    if (!r.Has(key) || !r.Raw(key).is_string()) continue;
    any_field = true;
    auto v = GpusInTres(r.Raw(key).get_ref<const std::string&>());
    if (v && *v != 0) return true;
  }
  if (!any_field) return std::nullopt;
  return false;
}

}  // namespace

Result<model::JobsSpec> ParseSlurmJobs(const nlohmann::json& doc, const SlurmJobsOptions& options,
                                       Diagnostics* diagnostics) {
  if (options.cpu_jobs != "skip" && options.cpu_jobs != "mark") {
    return InvalidArgument(fmt::format("slurm jobs: cpu_jobs '{}': expected skip or mark", options.cpu_jobs));
  }
  Diagnostics local;
  Diagnostics& diag = diagnostics ? *diagnostics : local;
  return internal::Guard("slurm jobs", [&]() -> model::JobsSpec {
    ObjectReader top(doc, "");
    // slurmrestd reports failures in-band (HTTP 200 is possible); an error
    // with an empty job list must not read as "nothing is running".
    if (top.Has("errors")) {
      const json& errors = top.Array("errors");
      if (!errors.empty()) {
        std::string what = errors[0].is_object()
                               ? errors[0].value("description", errors[0].value("error", errors[0].dump()))
                               : errors[0].dump();
        throw FieldError("errors[0]", fmt::format("slurm reported: {}", what));
      }
    }
    if (!top.Has("jobs")) throw FieldError("jobs", "required");
    model::JobsSpec spec;
    const json& list = top.Array("jobs");
    HostlistBudget hostlists;  // the nodes of every job of the reply together
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = fmt::format("jobs[{}]", i);
      // One job that cannot be read is skipped and named; the rest apply.
      try {
        if (!list[i].is_object()) throw FieldError(where, "expected an object");
        ObjectReader r(list[i], where);
        auto states = JobStates(r);
        if (std::find(states.begin(), states.end(), "RUNNING") == states.end()) continue;
        std::string nodes = r.StringOr("nodes", "");
        if (internal::Trim(nodes).empty()) continue;
        auto id = SlurmWholeNumber(r, "job_id");
        if (!id) throw FieldError(r.Child("job_id"), "required");
        std::string job_id = options.id_prefix + fmt::format("{}", *id);
        where = "job " + job_id;
        auto hosts = ExpandHostlist(nodes, hostlists);
        if (!hosts) throw FieldError(r.Child("nodes"), hosts.error().message);
        model::JobSpec j;
        j.id = job_id;
        j.name = r.StringOr("name", "");
        j.tenant = r.StringOr("account", "");
        j.hosts = std::move(*hosts);
        auto gpu = HoldsGpus(r);
        if (gpu && !*gpu) {
          if (options.cpu_jobs == "skip") {
            diag.Skip(where,
                      "CPU-only: no GPU in tres_per_node, tres_per_job, tres_per_task, tres_per_socket or "
                      "tres_alloc_str (cpu_jobs: skip)");
            continue;
          }
          j.labels["cpu_only"] = "true";
        }
        if (auto per_node = GpusInTres(r.StringOr("tres_per_node", "")); per_node && *per_node > 0) {
          j.gpus_per_host = *per_node;
        } else if (auto alloc = GpusInTres(r.StringOr("tres_alloc_str", "")); alloc && *alloc > 0) {
          // The allocation is the job's total; spread evenly over its hosts.
          j.gpus_per_host = std::max(1, *alloc / static_cast<int>(j.hosts.size()));
        }
        if (auto t = SlurmWholeNumber(r, "start_time"); t && *t > 0) j.started_at = *t;
        if (auto t = SlurmWholeNumber(r, "end_time"); t && *t > 0) j.expected_end = *t;
        for (auto [label, key] : {std::pair{"partition", "partition"},
                                  {"user", "user_name"},
                                  {"account", "account"},
                                  {"qos", "qos"},
                                  {"slurm_job_name", "name"}}) {
          if (r.Has(key) && r.Raw(key).is_string() && !r.Raw(key).get_ref<const std::string&>().empty()) {
            j.labels[label] = r.Raw(key).get<std::string>();
          }
        }
        j.profile_source = "default";
        spec.jobs.push_back(std::move(j));
      } catch (const FieldError& e) {
        diag.Skip(where, e.what());
      } catch (const nlohmann::json::exception& e) {
        diag.Skip(where, e.what());
      }
    }
    return spec;
  });
}

}  // namespace drainwise::connectors
