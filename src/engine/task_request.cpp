// The task-level request codec (contract in task_request.h).
#include "engine/task_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "model/drain.h"

namespace drainwise::engine {

namespace {

using nlohmann::json;

Status OnlyKnown(const json& obj, std::string_view where, const std::set<std::string>& known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!known.count(it.key())) {
      return InvalidArgument(
          fmt::format("{}{}: unknown field", where.empty() ? "" : std::string(where) + ".", it.key()));
    }
  }
  return {};
}

Result<double> Number(const json& obj, const char* key, std::string_view field, double fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_number()) return InvalidArgument(fmt::format("{}: must be a number", field));
  return it->get<double>();
}

}  // namespace

Result<double> ParseDurationSeconds(const json& v, std::string_view field) {
  double seconds = 0;
  if (v.is_number()) {
    seconds = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    double unit = 1;
    std::string_view digits = s;
    if (!s.empty()) {
      switch (s.back()) {
        case 'd':
          unit = 86400;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'm':
          unit = 60;
          break;
        case 's':
          unit = 1;
          break;
        default:
          unit = 0;
          break;
      }
      if (unit != 0) {
        digits.remove_suffix(1);
      } else {
        unit = 1;
      }
    }
    double n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return InvalidArgument(
          fmt::format("{}: '{}' is not a duration (a number followed by d, h, m or s, e.g. \"365d\")", field, s));
    }
    seconds = n * unit;
  } else {
    return InvalidArgument(fmt::format("{}: must be a duration string (\"365d\") or a number of seconds", field));
  }
  if (!(seconds > 0) || !std::isfinite(seconds)) return InvalidArgument(fmt::format("{}: must be > 0", field));
  return seconds;
}

std::vector<sim::TaskJob> TraceFromSacct(const std::vector<connectors::SacctJob>& jobs,
                                         connectors::Diagnostics* diagnostics) {
  std::vector<sim::TaskJob> out;
  int64_t t0 = 0;
  bool first = true;
  for (const auto& j : jobs) {
    if (j.elapsed_s <= 0) continue;
    if (first || j.submit < t0) t0 = j.submit;
    first = false;
  }
  for (const auto& j : jobs) {
    if (j.elapsed_s <= 0) {
      if (diagnostics) diagnostics->Skip("job " + j.id, "no elapsed time to replay");
      continue;
    }
    sim::TaskJob t;
    t.id = j.id;
    t.submit_s = static_cast<double>(j.submit - t0);
    t.hosts = j.nodes;
    t.work_s = static_cast<double>(j.elapsed_s);
    t.limit_s = static_cast<double>(std::max(j.limit_s, j.elapsed_s));
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const sim::TaskJob& a, const sim::TaskJob& b) { return a.submit_s < b.submit_s; });
  return out;
}

json ApplyTaskDefaults(const json& defaults, const json& request) {
  if (!defaults.is_object() || defaults.empty() || !request.is_object()) return request;
  json out = defaults;
  for (auto it = request.begin(); it != request.end(); ++it) {
    if (it.key() == "reliability" && it->is_object() && out.contains("reliability") && out["reliability"].is_object()) {
      for (auto k = it->begin(); k != it->end(); ++k) out["reliability"][k.key()] = k.value();
    } else {
      out[it.key()] = it.value();
    }
  }
  return out;
}

Status CheckTaskDefaults(const json& defaults) {
  if (defaults.is_null() || (defaults.is_object() && defaults.empty())) return {};
  if (!defaults.is_object()) return InvalidArgument("task: expected an object");
  for (const char* key : {"mode", "drains", "trace"}) {
    if (defaults.contains(key)) {
      return InvalidArgument(fmt::format("task.{}: not a default: give it in each request", key));
    }
  }
  const model::Topology empty;
  auto run = ParseTaskRequest(defaults, empty);
  if (!run) return tl::unexpected(run.error().Wrap("task"));
  // The simulator's cross-field rule, checked here so a bad file fails at load.
  for (const auto& [kind, r] : run->options.reliability) {
    if (r.mtbf_h > 0 && r.mttr_h <= 0) {
      return InvalidArgument(fmt::format("task.reliability.{}: mttr_h must be > 0 when mtbf_h is", kind));
    }
  }
  return {};
}

