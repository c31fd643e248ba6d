#include "server/state.h"

#include <chrono>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"

namespace drainwise::server {

namespace {
int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

State::State(store::Store* store) : store_(store) {
  ServingView first;
  auto policy = policies::DefaultPolicy();
  first.policy = std::make_shared<const policies::Policy>(policy ? std::move(*policy) : policies::Policy{});
  first.calibration = std::make_shared<const engine::Calibration>();
  engine::UpdateDerived(first, nullptr);
  view_ = std::make_shared<const ServingView>(std::move(first));
}

ViewPtr State::view() const {
  std::lock_guard lock(view_mu_);
  return view_;
}

model::Drain ResolveActive(const std::vector<ActiveDrain>& drains, const model::Topology& topology) {
  model::Drain all;
  for (const auto& d : drains) {
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

void State::PublishLocked(ServingView next, bool new_snapshot) {
  ViewPtr previous = view();
  next.version = previous->version + 1;
  if (next.snapshot) {
    next.active = ResolveActive(next.drains, *next.snapshot->topology);
  } else {
    next.active = {};
  }
  next.active_drain_count = static_cast<int>(next.drains.size());
  if (new_snapshot && next.snapshot && link_state_source_ &&
      (!previous->snapshot || previous->snapshot->topology != next.snapshot->topology)) {
    // Link ids belong to a topology: map the telemetry onto the new one.
    next.link_state = link_state_source_(*next.snapshot);
  }
  engine::UpdateDerived(next, previous.get());
  auto published = std::make_shared<const ServingView>(std::move(next));
  std::lock_guard lock(view_mu_);
  view_ = std::move(published);
}

Result<PutOutcome> State::PublishSnapshotLocked(std::shared_ptr<const model::Topology> topology,
                                                int64_t topology_version, model::JobsSpec jobs, int64_t jobs_version) {
  auto snap = model::MakeSnapshot(std::move(topology), topology_version, jobs, jobs_version);
  PutOutcome out;
  out.dropped_jobs = snap->dropped_jobs;
  out.snapshot = snap;
  ServingView next = *view();
  next.snapshot = std::move(snap);
  next.published_at = Now();
  jobs_spec_ = std::move(jobs);
  PublishLocked(std::move(next), true);
  return out;
}

Result<std::vector<ActiveDrain>> State::ReadDrainsLocked() {
  auto records = store_->ListDrains(true);
  if (!records) return tl::unexpected(records.error());
  std::vector<ActiveDrain> drains;
  for (auto& r : *records) {
    auto j = codec::ParseJsonText(r.spec);
    if (!j) continue;  // validated when recorded; a damaged row cannot drain anything
    auto spec = codec::ParseDrain(*j);
    if (!spec) continue;
    drains.push_back({std::move(r), std::move(*spec)});
  }
  return drains;
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
  auto drains = ReadDrainsLocked();
  if (!drains) return tl::unexpected(drains.error());
  // One publication: the stored snapshot with its drains.
  auto snap = model::MakeSnapshot(std::make_shared<const model::Topology>(std::move(*topo)), (*topo_doc)->info.version,
                                  jobs, jobs_version);
  ServingView next = *view();
  next.snapshot = std::move(snap);
  next.published_at = Now();
  next.drains = std::move(*drains);
  jobs_spec_ = std::move(jobs);
  PublishLocked(std::move(next), true);
  return true;
}

Result<bool> State::LoadLatestIfChanged() {
  auto latest_version = [&](store::DocKind kind) -> Result<int64_t> {
    return store_->LatestVersion(kind);  // by version, not creation time: daemons' clocks differ
  };
  auto topology = latest_version(store::DocKind::kTopology);
  if (!topology) return tl::unexpected(topology.error());
  auto jobs = latest_version(store::DocKind::kJobs);
  if (!jobs) return tl::unexpected(jobs.error());
  if (*topology == 0) return false;
  auto current = view()->snapshot;
  if (!current || current->topology_version != *topology || current->jobs_version != *jobs) return LoadLatest();
  if (auto st = ReloadDrains(); !st) return tl::unexpected(st.error());
  return false;
}

Result<PutOutcome> State::PutTopology(const nlohmann::json& doc, const std::string& source,
                                      const std::string& principal) {
  auto spec = codec::ParseTopology(doc);
  if (!spec) return tl::unexpected(spec.error());
  auto topo = model::BuildTopology(*spec);
  if (!topo) return tl::unexpected(topo.error());
  std::lock_guard wlock(write_mu_);
  store::DocumentInfo info;
  info.kind = store::DocKind::kTopology;
  info.source = source;
  info.principal = principal;
  info.items = static_cast<int64_t>(topo->node_count());
  info.links = static_cast<int64_t>(topo->link_count());
  auto put = store_->PutDocument(info, codec::TopologySpecToJson(*spec).dump());
  if (!put) return tl::unexpected(put.error());
  auto current = view()->snapshot;
  if (!put->created && current && current->topology_version == put->version) {
    return PutOutcome{put->version, false, current->dropped_jobs, current};
  }
  auto out = PublishSnapshotLocked(std::make_shared<const model::Topology>(std::move(*topo)), put->version, jobs_spec_,
                                   current ? current->jobs_version : 0);
  if (!out) return out;
  out->version = put->version;
  out->created = put->created;
  return out;
}

Result<PutOutcome> State::PutJobs(const nlohmann::json& doc, const std::string& source, const std::string& principal) {
  auto spec = codec::ParseJobs(doc);
  if (!spec) return tl::unexpected(spec.error());
  std::lock_guard wlock(write_mu_);
  auto current = view()->snapshot;
  if (!current) return MakeError(ErrorCode::kConflict, "no topology yet: PUT /v1/topology first");
  if (auto strict = model::ResolveJobs(*spec, *current->topology); !strict) {
    return tl::unexpected(strict.error());
  }
  store::DocumentInfo info;
  info.kind = store::DocKind::kJobs;
  info.source = source;
  info.principal = principal;
  info.items = static_cast<int64_t>(spec->jobs.size());
  auto put = store_->PutDocument(info, codec::JobsSpecToJson(*spec).dump());
  if (!put) return tl::unexpected(put.error());
  if (!put->created && current->jobs_version == put->version) {
    return PutOutcome{put->version, false, current->dropped_jobs, current};
  }
  auto out = PublishSnapshotLocked(current->topology, current->topology_version, std::move(*spec), put->version);
  if (!out) return out;
  out->version = put->version;
  out->created = put->created;
  return out;
}

Result<PutOutcome> State::PutBoth(const nlohmann::json& topology_doc, const nlohmann::json& jobs_doc,
                                  const std::string& source) {
  std::lock_guard wlock(write_mu_);
  return PutBothLocked(topology_doc, jobs_doc, source);
}

Result<PutOutcome> State::PutBothLocked(const nlohmann::json& topology_doc, const nlohmann::json& jobs_doc,
                                        const std::string& source) {
  // Validate both before storing either: never half a snapshot.
  auto tspec = codec::ParseTopology(topology_doc);
  if (!tspec) return tl::unexpected(tspec.error().Wrap("topology"));
  auto topo = model::BuildTopology(*tspec);
  if (!topo) return tl::unexpected(topo.error().Wrap("topology"));
  auto jspec = codec::ParseJobs(jobs_doc);
  if (!jspec) return tl::unexpected(jspec.error().Wrap("jobs"));
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
  auto current = view()->snapshot;
  if (current && current->topology_version == tput->version && current->jobs_version == jput->version) {
    return PutOutcome{tput->version, false, current->dropped_jobs, current};
  }
  std::shared_ptr<const model::Topology> topology;
  if (current && current->topology_version == tput->version) {
    topology = current->topology;  // unchanged: keep the built one (and link state keyed to it)
  } else {
    topology = std::make_shared<const model::Topology>(std::move(*topo));
  }
  auto out = PublishSnapshotLocked(std::move(topology), tput->version, std::move(*jspec), jput->version);
  if (!out) return out;
  out->version = tput->version;
  out->created = tput->created || jput->created;
  return out;
}

Result<PutOutcome> State::PutSpecs(const model::TopologySpec* topology, const model::JobsSpec* jobs,
                                   const std::string& source, std::optional<engine::TopologyDrift> drift) {
  // The documents a connector leaves out are the current ones as of the
  // writer lock, not as of some earlier read: a PUT /v1/jobs that landed in
  // between is kept, never overwritten with the jobs it replaced.
  std::lock_guard wlock(write_mu_);
  auto current = view()->snapshot;
  nlohmann::json tdoc, jdoc;
  if (topology) {
    tdoc = codec::TopologySpecToJson(*topology);
  } else if (current) {
    tdoc = codec::TopologyToJson(*current->topology);
  } else {
    return MakeError(ErrorCode::kUnavailable, "no topology yet: waiting for a topology source");
  }
  jdoc = codec::JobsSpecToJson(jobs ? *jobs : jobs_spec_);
  auto out = PutBothLocked(tdoc, jdoc, source);
  if (out && topology) {
    // The drift belongs to the topology version just stored. Published in a
    // second view under the same writer lock; a reader in between sees the
    // previous drift, keyed to another version, and so none.
    ServingView next = *view();
    if (drift) {
      drift->topology_version = out->version;
      next.drift = std::make_shared<const engine::TopologyDrift>(std::move(*drift));
    } else {
      next.drift = nullptr;
    }
    PublishLocked(std::move(next), false);
  }
  return out;
}

Status State::ReloadDrains() {
  std::lock_guard wlock(write_mu_);
  auto drains = ReadDrainsLocked();
  if (!drains) return tl::unexpected(drains.error());
  ServingView next = *view();
  next.drains = std::move(*drains);
  PublishLocked(std::move(next), false);
  return {};
}

void State::SetPolicy(policies::Policy policy) {
  std::lock_guard wlock(write_mu_);
  ServingView next = *view();
  next.policy = std::make_shared<const policies::Policy>(std::move(policy));
  PublishLocked(std::move(next), false);
}

void State::SetCalibration(engine::Calibration calibration) {
  std::lock_guard wlock(write_mu_);
  ServingView next = *view();
  if (calibration.source != "configuration") {
    // A fit or an operator's parameters: only the transport parameters are
    // theirs; the other options are the ones in force now (a SIGHUP may
    // have changed them since the caller read its view).
    calibration = engine::Rebase(calibration, next.calibration->options);
    calibration.configured = engine::ConfiguredParams(*next.calibration);
  }
  next.calibration = std::make_shared<const engine::Calibration>(std::move(calibration));
  PublishLocked(std::move(next), false);
}

void State::SetAdvisorOptions(const advisor::AdvisorOptions& base) {
  std::lock_guard wlock(write_mu_);
  ServingView next = *view();
  engine::Calibration rebased = engine::Rebase(*next.calibration, base);
  rebased.configured =
      advisor::CalibrationParams{base.flow.goodput, base.flow.per_hop_latency_s, base.flow.per_message_overhead_s};
  next.calibration = std::make_shared<const engine::Calibration>(std::move(rebased));
  PublishLocked(std::move(next), false);
}

void State::SetLinkStateSource(LinkStateSource source) {
  std::lock_guard wlock(write_mu_);
  link_state_source_ = std::move(source);
}

void State::RefreshLinkState() {
  std::lock_guard wlock(write_mu_);
  ServingView next = *view();
  if (!next.snapshot || !link_state_source_) return;
  next.link_state = link_state_source_(*next.snapshot);
  PublishLocked(std::move(next), false);
}

}  // namespace drainwise::server
