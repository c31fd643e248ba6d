#include "connectors/graph_formats.h"

#include <set>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using codec::ObjectReader;
using internal::json;

// Collects nodes in first-seen order with their role, then classifies.
class Builder {
 public:
  explicit Builder(const GraphOptions& o) : o_(o) {}

  void Node(const std::string& id, const std::string& role) {
    auto [it, inserted] = roles_.emplace(id, role);
    if (inserted)
      order_.push_back(id);
    else if (it->second.empty())
      it->second = role;
  }
  void Link(std::string a, std::string a_port, std::string b, std::string b_port, double gbps) {
    Node(a, "");
    Node(b, "");
    spec_.links.push_back({std::move(a), std::move(b), gbps, std::move(a_port), std::move(b_port)});
  }
  model::TopologySpec Finish(std::string name) {
    spec_.name = o_.name.empty() ? std::move(name) : o_.name;
    for (const auto& id : order_) {
      model::NodeSpec n;
      n.id = id;
      std::string tier = TierOf(id, roles_[id]);
      if (tier.empty()) {
        n.kind = model::NodeKind::kHost;
        n.gpus = o_.gpus_per_host;
      } else {
        n.kind = model::NodeKind::kSwitch;
        n.tier = tier;
      }
      spec_.nodes.push_back(std::move(n));
    }
    return std::move(spec_);
  }

 private:
  std::string TierOf(const std::string& id, const std::string& role) const {
    if (!role.empty()) {
      auto it = o_.role_tiers.find(role);
      if (it != o_.role_tiers.end()) return it->second;
      for (const auto& h : o_.host_roles) {
        if (h == role) return "";
      }
    }
    for (const auto& [pattern, tier] : o_.tier_patterns) {
      if (internal::GlobMatch(pattern, id)) return tier;
    }
    return "";
  }

  const GraphOptions& o_;
  std::map<std::string, std::string> roles_;
  std::vector<std::string> order_;
  model::TopologySpec spec_;
};

// networkx ids may be strings or numbers.
std::string IdOf(const ObjectReader& r, std::string_view key) {
  if (!r.Has(key)) throw FieldError(r.Child(key), "required");
  const json& v = r.Raw(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  throw FieldError(r.Child(key), fmt::format("expected a string or an integer, got {}", codec::JsonTypeName(v)));
}

}  // namespace

Result<model::TopologySpec> ParseContainerlabData(const json& doc, const GraphOptions& options) {
  return internal::Guard("containerlab", [&] {
    ObjectReader top(doc, "");
    Builder b(options);
    if (top.Has("nodes")) {
      ObjectReader nodes(top.Raw("nodes"), "nodes");
      for (const auto& [name, body] : top.Raw("nodes").items()) {
        ObjectReader n(body, nodes.Child(name));
        auto labels = n.StringMap("labels");
        b.Node(name, labels.count("role") ? labels["role"] : "");
      }
    }
    for (const auto& l : top.Objects("links")) {
      if (!l.Has("a")) throw FieldError(l.Child("a"), "required");
      if (!l.Has("z")) throw FieldError(l.Child("z"), "required");
      ObjectReader a(l.Raw("a"), l.Child("a"));
      ObjectReader z(l.Raw("z"), l.Child("z"));
      b.Link(a.String("node"), a.StringOr("interface", ""), z.String("node"), z.StringOr("interface", ""),
             options.default_gbps);
    }
    return b.Finish(top.StringOr("name", "containerlab"));
  });
}

Result<model::TopologySpec> ParseNetworkxNodeLink(const json& doc, const GraphOptions& options) {
  return internal::Guard("networkx", [&] {
    ObjectReader top(doc, "");
    Builder b(options);
    for (const auto& n : top.Objects("nodes")) b.Node(IdOf(n, "id"), n.StringOr("role", ""));
    const char* edges_key = top.Has("edges") ? "edges" : "links";
    if (!top.Has(edges_key)) throw FieldError("edges", "required (or links, networkx < 3.6)");
    for (const auto& e : top.Objects(edges_key)) {
      double gbps = e.NumberOr("speed_gbps", options.default_gbps);
      if (gbps <= 0) throw FieldError(e.Child("speed_gbps"), "must be > 0");
      b.Link(IdOf(e, "source"), e.StringOr("src_if", ""), IdOf(e, "target"), e.StringOr("dst_if", ""), gbps);
    }
    std::string name = "networkx";
    if (top.Has("graph") && top.Raw("graph").is_object()) {
      ObjectReader g(top.Raw("graph"), "graph");
      name = g.StringOr("name", name);
    }
    return b.Finish(name);
  });
}

Result<model::TopologySpec> ParseBatfishLayer1(const json& doc, const GraphOptions& options) {
  return internal::Guard("batfish layer1", [&] {
    ObjectReader top(doc, "");
    top.Array("edges");
    Builder b(options);
    std::set<std::pair<std::pair<std::string, std::string>, std::pair<std::string, std::string>>> seen;
    for (const auto& e : top.Objects("edges")) {
      if (!e.Has("node1")) throw FieldError(e.Child("node1"), "required");
      if (!e.Has("node2")) throw FieldError(e.Child("node2"), "required");
      ObjectReader n1(e.Raw("node1"), e.Child("node1"));
      ObjectReader n2(e.Raw("node2"), e.Child("node2"));
      std::pair<std::string, std::string> a{n1.String("hostname"), n1.StringOr("interfaceName", "")};
      std::pair<std::string, std::string> z{n2.String("hostname"), n2.StringOr("interfaceName", "")};
      if (!seen.insert(a < z ? std::pair{a, z} : std::pair{z, a}).second) continue;  // the reverse direction
      b.Link(a.first, a.second, z.first, z.second, options.default_gbps);
    }
    return b.Finish("batfish");
  });
}

}  // namespace drainwise::connectors