Result<TaskRun> ParseTaskRequest(const json& r, const model::Topology& topology) {
  if (!r.is_object()) return InvalidArgument("request: must be a JSON object");
  if (auto ok = OnlyKnown(r, "",
                          {"mode", "horizon", "seed", "sample_interval", "reliability", "min_nics_up", "comm_fraction",
                           "checkpoint_interval_s", "restart_cost_s", "backfill_depth", "drains", "trace"});
      !ok) {
    return tl::unexpected(ok.error());
  }
  if (r.contains("mode") && r["mode"] != "task") return InvalidArgument("mode: must be \"task\" here");
  TaskRun run;
  sim::TaskOptions& o = run.options;
  if (r.contains("horizon")) {
    auto h = ParseDurationSeconds(r["horizon"], "horizon");
    if (!h) return tl::unexpected(h.error());
    o.horizon_s = *h;
  }
  if (r.contains("sample_interval")) {
    auto s = ParseDurationSeconds(r["sample_interval"], "sample_interval");
    if (!s) return tl::unexpected(s.error());
    o.sample_interval_s = *s;
  }
  if (o.horizon_s > 36500 * 86400.0) return InvalidArgument("horizon: at most 36500d (100 years)");
  if (o.horizon_s / o.sample_interval_s > 100'000) {
    return InvalidArgument("sample_interval: at most 100,000 steps per horizon");
  }
  if (r.contains("seed")) {
    if (!r["seed"].is_number_unsigned()) return InvalidArgument("seed: must be a non-negative integer");
    o.seed = r["seed"].get<uint64_t>();
  }
  if (r.contains("reliability")) {
    const json& rel = r["reliability"];
    if (!rel.is_object()) return InvalidArgument("reliability: must be an object of kind -> {mtbf_h, mttr_h}");
    for (auto it = rel.begin(); it != rel.end(); ++it) {
      const std::string field = "reliability." + it.key();
      if (!it->is_object()) return InvalidArgument(field + ": must be {\"mtbf_h\", \"mttr_h\"}");
      if (auto ok = OnlyKnown(*it, field, {"mtbf_h", "mttr_h"}); !ok) return tl::unexpected(ok.error());
      const sim::Reliability def = sim::DefaultReliability(it.key());
      auto mtbf = Number(*it, "mtbf_h", field + ".mtbf_h", def.mtbf_h);
      auto mttr = Number(*it, "mttr_h", field + ".mttr_h", def.mttr_h);
      if (!mtbf) return tl::unexpected(mtbf.error());
      if (!mttr) return tl::unexpected(mttr.error());
      o.reliability[it.key()] = {*mtbf, *mttr};
    }
  }
  struct NumField {
    const char* key;
    double* out;
  };
  double min_nics = o.min_nics_up, depth = o.backfill_depth;
  for (NumField f : {NumField{"min_nics_up", &min_nics}, NumField{"comm_fraction", &o.comm_fraction},
                     NumField{"checkpoint_interval_s", &o.checkpoint_interval_s},
                     NumField{"restart_cost_s", &o.restart_cost_s}, NumField{"backfill_depth", &depth}}) {
    auto v = Number(r, f.key, f.key, *f.out);
    if (!v) return tl::unexpected(v.error());
    *f.out = *v;
  }
  if (min_nics < 0 || min_nics != std::floor(min_nics)) return InvalidArgument("min_nics_up: must be an integer >= 0");
  if (depth < 0 || depth != std::floor(depth) || depth > 1e6) {
    return InvalidArgument("backfill_depth: must be an integer in [0, 1000000]");
  }
  o.min_nics_up = static_cast<int>(min_nics);
  o.backfill_depth = static_cast<int>(depth);

  if (r.contains("drains")) {
    if (!r["drains"].is_array()) return InvalidArgument("drains: must be a list of drain windows");
    for (size_t i = 0; i < r["drains"].size(); ++i) {
      const json& d = r["drains"][i];
      const std::string field = fmt::format("drains[{}]", i);
      if (!d.is_object()) return InvalidArgument(field + ": must be an object");
      if (auto ok = OnlyKnown(d, field, {"start", "end", "switches", "links", "migrate", "label"}); !ok) {
        return tl::unexpected(ok.error());
      }
      if (!d.contains("start") || !d.contains("end")) return InvalidArgument(field + ": start and end are required");
      auto start = ParseDurationSeconds(d["start"], field + ".start");
      auto end = ParseDurationSeconds(d["end"], field + ".end");
      if (!start) return tl::unexpected(start.error());
      if (!end) return tl::unexpected(end.error());
      if (*end <= *start) return InvalidArgument(field + ": end must be after start");
      model::DrainSpec spec;
      try {
        if (d.contains("switches")) spec.switches = d["switches"].get<std::vector<std::string>>();
        if (d.contains("links")) {
          for (const json& l : d["links"]) {
            spec.links.push_back({l.at("a").get<std::string>(), l.at("b").get<std::string>(), l.value("a_port", "")});
          }
        }
      } catch (const json::exception&) {
        return InvalidArgument(field + ": switches must be names, links {\"a\", \"b\", \"a_port\"?}");
      }
      if (spec.empty()) return InvalidArgument(field + ": drains nothing (give switches or links)");
      auto drain = model::ResolveDrain(spec, topology);
      if (!drain) return tl::unexpected(drain.error().Wrap(field));
      sim::DrainWindow w;
      w.start_s = *start;
      w.end_s = *end;
      w.drain = std::move(*drain);
      if (d.contains("migrate")) {
        if (!d["migrate"].is_boolean()) return InvalidArgument(field + ".migrate: must be true or false");
        w.migrate = d["migrate"].get<bool>();
      }
      if (d.contains("label") && d["label"].is_string()) w.label = d["label"].get<std::string>();
      o.drains.push_back(std::move(w));
    }
  }

  sim::SyntheticTraceOptions syn;
  syn.seed = o.seed;
  syn.horizon_s = o.horizon_s;
  syn.total_hosts = static_cast<int>(topology.hosts().size());
  bool synthetic = true;
  if (r.contains("trace")) {
    const json& t = r["trace"];
    if (!t.is_object() || t.size() != 1 || !(t.contains("synthetic") || t.contains("sacct"))) {
      return InvalidArgument("trace: must be {\"synthetic\": {...}} or {\"sacct\": <sacct --json output>}");
    }
    if (t.contains("sacct")) {
      synthetic = false;
      auto jobs = connectors::ParseSacctJson(t["sacct"].dump(), &run.trace_diagnostics);
      if (!jobs) return tl::unexpected(jobs.error().Wrap("trace.sacct"));
      run.trace = TraceFromSacct(*jobs, &run.trace_diagnostics);
      run.trace_source =
          fmt::format("sacct ({} jobs, {} left out)", run.trace.size(), run.trace_diagnostics.skipped.size());
    } else {
      const json& s = t["synthetic"];
      if (!s.is_object()) return InvalidArgument("trace.synthetic: must be an object");
      if (auto ok = OnlyKnown(s, "trace.synthetic", {"seed", "load", "max_hosts", "min_work_s", "max_work_s"}); !ok) {
        return tl::unexpected(ok.error());
      }
      if (s.contains("seed")) {
        if (!s["seed"].is_number_unsigned())
          return InvalidArgument("trace.synthetic.seed: must be a non-negative integer");
        syn.seed = s["seed"].get<uint64_t>();
      }
      double max_hosts = syn.max_hosts;
      for (NumField f : {NumField{"load", &syn.load}, NumField{"max_hosts", &max_hosts},
                         NumField{"min_work_s", &syn.min_work_s}, NumField{"max_work_s", &syn.max_work_s}}) {
        auto v = Number(s, f.key, std::string("trace.synthetic.") + f.key, *f.out);
        if (!v) return tl::unexpected(v.error());
        *f.out = *v;
      }
      if (!(syn.load > 0 && syn.load <= 2)) return InvalidArgument("trace.synthetic.load: must be in (0, 2]");
      if (!(max_hosts >= 1)) return InvalidArgument("trace.synthetic.max_hosts: must be >= 1");
      if (!(syn.min_work_s > 0) || !(syn.max_work_s >= syn.min_work_s)) {
        return InvalidArgument("trace.synthetic: need 0 < min_work_s <= max_work_s");
      }
      syn.max_hosts = static_cast<int>(max_hosts);
    }
  }
  if (synthetic) {
    // Bounded before generating: a request must not make the daemon allocate
    // gigabytes (each job is about 100 bytes here and 200 in the simulation).
    constexpr double kMaxJobs = 1'000'000;
    const double expected = sim::ExpectedSyntheticJobs(syn);
    if (expected > kMaxJobs) {
      return InvalidArgument(fmt::format(
          "trace.synthetic: about {:.0f} jobs over the horizon, more than the limit of 1,000,000 (shorten the horizon "
          "or lower the load)",
          expected));
    }
    run.trace = sim::GenerateSyntheticTrace(syn);
    run.trace_source = fmt::format("synthetic (seed {}, load {}, {} jobs)", syn.seed, syn.load, run.trace.size());
  }
  return run;
}

}  // namespace drainwise::engine
