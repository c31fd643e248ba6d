// Early degradation end to end: a Prometheus-compatible fake on loopback
// answers /api/v1/query_range in Prometheus' own response format for a
// two-leaf, two-spine fabric, computing each answer from the query's
// start, end and step:
//   leaf0:up0 -> spine0:down0  corrected FEC rate doubling every 3 days, 2000/s now
//   leaf1:up1 -> spine1:down1  flapping: 2 carrier transitions every 4th hour = 6 flaps/day
//   leaf0:up1 -> spine1:down0  clean
//   leaf1:up0 -> spine0:down1  running at 25 of its 50 Gb/s (no trend: only slower)
// j-cross (h0 on leaf0, h2 on leaf1) crosses every spine link; j-local (h1,
// h4, both on leaf0) only its hosts' links.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "connectors/loopback_http_server.h"
#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

constexpr double kDay = 86400;

std::string QueryParam(const std::string& target, const std::string& key) {
  auto q = target.find('?');
  if (q == std::string::npos) return "";
  std::string rest = target.substr(q + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t amp = rest.find('&', pos);
    std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return "";
}

// One series: labels as snmp_exporter gives them (instance with port, ifName).
json Series(const std::string& instance, const std::string& if_name, double start, double end, double step,
            const std::function<double(double)>& f) {
  json values = json::array();
  for (double t = start; t <= end + 1e-6; t += step) values.push_back({t, fmt::format("{}", f(t))});
  return {{"metric", {{"instance", instance + ":9116"}, {"ifName", if_name}, {"job", "snmp"}}}, {"values", values}};
}

std::optional<connectors::loopback::LoopbackHttpServer::Response> FakePrometheus(const std::string& target) {
  if (target.rfind("/api/v1/query_range?", 0) != 0) return std::nullopt;
  std::string query = QueryParam(target, "query");
  double start = std::stod(QueryParam(target, "start"));
  double end = std::stod(QueryParam(target, "end"));
  std::string step_text = QueryParam(target, "step");
  double step = std::stod(step_text.substr(0, step_text.size() - 1));  // "3600s"
  auto zero = [](double) { return 0.0; };
  const char* links[][2] = {{"leaf0", "up0"}, {"leaf0", "up1"}, {"leaf1", "up0"}, {"leaf1", "up1"}};
  json result = json::array();
  for (const auto& [dev, port] : links) {
    std::string end_name = std::string(dev) + ":" + port;
    std::function<double(double)> f = zero;
    if (query.find("fec_corrected_total") != std::string::npos) {
      if (end_name == "leaf0:up0") f = [end](double t) { return 2000 * std::exp2((t - end) / (3 * kDay)); };
    } else if (query.find("carrier_changes_total") != std::string::npos) {
      if (end_name == "leaf1:up1") {
        f = [](double t) {
          auto h = static_cast<int64_t>(std::floor(t / 3600));
          return h % 4 == 0 ? 2.0 / 3600 : 0.0;
        };
      }
    } else if (query.find("errors_total") != std::string::npos) {
      // every link clean
    } else if (query.find("speed_bits") != std::string::npos) {
      f = [halved = end_name == "leaf1:up0"](double) { return halved ? 25e9 : 50e9; };
    } else {
      return connectors::loopback::LoopbackHttpServer::Response{
          400, R"({"status":"error","errorType":"bad_data","error":"unknown metric"})"};
    }
    result.push_back(Series(dev, port, start, end, step, f));
  }
  json doc = {{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}};
  return connectors::loopback::LoopbackHttpServer::Response{200, doc.dump()};
}

json Topology() {
  json nodes = json::array(), links = json::array();
  for (const char* s : {"spine0", "spine1"}) nodes.push_back({{"id", s}, {"kind", "switch"}, {"tier", "spine"}});
  for (const char* l : {"leaf0", "leaf1"}) nodes.push_back({{"id", l}, {"kind", "switch"}, {"tier", "leaf"}});
  const char* hosts[][2] = {{"h0", "leaf0"}, {"h1", "leaf0"}, {"h4", "leaf0"}, {"h2", "leaf1"}, {"h3", "leaf1"}};
  int port = 0;
  for (const auto& [h, leaf] : hosts) {
    nodes.push_back({{"id", h}, {"kind", "host"}, {"gpus", 8}});
    links.push_back({{"a", h}, {"b", leaf}, {"gbps", 100}, {"a_port", "eth0"}, {"b_port", fmt::format("p{}", port++)}});
  }
  links.push_back({{"a", "leaf0"}, {"b", "spine0"}, {"gbps", 50}, {"a_port", "up0"}, {"b_port", "down0"}});
  links.push_back({{"a", "leaf0"}, {"b", "spine1"}, {"gbps", 50}, {"a_port", "up1"}, {"b_port", "down0"}});
  links.push_back({{"a", "leaf1"}, {"b", "spine0"}, {"gbps", 50}, {"a_port", "up0"}, {"b_port", "down1"}});
  links.push_back({{"a", "leaf1"}, {"b", "spine1"}, {"gbps", 50}, {"a_port", "up1"}, {"b_port", "down1"}});
  return {{"format", "drainwise.topology/v1"}, {"name", "health"}, {"nodes", nodes}, {"links", links}};
}

json Jobs() {
  json iteration = {{"compute_ms", 100},
                    {"overlap", 0},
                    {"collectives", {{{"kind", "allreduce"}, {"algorithm", "ring"}, {"bytes", 2e9}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "j-cross"}, {"hosts", {"h0", "h2"}}, {"iteration", iteration}},
            {{"id", "j-local"}, {"hosts", {"h1", "h4"}}, {"iteration", iteration}}}}};
}

