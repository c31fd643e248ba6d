// End to end: the packet level (ns-3) as a background run of the real
// daemon: 202 + Location, progress, result stored as an assessment of kind
// "packet", cancel; and `"modes":["packet"]` in an assessment, answered by
// starting such a run. On a 2 x 2 fabric (tests/testing/fabrics.h).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "sim/packet/packet_sim.h"
#include "testing/daemon.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// h0 -> h2 and h1 -> h3, `bytes` each: both cross the spines.
json CrossJobs(double bytes) {
  json flows =
      json::array({{{"src", "h0"}, {"dst", "h2"}, {"bytes", bytes}}, {{"src", "h1"}, {"dst", "h3"}, {"bytes", bytes}}});
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "cross"},
             {"hosts", {"h0", "h1", "h2", "h3"}},
             {"gpus_per_host", 1},
             {"iteration", {{"compute_ms", 0}, {"collectives", {{{"kind", "flows"}, {"flows", flows}}}}}}}}}};
}

void Load(testing::Daemon& d, double bytes) {
  // 50G uplinks, 100G NICs: a leaf's two flows need both spines.
  REQUIRE(d.Call("PUT", "/v1/topology", testing::TwoByTwo(50, 100).dump()).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", CrossJobs(bytes).dump()).status == 201);
}

// The daemon's child processes running `drainwise packet-worker`, from /proc.
int PacketWorkers(int daemon_pid) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // gone meanwhile
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != daemon_pid || state == "Z") continue;
    std::ifstream cmdline(e.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find(std::string("packet-worker\0", 14)) != std::string::npos) ++n;
  }
  return n;
}

json WaitDone(testing::Daemon& d, const std::string& location) {
  json s;
  CHECK(testing::Eventually(
      [&] {
        s = d.Get(location).Json();
        return s.value("state", "") != "running";
      },
      std::chrono::seconds(120)));
  return s;
}

}  // namespace

TEST_CASE("a packet-level run in the background: 202, progress, result stored as an assessment") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  if (!sim::PacketLevelAvailable()) {
    auto r = d.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine1"]}})");
    CHECK(r.status == 501);
    CHECK(r.Json()["detail"].get<std::string>().find("libns3-dev") != std::string::npos);
    return;
  }
  Load(d, 1e6);
  auto started = d.Call("POST", "/v1/simulations",
                        R"({"mode":"packet","drain":{"switches":["spine1"]},"routing":"spray","ticket":"CHG-18"})");
  REQUIRE_MESSAGE(started.status == 202, started.body);
  const std::string location = started.headers["location"];
  CHECK(started.Json()["mode"] == "packet");
  json done = WaitDone(d, location);
  REQUIRE_MESSAGE(done["state"] == "done", done.dump());
  CHECK(done["progress"] == 1.0);
  const json& result = done["result"];
  REQUIRE(result["jobs"].size() == 1);
  const json& job = result["jobs"][0];
  CHECK(job["id"] == "cross");
  // Baseline: a leaf's two flows share its 2 x 50G of uplinks, 50G each;
  // drained: one 50G uplink, 25G each: twice the time (+100 %, within the
  // golden test's tolerance for DCTCP's tail).
  CHECK(job["slowdown_pct"].get<double>() > 80);
  CHECK(job["slowdown_pct"].get<double>() < 120);
  CHECK(job["flow"]["slowdown_pct"].is_number());
  CHECK(result["blast_radius"]["hosts"] == 4);
  // Stored like an assessment, of kind "packet", with its request.
  const std::string id = result["assessment_id"].get<std::string>();
  auto stored = d.Get("/v1/assessments/" + id);
  REQUIRE(stored.status == 200);
  CHECK(stored.Json()["kind"] == "packet");
  CHECK(stored.Json()["ticket"] == "CHG-18");
  CHECK(stored.Json()["jobs"][0]["slowdown_pct"] == job["slowdown_pct"]);
  auto text = d.Get("/v1/assessments/" + id + "?format=text");
  CHECK(text.body.find("FLOW_SLOWDOWN") != std::string::npos);
  CHECK(d.Get(location + "?format=text").body.find("PACKET_SLOWDOWN") != std::string::npos);
  CHECK(d.log().find("packet run: done") != std::string::npos);
}

