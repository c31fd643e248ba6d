// Prometheus metrics in the text exposition format 0.0.4, kept in-process:
// counters and histograms with labels, rendered on GET /metrics. No client
// library: the format is small and a dependency would outweigh it.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace drainwise::server {

class Metrics {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Declares a metric once (help text, type); Add/Observe/Set on an
  // undeclared name declare it as untyped.
  void DeclareCounter(const std::string& name, const std::string& help);
  void DeclareGauge(const std::string& name, const std::string& help);
  void DeclareHistogram(const std::string& name, const std::string& help, std::vector<double> buckets);

  void Add(const std::string& name, const Labels& labels, double value = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);

  // Gauges computed at scrape time (snapshot age, queue depth...).
  void OnScrape(std::function<void(Metrics&)> fn);

  std::string Render();

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    std::string help;
    std::string type = "untyped";
    std::vector<double> buckets;
    std::map<std::string, double> values;         // rendered label set -> value
    std::map<std::string, Histogram> histograms;  // rendered label set -> histogram
  };
  static std::string RenderLabels(const Labels& labels);

  std::mutex mu_;
  std::map<std::string, Family> families_;
  std::vector<std::function<void(Metrics&)>> scrape_hooks_;
};

// Label values for HTTP requests, bounded so a client cannot mint series:
// the route label is RoutedRequest::RouteName() (a table row or
// "unmatched"); the method label is the method when the route table knows it
// (GET, HEAD, PUT, POST, DELETE), else "other".
std::string_view MethodLabel(std::string_view method);

}  // namespace drainwise::server