const json* FindLink(const json& links, const std::string& name) {
  for (const auto& l : links) {
    if (l["link"] == name) return &l;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("link health from Prometheus range queries: ranking, at-risk jobs, network or GPU, metrics") {
  connectors::loopback::LoopbackHttpServer prometheus;
  prometheus.SetFallback(FakePrometheus);
  std::string dir = testing::MakeTempDir();
  json cfg = {{"link_health",
               {{"prometheus",
                 {{"url", prometheus.base_url()},
                  {"window_s", 14 * kDay},
                  {"step_s", 3600},
                  {"refresh_s", 0.5},
                  {"timeout_s", 5},
                  {"queries",
                   {{{"signal", "fec_corrected"}, {"query", "rate(fec_corrected_total[$step])"}},
                    {{"signal", "carrier_transitions"}, {"query", "rate(carrier_changes_total[$step])"}},
                    {{"signal", "in_errors"}, {"query", "rate(if_in_errors_total[$step])"}},
                    {{"signal", "speed_bps"}, {"query", "speed_bits"}}}}}},
                {"history", {{"max_series", 1000}}},
                {"trends", {{"fec_corrected_per_s", 1e4}}}}}};
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", Topology().dump()).status / 100 == 2);
  auto put_jobs = d.Call("PUT", "/v1/jobs", Jobs().dump());
  REQUIRE_MESSAGE(put_jobs.status / 100 == 2, put_jobs.body);

  const std::string fec = "leaf0:up0 -> spine0:down0";
  const std::string flap = "leaf1:up1 -> spine1:down1";
  const std::string clean = "leaf0:up1 -> spine1:down0";
  const std::string halved = "leaf1:up0 -> spine0:down1";
  json health;
  REQUIRE_MESSAGE(testing::Eventually([&] {
                    auto r = d.Get("/v1/links/health");
                    if (r.status != 200) return false;
                    health = r.Json();
                    return health["links"].size() == 4 && health["links"][0]["score"].get<double>() > 0;
                  }),
                  (health.dump() + d.log()));
  // Ranked: the flapping link (57.4) and the FEC link (50.7) above the clean one (0).
  const auto& links = health["links"];
  CHECK(links[0]["link"] == flap);
  CHECK(links[1]["link"] == fec);
  CHECK(links[2]["score"].get<double>() == 0);
  CHECK(links[3]["score"].get<double>() == 0);

  // FEC: doubling every 3 days, 2000/s now, threshold 1e4/s: 3 d x log2(5) = 6.97 days;
  // score 40 + 29 exp(-6.97 / 7) = 50.7.
  const json* f = FindLink(links, fec);
  REQUIRE(f);
  CHECK((*f)["severity"] == "warning");
  REQUIRE((*f)["findings"].size() == 1);
  const auto& ff = (*f)["findings"][0];
  CHECK(ff["kind"] == "error_growth");
  CHECK(ff["signal"] == "fec_corrected");
  CHECK(ff["evidence"]["doubling_time_days"].get<double>() == doctest::Approx(3).epsilon(1e-3));
  CHECK(ff["evidence"]["level"].get<double>() == doctest::Approx(2000).epsilon(1e-3));
  CHECK(ff["evidence"]["time_to_threshold_days"].get<double>() == doctest::Approx(3 * std::log2(5.0)).epsilon(1e-3));
  // 14 x 24 + 1 = 337 hourly points, averaged in pairs to stay within max_points (200): 169.
  CHECK(ff["evidence"]["points"] == 169);
  CHECK((*f)["score"].get<double>() == doctest::Approx(40 + 29 * std::exp(-3 * std::log2(5.0) / 7)).epsilon(1e-3));
  // Flapping: 14 days x 6 flaps per day (up to the one-step edges of the window).
  const json* fl = FindLink(links, flap);
  REQUIRE(fl);
  CHECK((*fl)["severity"] == "warning");
  CHECK((*fl)["findings"][0]["kind"] == "flapping");
  CHECK((*fl)["findings"][0]["evidence"]["per_day"].get<double>() == doctest::Approx(6).epsilon(0.03));
  // The clean link raises nothing.
  const json* c = FindLink(links, clean);
  REQUIRE(c);
  CHECK((*c)["findings"].empty());
  CHECK((*c)["severity"] == "none");
  CHECK(health["counts"]["warning"] == 2);
  auto text = d.Get("/v1/links/health?format=text");
  CHECK(text.status == 200);
  CHECK(text.body.find("doubling every 3.0 days") != std::string::npos);
  // One link's history, for the console's chart.
  auto one = d.Get("/v1/links/health?link=leaf0%3Aup0%20-%3E%20spine0%3Adown0");
  REQUIRE_MESSAGE(one.status == 200, one.body);
  CHECK(one.Json()["history"]["leaf0:up0"]["fec_corrected"].size() > 100);

  // Paths carry each link's health.
  auto paths = d.Get("/v1/jobs/j-cross/paths").Json();
  CHECK(paths["degrading_links"] == 2);
  const json* p = FindLink(paths["links"], fec);
  REQUIRE(p);
  CHECK((*p)["health"]["severity"] == "warning");

  // At risk: j-cross (crosses both degrading links), with the drain what-ifs; j-local is not.
  auto risk = d.Get("/v1/jobs/at-risk");
  REQUIRE_MESSAGE(risk.status == 200, risk.body);
  auto rj = risk.Json();
  REQUIRE(rj["jobs"].size() == 1);
  CHECK(rj["jobs"][0]["job"] == "j-cross");
  CHECK(rj["jobs"][0]["links"].size() == 2);
  const json* rl = FindLink(rj["jobs"][0]["links"], fec);
  REQUIRE(rl);
  CHECK((*rl)["drain_link"]["job"]["connected"] == true);
  // Draining one of leaf0's two uplinks leaves half the paths.
  CHECK((*rl)["drain_link"]["job"]["path_fraction"].get<double>() == doctest::Approx(0.5));
  CHECK((*rl)["drain_link"]["request"]["drain"]["links"][0]["a_port"] == "up0");
  CHECK((*rl)["drain_switch"].size() == 2);  // leaf0 and spine0
  CHECK(d.Get("/v1/jobs/at-risk?format=text").body.find("j-cross") != std::string::npos);

  // Network or GPU? Predictions first, then observations.
  auto cross = d.Get("/v1/jobs/j-cross/network").Json();
  REQUIRE_MESSAGE(cross.contains("predicted_degraded_s"), cross.dump());
  CHECK(cross["verdict"] == "no_observation");
  double nominal = cross["predicted_nominal_s"];
  double degraded = cross["predicted_degraded_s"];
  CHECK(degraded > nominal * 1.05);  // the halved uplink slows j-cross
  auto local = d.Get("/v1/jobs/j-local/network").Json();
  double local_nominal = local["predicted_nominal_s"];
  CHECK(local["predicted_degraded_s"].get<double>() == doctest::Approx(local_nominal));  // its links are healthy
  json obs = {
      {"observations",
       {{{"job", "j-cross"}, {"iteration_s", degraded}}, {{"job", "j-local"}, {"iteration_s", 1.5 * local_nominal}}}}};
  auto posted = d.Call("POST", "/v1/observations", obs.dump());
  REQUIRE_MESSAGE(posted.status == 201, posted.body);
  cross = d.Get("/v1/jobs/j-cross/network").Json();
  CHECK(cross["verdict"] == "network");
  CHECK(cross["explained_fraction"].get<double>() == doctest::Approx(1));
  REQUIRE(cross["links"].size() >= 1);
  CHECK(cross["links"][0]["link"] == halved);
  local = d.Get("/v1/jobs/j-local/network").Json();
  CHECK(local["verdict"] == "not_network");
  CHECK(local["explained_fraction"].get<double>() == doctest::Approx(0));

  // Metrics: risk scores and the at-risk job count.
  auto metrics = d.Get("/metrics").body;
  CHECK(metrics.find("drainwise_jobs_at_risk 1") != std::string::npos);
  CHECK(metrics.find("drainwise_link_health_score{link=\"" + fec + "\"}") != std::string::npos);
  CHECK(metrics.find("drainwise_links_degrading{severity=\"warning\"} 2") != std::string::npos);
  // The fake saw range queries with a 14-day window at a 1-hour step.
  bool saw = false;
  for (const auto& r : prometheus.requests()) {
    if (r.target.find("query_range") != std::string::npos && r.target.find("step=3600s") != std::string::npos) {
      double s = std::stod(QueryParam(r.target, "start")), e = std::stod(QueryParam(r.target, "end"));
      saw = saw || e - s == 14 * kDay;
    }
  }
  CHECK(saw);
  d.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("without a link_health section the routes say so") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto r = d.Get("/v1/links/health");
  CHECK(r.status == 404);
  CHECK(r.body.find("link_health") != std::string::npos);
  CHECK(d.Get("/v1/jobs/at-risk").status == 404);
}

TEST_CASE("gnmic file output feeds the bounded history: optical power drifting towards the receiver limit") {
  // 11 daily transceiver readings of leaf0's up0 optic, -3 dBm falling
  // 0.5 dB/day to -8 dBm now: 2 dB above the -10 dBm limit (inside the 3 dB
  // margin) -> warning, the limit 2 / 0.5 = 4 days away.
  std::string dir = testing::MakeTempDir();
  const double now =
      std::floor(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  json events = json::array();
  for (int k = 0; k <= 10; ++k) {
    double t = now - (10 - k) * kDay;
    events.push_back({{"name", "optics"},
                      {"timestamp", fmt::format("{:.0f}", t * 1e9)},
                      {"tags", {{"component_name", "up0"}, {"source", "leaf0:57400"}}},
                      {"values",
                       {{"/components/component/transceiver/physical-channels/channel/state/input-power/instant",
                         fmt::format("{}", -3 - 0.5 * k)}}}});
  }
  std::ofstream(dir + "/gnmic.json") << events.dump();
  json cfg = {{"link_health", {{"gnmic_files", {dir + "/gnmic.json"}}, {"history", {{"bucket_s", 3600}}}}}};
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", Topology().dump()).status / 100 == 2);
  json health;
  REQUIRE_MESSAGE(testing::Eventually([&] {
                    health = d.Get("/v1/links/health").Json();
                    return health.contains("links") && health["links"].size() == 1 &&
                           !health["links"][0]["findings"].empty();
                  }),
                  (health.dump() + d.log()));
  const auto& l = health["links"][0];
  CHECK(l["link"] == "leaf0:up0 -> spine0:down0");
  CHECK(health["source"] == "history");
  const auto& f = l["findings"][0];
  CHECK(f["kind"] == "optical_drift");
  CHECK(f["severity"] == "warning");
  CHECK(f["evidence"]["level"].get<double>() == doctest::Approx(-8));
  CHECK(f["evidence"]["slope_per_day"].get<double>() == doctest::Approx(-0.5));
  CHECK(f["evidence"]["time_to_threshold_days"].get<double>() == doctest::Approx(4));
  CHECK(f["evidence"]["points"] == 11);
  d.Stop();
  // The readings went to the daemon's own history file, next to its database.
  CHECK(std::filesystem::exists(d.db_path() + ".link-history"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("config check refuses a bad link_health section, naming the field") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/config.json";
  std::ofstream(path) << json{{"link_health", {{"prometheus", {{"url", "http://127.0.0.1:9"}, {"step_s", 0}}}}}}.dump();
  std::string out, err;
  CHECK(testing::RunDrainwise({"config", "check", path}, &out, &err) == 1);
  CHECK_MESSAGE((out + err).find("link_health.prometheus.step_s") != std::string::npos, (out + err));
  std::ofstream(path) << json{{"link_health", {{"trends", {{"fec_corrected_per_s", -1}}}}}}.dump();
  CHECK(testing::RunDrainwise({"config", "check", path}, &out, &err) == 1);
  CHECK_MESSAGE((out + err).find("link_health.trends.fec_corrected_per_s") != std::string::npos, (out + err));
  std::filesystem::remove_all(dir);
}