TEST_CASE("a packet-level run reports progress and stops when cancelled; a bad one names the field") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  if (!sim::PacketLevelAvailable()) return;
  Load(d, 4e9);  // 4 GB per flow: over a second of simulated time, minutes of wall time
  auto a = d.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine1"]}})");
  REQUIRE_MESSAGE(a.status == 202, a.body);
  const std::string location = a.headers["location"];
  json s;
  CHECK(testing::Eventually([&] {
    s = d.Get(location).Json();
    return s.value("progress", 0.0) > 0;
  }));
  CHECK(s["state"] == "running");
  // Baseline and drained at once, each in a `drainwise packet-worker` the
  // daemon spawned (it never forks itself: its other threads' locks).
  CHECK(testing::Eventually([&] { return PacketWorkers(d.pid()) == 2; }));
  auto del = d.Call("DELETE", location);
  CHECK(del.status == 202);
  CHECK(testing::Eventually([&] { return d.Get(location).Json().value("state", "") == "cancelled"; }));
  CHECK(d.Get(location).Json()["error"]["code"] == "cancelled");
  CHECK(PacketWorkers(d.pid()) == 0);  // killed and reaped before the run was marked cancelled

  auto bad = d.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine9"]}})");
  CHECK(bad.status == 400);
  CHECK(bad.Json()["detail"].get<std::string>().find("spine9") != std::string::npos);
  bad = d.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine1"]},"max_hosts":100000})");
  CHECK(bad.status == 400);
  CHECK(bad.Json()["detail"].get<std::string>().find("max_hosts") != std::string::npos);
}

TEST_CASE("drainwise simulate --mode packet: per-job slowdowns and the packet vs flow table") {
  // 16 hosts at 100G, 8 per leaf, two spines at 400G from each leaf; a
  // permutation h_i -> h_(i+8) of 1 MB flows; spine1 drained halves the
  // uplinks: about twice the time at both levels (packet_golden_test.cpp
  // derives it at 4 MB).
  json nodes = json::array({{{"id", "spine0"}, {"kind", "switch"}, {"tier", "spine"}},
                            {{"id", "spine1"}, {"kind", "switch"}, {"tier", "spine"}},
                            {{"id", "leaf0"}, {"kind", "switch"}, {"tier", "leaf"}},
                            {{"id", "leaf1"}, {"kind", "switch"}, {"tier", "leaf"}}});
  json links = json::array();
  for (const char* l : {"leaf0", "leaf1"}) {
    for (const char* s : {"spine0", "spine1"}) links.push_back({{"a", l}, {"b", s}, {"gbps", 400}});
  }
  json hosts = json::array(), flows = json::array();
  for (int h = 0; h < 16; ++h) {
    const std::string id = "h" + std::to_string(h);
    nodes.push_back({{"id", id}, {"kind", "host"}, {"gpus", 1}});
    links.push_back({{"a", id}, {"b", h < 8 ? "leaf0" : "leaf1"}, {"gbps", 100}});
    hosts.push_back(id);
    flows.push_back({{"src", id}, {"dst", "h" + std::to_string((h + 8) % 16)}, {"bytes", 1e6}});
  }
  const std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/t.json")
      << json{{"format", "drainwise.topology/v1"}, {"name", "16"}, {"nodes", nodes}, {"links", links}}.dump();
  std::ofstream(dir + "/j.json")
      << json{{"format", "drainwise.jobs/v1"},
              {"jobs",
               {{{"id", "perm"},
                 {"hosts", hosts},
                 {"gpus_per_host", 1},
                 {"iteration", {{"compute_ms", 0}, {"collectives", {{{"kind", "flows"}, {"flows", flows}}}}}}}}}}
             .dump();
  std::string out, err;
  const int code = testing::RunDrainwise({"simulate", "--topology", dir + "/t.json", "--jobs", dir + "/j.json",
                                          "--switch", "spine1", "--mode", "packet", "--format", "json"},
                                         &out, &err);
  if (!sim::PacketLevelAvailable()) {
    CHECK(code != 0);
    CHECK(err.find("libns3-dev") != std::string::npos);
    return;
  }
  REQUIRE_MESSAGE(code == 0, err);
  json doc = json::parse(out);
  REQUIRE(doc["jobs"].size() == 1);
  const double packet = doc["jobs"][0]["slowdown_pct"].get<double>();
  const double flow = doc["jobs"][0]["flow"]["slowdown_pct"].get<double>();
  CHECK(packet > 70);
  CHECK(packet < 130);
  CHECK(flow > 80);
  CHECK(flow < 110);
  out.clear();
  REQUIRE(testing::RunDrainwise({"simulate", "--topology", dir + "/t.json", "--jobs", dir + "/j.json", "--switch",
                                 "spine1", "--mode", "packet"},
                                &out, &err) == 0);
  CHECK(out.find("PACKET_SLOWDOWN") != std::string::npos);
  CHECK(out.find("FLOW_SLOWDOWN") != std::string::npos);
  CHECK(out.find("perm") != std::string::npos);
}

