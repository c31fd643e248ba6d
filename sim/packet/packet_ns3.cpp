// The ns-3 side of the packet level: builds one RunInput as ns-3 nodes,
// links, queues, routing and TCP connections, runs it and reads the
// results back. Everything ns-3 is in this file (and packet_routing.*).
//
// ns-3 has one global simulator (event list, node list, attribute
// defaults): a process-wide mutex serialises runs, every run sets the
// defaults it needs, and Simulator::Destroy() clears the nodes at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>

#include <ns3/boolean.h>
#include <ns3/config.h>
#include <ns3/data-rate.h>
#include <ns3/double.h>
#include <ns3/enum.h>
#include <ns3/inet-socket-address.h>
#include <ns3/internet-stack-helper.h>
#include <ns3/ipv4.h>
#include <ns3/node-container.h>
#include <ns3/object-factory.h>
#include <ns3/packet.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/queue-disc.h>
#include <ns3/queue-size.h>
#include <ns3/red-queue-disc.h>
#include <ns3/rng-seed-manager.h>
#include <ns3/simulator.h>
#include <ns3/socket.h>
#include <ns3/string.h>
#include <ns3/tcp-dctcp.h>
#include <ns3/tcp-socket-factory.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/type-id.h>
#include <ns3/uinteger.h>

#include "sim/packet/packet_routing.h"
#include "sim/packet/packet_run.h"
#include "sim/routing.h"

namespace drainwise::sim {

bool PacketLevelAvailable() { return true; }
std::string_view PacketLevelUnavailableMessage() { return ""; }

namespace packet_internal {

namespace {

using ns3::Ptr;

// Address of end `side` (0 = a, 1 = b) of run link `l`: 10.0.0.0/8, a /30
// per link, so a run can hold 4 M links.
ns3::Ipv4Address LinkAddress(uint32_t l, int side) { return ns3::Ipv4Address(0x0A000000u + 4 * l + 1 + side); }

// Bytes of a flow's connection delivered after `k` of its `steps` steps.
uint64_t StepBoundary(uint64_t bytes, uint32_t steps, uint32_t k) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bytes) * k) / steps);
}

class Driver {
 public:
  Driver(const RunInput& in, std::stop_token stop, const std::function<void(double)>& progress)
      : in_(in), o_(in.settings), stop_(stop), progress_(progress) {}

  Result<RunOutput> Run() {
    const auto wall_start = std::chrono::steady_clock::now();
    SetDefaults();
    BuildNetwork();
    BuildFlows();
    ns3::Simulator::Stop(ns3::Seconds(o_.max_simulated_s));
    ns3::Simulator::Schedule(ns3::MicroSeconds(50), [this] { Check(); });
    ns3::Simulator::Run();
    RunOutput out;
    out.flow_done_s.resize(in_.flows.size(), -1);
    for (size_t f = 0; f < flows_.size(); ++f) {
      if (flows_[f].done_s >= 0) out.flow_done_s[f] = flows_[f].done_s - start_s_;
    }
    out.stats.simulated_s = std::max(0.0, last_done_s_ - start_s_);
    const double window = std::max(last_done_s_ - start_s_, 1e-12);  // from the collectives' start
    for (size_t l = 0; l < in_.links.size(); ++l) {
      for (int side = 0; side < 2; ++side) {
        Ptr<ns3::QueueDisc> q = qdiscs_[2 * l + side];
        if (!q) continue;
        const ns3::QueueDisc::Stats& s = q->GetStats();
        PacketLinkStats ls;
        ls.directed_link = DirectedLinkId(model::LinkId(in_.links[l].link), side == 0);
        ls.bytes_sent = static_cast<double>(s.nTotalSentBytes);
        ls.utilisation = ls.bytes_sent * 8 / (in_.links[l].capacity_bps * window);
        ls.max_queue_packets = max_queue_[2 * l + side];
        ls.ecn_marks = s.nTotalMarkedPackets;
        ls.drops = s.nTotalDroppedPackets;
        out.stats.packets_sent += s.nTotalSentPackets;
        out.stats.ecn_marks += ls.ecn_marks;
        out.stats.drops += ls.drops;
        out.stats.links.push_back(ls);
      }
    }
    std::sort(out.stats.links.begin(), out.stats.links.end(),
              [](const PacketLinkStats& x, const PacketLinkStats& y) { return x.directed_link < y.directed_link; });
    // Sockets and callbacks hold pointers into this driver: release them
    // before the simulator destroys the nodes.
    for (Conn& c : conns_) {
      if (c.tx) c.tx->SetSendCallback(ns3::MakeNullCallback<void, Ptr<ns3::Socket>, uint32_t>());
      if (c.rx) c.rx->SetRecvCallback(ns3::MakeNullCallback<void, Ptr<ns3::Socket>>());
    }
    conns_.clear();
    qdiscs_.clear();
    ns3::Simulator::Destroy();
    out.stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (cancelled_) return MakeError(ErrorCode::kCancelled, "packet simulation cancelled");
    return out;
  }

