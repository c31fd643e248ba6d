#include "server/state.h"

#include <chrono>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"

namespace drainwise::server {

namespace {
int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

State::State(store::Store* store) : store_(store) {}

model::SnapshotPtr State::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

int64_t State::published_at() const {
  std::lock_guard lock(mu_);
  return published_at_;
}

Result<PutOutcome> State::Publish(std::shared_ptr<const model::Topology> topology, int64_t topology_version,
                                  model::JobsSpec jobs, int64_t jobs_version) {
  auto snap = model::MakeSnapshot(std::move(topology), topology_version, jobs, jobs_version);
  PutOutcome out;
  out.dropped_jobs = snap->dropped_jobs;
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snap);
  jobs_spec_ = std::move(jobs);
  published_at_ = Now();
  return out;
}

Result<bool> State::LoadLatest() {
  std::lock_guard wlock(write_mu_);
  auto topo_doc = store_->LatestDocument(store::DocKind::kTopology);
  if (!topo_doc) return tl::unexpected(topo_doc.error());
  if (!*topo_doc) return false;
  auto tj = codec::ParseJsonText((*topo_doc)->body);
  if (!tj) return tl::unexpected(tj.error().Wrap("stored topology"));
  auto topo = codec::LoadTopology(*tj);
  if (!topo) {
    return tl::unexpected(topo.error().Wrap(fmt::format("stored topology v{}", (*topo_doc)->info.version)));
  }
  model::JobsSpec jobs;
  int64_t jobs_version = 0;
  auto jobs_doc = store_->LatestDocument(store::DocKind::kJobs);
  if (!jobs_doc) return tl::unexpected(jobs_doc.error());
  if (*jobs_doc) {
    auto jj = codec::ParseJsonText((*jobs_doc)->body);
    if (!jj) return tl::unexpected(jj.error().Wrap("stored jobs"));
    auto spec = codec::ParseJobs(*jj);
    if (!spec) return tl::unexpected(spec.error().Wrap(fmt::format("stored jobs v{}", (*jobs_doc)->info.version)));
    jobs = std::move(*spec);
    jobs_version = (*jobs_doc)->info.version;
  }
  auto out = Publish(std::make_shared<const model::Topology>(std::move(*topo)), (*topo_doc)->info.version,
                     std::move(jobs), jobs_version);
  if (!out) return tl::unexpected(out.error());
  if (auto st = ReloadDrains(); !st) return tl::unexpected(st.error());
  return true;
}

Result<PutOutcome> State::PutTopology(const nlohmann::json& doc, const std::string& source) {
  auto spec = codec::ParseTopology(doc);
  if (!spec) return tl::unexpected(spec.error());
  auto topo = model::BuildTopology(*spec);
  if (!topo) return tl::unexpected(topo.error());
  std::lock_guard wlock(write_mu_);
  store::DocumentInfo info;
  info.kind = store::DocKind::kTopology;
  info.source = source;
  info.items = static_cast<int64_t>(topo->node_count());
  info.links = static_cast<int64_t>(topo->link_count());
  auto put = store_->PutDocument(info, codec::TopologySpecToJson(*spec).dump());
  if (!put) return tl::unexpected(put.error());
  auto current = snapshot();
  if (!put->created && current && current->topology_version == put->version) {
    return PutOutcome{put->version, false, current->dropped_jobs};
  }
  model::JobsSpec jobs;
  int64_t jobs_version = 0;
  if (current) {
    std::lock_guard lock(mu_);
    jobs = jobs_spec_;
    jobs_version = current->jobs_version;
  }
  auto out = Publish(std::make_shared<const model::Topology>(std::move(*topo)), put->version, std::move(jobs),
                     jobs_version);
  if (!out) return out;
  out->version = put->version;
  out->created = put->created;
  if (auto st = ReloadDrains(); !st) return tl::unexpected(st.error());
  return out;
}

Result<PutOutcome> State::PutJobs(const nlohmann::json& doc, const std::string& source) {
  auto spec = codec::ParseJobs(doc);
  if (!spec) return tl::unexpected(spec.error());
  std::lock_guard wlock(write_mu_);
  auto current = snapshot();
  if (!current) return MakeError(ErrorCode::kConflict, "no topology yet: PUT /v1/topology first");
  if (auto strict = model::ResolveJobs(*spec, *current->topology); !strict) {
    return tl::unexpected(strict.error());
  }
  store::DocumentInfo info;
  info.kind = store::DocKind::kJobs;
  info.source = source;
  info.items = static_cast<int64_t>(spec->jobs.size());
  auto put = store_->PutDocument(info, codec::JobsSpecToJson(*spec).dump());
  if (!put) return tl::unexpected(put.error());
  if (!put->created && current->jobs_version == put->version) return PutOutcome{put->version, false, {}};
  auto out = Publish(current->topology, current->topology_version, std::move(*spec), put->version);
  if (!out) return out;
  out->version = put->version;
  out->created = put->created;
  return out;
}

Result<PutOutcome> State::PutBoth(const nlohmann::json& topology_doc, const nlohmann::json& jobs_doc,
                                  const std::string& source) {
  // Validate both before storing either: never half a snapshot.
  auto tspec = codec::ParseTopology(topology_doc);
  if (!tspec) return tl::unexpected(tspec.error().Wrap("topology"));
  auto topo = model::BuildTopology(*tspec);
  if (!topo) return tl::unexpected(topo.error().Wrap("topology"));
  auto jspec = codec::ParseJobs(jobs_doc);
  if (!jspec) return tl::unexpected(jspec.error().Wrap("jobs"));
  std::lock_guard wlock(write_mu_);
  store::DocumentInfo tinfo;
  tinfo.kind = store::DocKind::kTopology;
  tinfo.source = source;
  tinfo.items = static_cast<int64_t>(topo->node_count());
  tinfo.links = static_cast<int64_t>(topo->link_count());
  auto tput = store_->PutDocument(tinfo, codec::TopologySpecToJson(*tspec).dump());
  if (!tput) return tl::unexpected(tput.error());
  store::DocumentInfo jinfo;
  jinfo.kind = store::DocKind::kJobs;
  jinfo.source = source;
  jinfo.items = static_cast<int64_t>(jspec->jobs.size());
  auto jput = store_->PutDocument(jinfo, codec::JobsSpecToJson(*jspec).dump());
  if (!jput) return tl::unexpected(jput.error());
  auto current = snapshot();
  if (current && current->topology_version == tput->version && current->jobs_version == jput->version) {
    return PutOutcome{tput->version, false, current->dropped_jobs};
  }
  auto out = Publish(std::make_shared<const model::Topology>(std::move(*topo)), tput->version,
                     std::move(*jspec), jput->version);
  if (!out) return out;
  out->version = tput->version;
  out->created = tput->created || jput->created;
  if (auto st = ReloadDrains(); !st) return tl::unexpected(st.error());
  return out;
}

Result<PutOutcome> State::PutSpecs(const model::TopologySpec* topology, const model::JobsSpec* jobs,
                                   const std::string& source) {
  nlohmann::json tdoc, jdoc;
  {
    auto current = snapshot();
    if (topology) {
      tdoc = codec::TopologySpecToJson(*topology);
    } else if (current) {
      tdoc = codec::TopologyToJson(*current->topology);
    } else {
      return MakeError(ErrorCode::kUnavailable, "no topology yet: waiting for a topology source");
    }
    if (jobs) {
      jdoc = codec::JobsSpecToJson(*jobs);
    } else {
      std::lock_guard lock(mu_);
      jdoc = codec::JobsSpecToJson(jobs_spec_);
    }
  }
  return PutBoth(tdoc, jdoc, source);
}

Status State::ReloadDrains() {
  auto records = store_->ListDrains(true);
  if (!records) return tl::unexpected(records.error());
  std::vector<ActiveDrain> drains;
  for (auto& r : *records) {
    auto j = codec::ParseJsonText(r.spec);
    if (!j) continue;
    auto spec = codec::ParseDrain(*j);
    if (!spec) continue;
    drains.push_back({std::move(r), std::move(*spec)});
  }
  std::lock_guard lock(mu_);
  drains_ = std::move(drains);
  return {};
}

std::vector<ActiveDrain> State::active_drains() const {
  std::lock_guard lock(mu_);
  return drains_;
}

model::Drain State::ActiveDrainUnion(const model::Topology& topology) const {
  model::Drain all;
  for (const auto& d : active_drains()) {
    // Resolve element by element so that one vanished switch does not hide the rest.
    for (const auto& s : d.spec.switches) {
      model::DrainSpec one;
      one.switches.push_back(s);
      if (auto r = model::ResolveDrain(one, topology)) all = all.Merge(*r);
    }
    for (const auto& l : d.spec.links) {
      model::DrainSpec one;
      one.links.push_back(l);
      if (auto r = model::ResolveDrain(one, topology)) all = all.Merge(*r);
    }
  }
  return all;
}

}  // namespace drainwise::server
