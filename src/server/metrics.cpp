#include "server/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace drainwise::server {

namespace {
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.9g}", v);
}
}  // namespace

std::string Metrics::RenderLabels(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + k + "=\"" + Escape(v) + "\"";
  return out;
}

void Metrics::DeclareCounter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "counter";
}

void Metrics::DeclareGauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "gauge";
}

void Metrics::DeclareHistogram(const std::string& name, const std::string& help, std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  f.help = help;
  f.type = "histogram";
  std::sort(buckets.begin(), buckets.end());
  f.buckets = std::move(buckets);
}

void Metrics::Add(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  families_[name].values[RenderLabels(labels)] += value;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  families_[name].values[RenderLabels(labels)] = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  auto& h = f.histograms[RenderLabels(labels)];
  if (h.counts.size() != f.buckets.size()) h.counts.assign(f.buckets.size(), 0);
  auto it = std::lower_bound(f.buckets.begin(), f.buckets.end(), value);
  if (it != f.buckets.end()) ++h.counts[static_cast<size_t>(it - f.buckets.begin())];
  ++h.count;
  h.sum += value;
}

void Metrics::OnScrape(std::function<void(Metrics&)> fn) {
  std::lock_guard lock(mu_);
  scrape_hooks_.push_back(std::move(fn));
}

std::string Metrics::Render() {
  std::vector<std::function<void(Metrics&)>> hooks;
  {
    std::lock_guard lock(mu_);
    hooks = scrape_hooks_;
  }
  for (auto& h : hooks) h(*this);
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", name, f.help);
    out += fmt::format("# TYPE {} {}\n", name, f.type);
    for (const auto& [labels, v] : f.values) {
      out += labels.empty() ? fmt::format("{} {}\n", name, Number(v))
                            : fmt::format("{}{{{}}} {}\n", name, labels, Number(v));
    }
    for (const auto& [labels, h] : f.histograms) {
      uint64_t cumulative = 0;
      std::string sep = labels.empty() ? "" : ",";
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += i < h.counts.size() ? h.counts[i] : 0;
        out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, Number(f.buckets[i]), cumulative);
      }
      out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, h.count);
      out += labels.empty() ? fmt::format("{}_sum {}\n{}_count {}\n", name, Number(h.sum), name, h.count)
                            : fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, Number(h.sum), name,
                                          labels, h.count);
    }
  }
  return out;
}

std::string_view MethodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "PUT", "POST", "DELETE"}) {
    if (method == known) return known;
  }
  return "other";
}

}  // namespace drainwise::server