TEST_CASE("an assessment asking for modes packet starts a background run instead of answering on the request path") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string body = R"({"drain":{"switches":["spine1"]},"modes":["packet"],"ticket":"CHG-7"})";
  if (!sim::PacketLevelAvailable()) {
    CHECK(d.Call("POST", "/v1/assessments", body).status == 501);
    return;
  }
  Load(d, 1e6);
  auto r = d.Call("POST", "/v1/assessments", body);
  REQUIRE_MESSAGE(r.status == 202, r.body);
  const std::string location = r.headers["location"];
  CHECK(location.rfind("/v1/simulations/", 0) == 0);
  CHECK(r.Json()["mode"] == "packet");
  json done = WaitDone(d, location);
  REQUIRE_MESSAGE(done["state"] == "done", done.dump());
  auto stored = d.Get("/v1/assessments/" + done["result"]["assessment_id"].get<std::string>());
  CHECK(stored.Json()["ticket"] == "CHG-7");
  CHECK(stored.Json()["kind"] == "packet");
}

namespace {

// `leaves` leaves of 8 hosts at 100G under two spines (400G per leaf-spine
// link) and one job whose permutation h_i -> h_(i+8) crosses the spines.
void LoadWide(testing::Daemon& d, int leaves) {
  json nodes = json::array({{{"id", "spine0"}, {"kind", "switch"}, {"tier", "spine"}},
                            {{"id", "spine1"}, {"kind", "switch"}, {"tier", "spine"}}});
  json links = json::array(), hosts = json::array(), flows = json::array();
  const int n = 8 * leaves;
  for (int l = 0; l < leaves; ++l) {
    const std::string leaf = "leaf" + std::to_string(l);
    nodes.push_back({{"id", leaf}, {"kind", "switch"}, {"tier", "leaf"}});
    for (const char* s : {"spine0", "spine1"}) links.push_back({{"a", leaf}, {"b", s}, {"gbps", 400}});
  }
  for (int h = 0; h < n; ++h) {
    const std::string id = "h" + std::to_string(h);
    nodes.push_back({{"id", id}, {"kind", "host"}, {"gpus", 1}});
    links.push_back({{"a", id}, {"b", "leaf" + std::to_string(h / 8)}, {"gbps", 100}});
    hosts.push_back(id);
    flows.push_back({{"src", id}, {"dst", "h" + std::to_string((h + 8) % n)}, {"bytes", 1e6}});
  }
  json topology = {{"format", "drainwise.topology/v1"}, {"name", "wide"}, {"nodes", nodes}, {"links", links}};
  json jobs = {{"format", "drainwise.jobs/v1"},
               {"jobs",
                {{{"id", "wide"},
                  {"hosts", hosts},
                  {"gpus_per_host", 1},
                  {"iteration", {{"compute_ms", 0}, {"collectives", {{{"kind", "flows"}, {"flows", flows}}}}}}}}}};
  REQUIRE(d.Call("PUT", "/v1/topology", topology.dump()).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", jobs.dump()).status == 201);
}

void CheckRefusal(const testing::HttpReply& r, int hosts, int flows, int max_hosts, int max_flows) {
  CHECK_MESSAGE(r.status == 422, r.body);
  CHECK(r.headers.at("content-type").find("application/problem+json") != std::string::npos);
  json p = r.Json();
  CHECK(p["type"] == "https://drainwise.dev/problems/blast-radius-too-large");
  CHECK(p["blast_radius"]["hosts"] == hosts);
  CHECK(p["blast_radius"]["flows"] == flows);
  CHECK(p["cap"]["max_hosts"] == max_hosts);
  CHECK(p["cap"]["max_flows"] == max_flows);
  const std::string detail = p["detail"].get<std::string>();
  CHECK_MESSAGE(detail.find(std::to_string(hosts) + " hosts") != std::string::npos, detail);
  CHECK_MESSAGE(detail.find("cap is " + std::to_string(max_hosts) + " hosts and " + std::to_string(max_flows) +
                            " flows") != std::string::npos,
                detail);
}

}  // namespace

TEST_CASE("a packet request above the blast-radius cap is refused at POST with 422, and no run starts") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  if (!sim::PacketLevelAvailable()) return;
  // 17 leaves x 8 = 136 hosts, all in the one job the spine drain touches:
  // 136 hosts and 136 flows asked against the default cap of 128 and 4096.
  LoadWide(d, 17);
  CheckRefusal(d.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine1"]}})"), 136, 136, 128,
               4096);
  // The same through an assessment asking for the packet mode.
  CheckRefusal(d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["spine1"]},"modes":["packet"]})"), 136, 136,
               128, 4096);
  CHECK(d.Get("/v1/simulations").Json()["simulations"].empty());
  CHECK(d.log().find("packet run refused: blast radius of 136 hosts, 136 flows") != std::string::npos);
  // A cap lowered by the request: 16 hosts (2 leaves) against max_flows 8.
  testing::Daemon small;
  REQUIRE_MESSAGE(small.started(), small.log());
  LoadWide(small, 2);
  CheckRefusal(
      small.Call("POST", "/v1/simulations", R"({"mode":"packet","drain":{"switches":["spine1"]},"max_flows":8})"), 16,
      16, 128, 8);
  CHECK(small.Get("/v1/simulations").Json()["simulations"].empty());
}