 private:
  struct Conn {
    uint32_t flow = 0;
    uint32_t src_node = 0;
    Ptr<ns3::Socket> tx, listener, rx;
    uint64_t sent = 0, released = 0, received = 0;
    uint32_t delivered_steps = 0;
  };
  struct FlowState {
    std::vector<uint32_t> conns;
    std::vector<uint32_t> succs;
    uint32_t released_steps = 0;
    uint32_t delivered_steps = 0;
    double done_s = -1;
  };

  void SetDefaults() {
    using ns3::Config::SetDefault;
    // A binary heap in one vector instead of ns-3's default std::map (a
    // node allocated per event: 5.6 % of a profile of the goal case in
    // MapScheduler::Insert). Events are ordered by (time, uid) under every
    // scheduler, so the run is the same event for event.
    ns3::ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::HeapScheduler");
    ns3::Simulator::SetScheduler(scheduler);
    ns3::RngSeedManager::SetSeed(1);
    ns3::RngSeedManager::SetRun(o_.seed);
    SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(ns3::TcpDctcp::GetTypeId()));
    SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(o_.mtu_bytes - 52));  // IP 20 + TCP 20 + timestamps 12
    SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(8u << 20));
    SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(8u << 20));
    SetDefault("ns3::TcpSocket::InitialCwnd", ns3::UintegerValue(in_.initial_cwnd_segments));
    SetDefault("ns3::TcpSocket::DelAckCount", ns3::UintegerValue(2));
    SetDefault("ns3::TcpSocket::DelAckTimeout", ns3::TimeValue(ns3::MicroSeconds(10)));
    SetDefault("ns3::TcpSocket::ConnTimeout", ns3::TimeValue(ns3::MilliSeconds(1)));
    SetDefault("ns3::TcpSocketBase::MinRto", ns3::TimeValue(ns3::Seconds(o_.min_rto_s)));
    SetDefault("ns3::TcpSocketBase::ClockGranularity", ns3::TimeValue(ns3::MicroSeconds(1)));
    SetDefault("ns3::TcpSocketBase::UseEcn", ns3::StringValue("On"));
    SetDefault("ns3::TcpSocketBase::ReTxThreshold",
               ns3::UintegerValue(o_.routing == PacketRouting::kSpray ? o_.spray_dupack_threshold : 3));
    // DCTCP's congestion estimate starts at 0, not 1: a flow that starts at
    // about line rate (the initial window above) is not halved by the first
    // mark, as an RDMA NIC starting at line rate is not.
    SetDefault("ns3::TcpDctcp::DctcpAlphaOnInit", ns3::DoubleValue(0.0));
    SetDefault("ns3::RttEstimator::InitialEstimation", ns3::TimeValue(ns3::MicroSeconds(100)));
  }

  void BuildNetwork() {
    const size_t n = in_.is_host.size();
    nodes_.Create(static_cast<uint32_t>(n));
    ns3::InternetStackHelper stack;
    stack.Install(nodes_);
    // Fixed random streams (RED's marking draws): ns-3 numbers automatic
    // streams process-wide, so a second run would otherwise draw others.
    int64_t stream = stack.AssignStreams(nodes_, 1000);
    routing_.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      auto r = ns3::CreateObject<EcmpRouting>();
      r->Configure(in_.is_host[i] != 0, o_.routing == PacketRouting::kSpray, o_.seed * 0x9E3779B97F4A7C15ull + i);
      nodes_.Get(i)->GetObject<ns3::Ipv4>()->SetRoutingProtocol(r);
      routing_[i] = r;
    }
    const int k = o_.ecn_threshold_packets;
    iface_.assign(2 * in_.links.size(), 0);
    qdiscs_.assign(2 * in_.links.size(), nullptr);
    max_queue_.assign(2 * in_.links.size(), 0);
    for (uint32_t l = 0; l < in_.links.size(); ++l) {
      const RunLink& link = in_.links[l];
      const ns3::DataRate rate(static_cast<uint64_t>(link.capacity_bps));
      const ns3::Time delay = ns3::Seconds(o_.per_hop_delay_s);
      ns3::PointToPointHelper p2p;
      p2p.SetDeviceAttribute("DataRate", ns3::DataRateValue(rate));
      p2p.SetDeviceAttribute("Mtu", ns3::UintegerValue(o_.mtu_bytes));
      p2p.SetChannelAttribute("Delay", ns3::TimeValue(delay));
      p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::StringValue("1p"));
      ns3::NetDeviceContainer devs = p2p.Install(nodes_.Get(link.a), nodes_.Get(link.b));
      ns3::TrafficControlHelper tch;
      tch.SetRootQueueDisc("ns3::RedQueueDisc",  //
                           "MaxSize",
                           ns3::QueueSizeValue(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS,  //
                                                              o_.buffer_packets)),
                           "MinTh", ns3::DoubleValue(k), "MaxTh", ns3::DoubleValue(3.0 * k),  //
                           "UseEcn", ns3::BooleanValue(true), "UseHardDrop", ns3::BooleanValue(false), "QW",
                           ns3::DoubleValue(1.0), "MeanPktSize", ns3::UintegerValue(o_.mtu_bytes), "LinkBandwidth",
                           ns3::DataRateValue(rate), "LinkDelay", ns3::TimeValue(delay));
      ns3::QueueDiscContainer qs = tch.Install(devs);
      for (int side = 0; side < 2; ++side) {
        if (auto red = qs.Get(side)->GetObject<ns3::RedQueueDisc>()) stream += red->AssignStreams(stream + 1000);
      }
      for (int side = 0; side < 2; ++side) {
        const uint32_t node = side == 0 ? link.a : link.b;
        Ptr<ns3::Ipv4> ip = nodes_.Get(node)->GetObject<ns3::Ipv4>();
        const int32_t ifc = static_cast<int32_t>(ip->AddInterface(devs.Get(side)));
        ip->AddAddress(ifc, ns3::Ipv4InterfaceAddress(LinkAddress(l, side), ns3::Ipv4Mask("255.255.255.252")));
        ip->SetUp(ifc);
        iface_[2 * l + side] = static_cast<uint32_t>(ifc);
        qdiscs_[2 * l + side] = qs.Get(side);
        uint32_t* slot = &max_queue_[2 * l + side];
        qs.Get(side)->TraceConnectWithoutContext(
            "PacketsInQueue", ns3::Callback<void, uint32_t, uint32_t>([slot](uint32_t, uint32_t now) {
              if (now > *slot) *slot = now;
            }));
        routing_[node]->AddInterface(static_cast<uint32_t>(ifc), LinkAddress(l, 1 - side));
      }
    }
    for (const RunRoute& r : in_.routes) {
      std::vector<uint32_t> ifcs;
      for (uint32_t l : r.next_links) {
        const int side = in_.links[l].a == r.node ? 0 : 1;
        ifcs.push_back(iface_[2 * l + side]);
      }
      const RunLink& d = in_.links[r.dst_link];
      // The destination NIC's address is the host's end of its link.
      const int host_side = in_.is_host[d.a] ? 0 : 1;
      routing_[r.node]->AddRoute(LinkAddress(r.dst_link, host_side), ifcs);
    }
  }

  void BuildFlows() {
    flows_.resize(in_.flows.size());
    std::vector<uint16_t> next_port(in_.is_host.size(), 1000);
    for (uint32_t f = 0; f < in_.flows.size(); ++f) {
      const RunFlow& rf = in_.flows[f];
      for (uint32_t p : rf.preds) flows_[p].succs.push_back(f);
      const RunLink& sl = in_.links[rf.src_link];
      const RunLink& dl = in_.links[rf.dst_link];
      const int src_side = sl.a == rf.src ? 0 : 1;
      const int dst_side = dl.a == rf.dst ? 0 : 1;
      Ptr<ns3::Node> src = nodes_.Get(rf.src), dst = nodes_.Get(rf.dst);
      Ptr<ns3::NetDevice> src_dev = src->GetObject<ns3::Ipv4>()->GetNetDevice(iface_[2 * rf.src_link + src_side]);
      for (uint32_t c = 0; c < rf.connections; ++c) {
        const uint32_t ci = static_cast<uint32_t>(conns_.size());
        conns_.emplace_back();
        Conn& conn = conns_.back();
        conn.flow = f;
        conn.src_node = rf.src;
        flows_[f].conns.push_back(ci);
        const uint16_t port = next_port[rf.dst]++;
        conn.listener = ns3::Socket::CreateSocket(dst, ns3::TcpSocketFactory::GetTypeId());
        conn.listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
        conn.listener->Listen();
        conn.listener->SetAcceptCallback(
            ns3::MakeNullCallback<bool, Ptr<ns3::Socket>, const ns3::Address&>(),
            ns3::Callback<void, Ptr<ns3::Socket>, const ns3::Address&>([this, ci](Ptr<ns3::Socket> s,
                                                                                  const ns3::Address&) {
              conns_[ci].rx = s;
              // Every endpoint of a node is scanned for every packet it
              // receives (Ipv4EndPointDemux::Lookup, 12 % of a profile of
              // the goal case): the listener has done its job, drop it.
              Ptr<ns3::Socket> listener = conns_[ci].listener;
              conns_[ci].listener = nullptr;
              ns3::Simulator::ScheduleNow([listener] { listener->Close(); });
              s->SetRecvCallback(ns3::Callback<void, Ptr<ns3::Socket>>([this, ci](Ptr<ns3::Socket>) { OnRecv(ci); }));
            }));
        conn.tx = ns3::Socket::CreateSocket(src, ns3::TcpSocketFactory::GetTypeId());
        conn.tx->BindToNetDevice(src_dev);
        conn.tx->SetConnectCallback(ns3::Callback<void, Ptr<ns3::Socket>>([this](Ptr<ns3::Socket>) { OnConnected(); }),
                                    ns3::Callback<void, Ptr<ns3::Socket>>([this](Ptr<ns3::Socket>) { OnConnected(); }));
        conn.tx->SetSendCallback(
            ns3::Callback<void, Ptr<ns3::Socket>, uint32_t>([this, ci](Ptr<ns3::Socket>, uint32_t) { SendMore(ci); }));
        const ns3::InetSocketAddress to(LinkAddress(rf.dst_link, dst_side), port);
        Ptr<ns3::Socket> tx = conn.tx;
        ns3::Simulator::ScheduleWithContext(src->GetId(), ns3::Seconds(0), [tx, to] { tx->Connect(to); });
      }
    }
    if (conns_.empty()) ns3::Simulator::Stop();
  }

  // Connections are set up before the collectives start (NCCL keeps its
  // connections): the clock starts when the last one is established, and
  // every first step waits the per-message overhead.
  void OnConnected() {
    if (++connected_ < conns_.size()) return;
    start_s_ = ns3::Simulator::Now().GetSeconds();
    ns3::Simulator::Schedule(ns3::Seconds(o_.per_message_overhead_s), [this] {
      for (uint32_t f = 0; f < flows_.size(); ++f) Release(f, in_.flows[f].preds.empty() ? in_.flows[f].steps : 1);
    });
  }

  void Release(uint32_t f, uint32_t steps) {
    FlowState& fs = flows_[f];
    if (steps <= fs.released_steps) return;
    fs.released_steps = steps;
    const RunFlow& rf = in_.flows[f];
    for (uint32_t ci : fs.conns) {
      conns_[ci].released = StepBoundary(rf.bytes, rf.steps, steps);
      SendMore(ci);
    }
  }

  void SendMore(uint32_t ci) {
    Conn& c = conns_[ci];
    while (c.sent < c.released) {
      const uint32_t avail = c.tx->GetTxAvailable();
      if (avail == 0) return;
      const uint64_t n = std::min<uint64_t>({c.released - c.sent, avail, 1u << 20});
      const int r = c.tx->Send(ns3::Create<ns3::Packet>(static_cast<uint32_t>(n)));
      if (r <= 0) return;
      c.sent += static_cast<uint64_t>(r);
    }
  }

  void OnRecv(uint32_t ci) {
    Conn& c = conns_[ci];
    while (Ptr<ns3::Packet> p = c.rx->Recv()) c.received += p->GetSize();
    const RunFlow& rf = in_.flows[c.flow];
    uint32_t d = c.delivered_steps;
    while (d < rf.steps && c.received >= StepBoundary(rf.bytes, rf.steps, d + 1)) ++d;
    if (d == c.delivered_steps) return;
    c.delivered_steps = d;
    FlowState& fs = flows_[c.flow];
    uint32_t low = d;
    for (uint32_t other : fs.conns) low = std::min(low, conns_[other].delivered_steps);
    if (low <= fs.delivered_steps) return;
    fs.delivered_steps = low;
    const double now = ns3::Simulator::Now().GetSeconds();
    if (low == rf.steps) {
      fs.done_s = now;
      last_done_s_ = std::max(last_done_s_, now);
      done_conns_ += fs.conns.size();
      if (++done_flows_ == flows_.size()) ns3::Simulator::Stop();
    }
    for (uint32_t s : fs.succs) {
      uint32_t ready = in_.flows[s].steps;
      for (uint32_t p : in_.flows[s].preds) ready = std::min(ready, flows_[p].delivered_steps + 1);
      if (ready > flows_[s].released_steps) {
        ns3::Simulator::Schedule(ns3::Seconds(o_.per_message_overhead_s), [this, s, ready] { Release(s, ready); });
      }
    }
  }

  void Check() {
    if (stop_.stop_requested()) {
      cancelled_ = true;
      ns3::Simulator::Stop();
      return;
    }
    if (progress_ && !conns_.empty()) progress_(static_cast<double>(done_conns_) / static_cast<double>(conns_.size()));
    ns3::Simulator::Schedule(ns3::MicroSeconds(50), [this] { Check(); });
  }

  const RunInput& in_;
  const RunSettings& o_;
  std::stop_token stop_;
  const std::function<void(double)>& progress_;
  ns3::NodeContainer nodes_;
  std::vector<Ptr<EcmpRouting>> routing_;
  std::vector<uint32_t> iface_;  // per run link side: interface index on that node
  std::vector<Ptr<ns3::QueueDisc>> qdiscs_;
  std::vector<uint32_t> max_queue_;
  std::vector<Conn> conns_;
  std::vector<FlowState> flows_;
  size_t connected_ = 0, done_flows_ = 0, done_conns_ = 0;
  double start_s_ = 0, last_done_s_ = 0;
  bool cancelled_ = false;
};

}  // namespace

std::mutex& Ns3Mutex() {
  static std::mutex m;  // one ns-3 simulation per process at a time
  return m;
}

Result<RunOutput> RunScenarioLocked(const RunInput& in, std::stop_token stop,
                                    const std::function<void(double)>& progress) {
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "packet simulation cancelled");
  try {
    Driver driver(in, stop, progress);
    return driver.Run();
  } catch (const std::exception& e) {
    ns3::Simulator::Destroy();
    return MakeError(ErrorCode::kInternal, std::string("ns-3: ") + e.what());
  }
}

Result<RunOutput> RunScenario(const RunInput& in, std::stop_token stop, const std::function<void(double)>& progress) {
  std::lock_guard<std::mutex> lock(Ns3Mutex());
  return RunScenarioLocked(in, stop, progress);
}

}  // namespace packet_internal
}  // namespace drainwise::sim
