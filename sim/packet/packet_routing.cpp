#include "sim/packet/packet_routing.h"

#include <ns3/abort.h>
#include <ns3/output-stream-wrapper.h>

namespace drainwise::sim::packet_internal {

namespace {
uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

ns3::TypeId EcmpRouting::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("drainwise::EcmpRouting").SetParent<ns3::Ipv4RoutingProtocol>();
  return tid;
}

void EcmpRouting::Configure(bool host, bool spray, uint64_t salt) {
  host_ = host;
  spray_ = spray;
  salt_ = salt;
}

void EcmpRouting::AddInterface(uint32_t ifc, ns3::Ipv4Address peer) {
  peer_[ifc] = peer;
  nics_.push_back(ifc);
}

ns3::Ptr<ns3::Ipv4Route> EcmpRouting::MakeRoute(ns3::Ipv4Address destination, uint32_t ifc) const {
  auto r = ns3::Create<ns3::Ipv4Route>();
  r->SetDestination(destination);
  r->SetSource(ipv4_->GetAddress(ifc, 0).GetLocal());
  auto peer = peer_.find(ifc);
  r->SetGateway(peer != peer_.end() ? peer->second : destination);
  r->SetOutputDevice(ipv4_->GetNetDevice(ifc));
  return r;
}

EcmpRouting::Entry* EcmpRouting::Find(ns3::Ipv4Address destination) {
  const uint32_t a = destination.Get();
  if (a < kBase) return nullptr;
  const uint32_t slot = (a - kBase) / 4;
  if (slot >= table_.size() || table_[slot].routes.empty()) return nullptr;
  return &table_[slot];
}

void EcmpRouting::AddRoute(ns3::Ipv4Address destination, const std::vector<uint32_t>& ifcs) {
  const uint32_t a = destination.Get();
  NS_ABORT_MSG_IF(a < kBase, "drainwise ECMP: destination outside 10.0.0.0/8");
  const uint32_t slot = (a - kBase) / 4;
  if (slot >= table_.size()) table_.resize(slot + 1);
  Entry& e = table_[slot];
  e.routes.clear();
  for (uint32_t ifc : ifcs) e.routes.push_back(MakeRoute(destination, ifc));
}

uint32_t EcmpRouting::Pick(Entry& e, ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header) {
  const uint32_t n = static_cast<uint32_t>(e.routes.size());
  if (n == 1) return 0;
  if (spray_) return e.next++ % n;
  uint8_t ports[4] = {0, 0, 0, 0};
  if (p && p->GetSize() >= 4) p->CopyData(ports, 4);  // the TCP/UDP header follows the IP header
  uint64_t key = (static_cast<uint64_t>(header.GetSource().Get()) << 32) | header.GetDestination().Get();
  uint64_t h = Mix(key ^ salt_);
  h = Mix(h ^
          ((static_cast<uint64_t>(ports[0]) << 24) | (static_cast<uint64_t>(ports[1]) << 16) |
           (static_cast<uint64_t>(ports[2]) << 8) | ports[3] | (static_cast<uint64_t>(header.GetProtocol()) << 32)));
  return static_cast<uint32_t>(h % n);
}

ns3::Ptr<ns3::Ipv4Route> EcmpRouting::RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header,
                                                  ns3::Ptr<ns3::NetDevice> oif, ns3::Socket::SocketErrno& sockerr) {
  sockerr = ns3::Socket::ERROR_NOTERROR;
  if (host_) {
    int32_t ifc = -1;
    if (oif) ifc = ipv4_->GetInterfaceForDevice(oif);
    if (ifc < 0 && header.GetSource() != ns3::Ipv4Address::GetAny() && header.GetSource() != ns3::Ipv4Address()) {
      ifc = ipv4_->GetInterfaceForAddress(header.GetSource());
    }
    if (ifc <= 0 && !nics_.empty()) ifc = static_cast<int32_t>(nics_.front());
    if (ifc <= 0) {
      sockerr = ns3::Socket::ERROR_NOROUTETOHOST;
      return nullptr;
    }
    return MakeRoute(header.GetDestination(), static_cast<uint32_t>(ifc));
  }
  Entry* e = Find(header.GetDestination());
  if (!e) {
    sockerr = ns3::Socket::ERROR_NOROUTETOHOST;
    return nullptr;
  }
  return e->routes[Pick(*e, p, header)];
}

bool EcmpRouting::RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header,
                             ns3::Ptr<const ns3::NetDevice> idev, UnicastForwardCallback ucb,
                             MulticastForwardCallback mcb, LocalDeliverCallback lcb, ErrorCallback ecb) {
  // A switch forwards without asking Ipv4 whether it is the destination
  // (IsDestinationAddress walks every interface's addresses, a copy each).
  if (!host_) {
    if (Entry* e = Find(header.GetDestination())) {
      ucb(e->routes[Pick(*e, p, header)], p, header);
      return true;
    }
  }
  const int32_t iif = ipv4_->GetInterfaceForDevice(idev);
  if (ipv4_->IsDestinationAddress(header.GetDestination(), static_cast<uint32_t>(iif))) {
    if (lcb.IsNull()) return false;
    lcb(p, header, static_cast<uint32_t>(iif));
    return true;
  }
  return false;  // hosts never transit
}

void EcmpRouting::PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit) const {
  *stream->GetStream() << "drainwise ECMP: " << table_.size() << " destinations\n";
}

void EcmpRouting::DoDispose() {
  table_.clear();
  peer_.clear();
  ipv4_ = nullptr;
  ns3::Ipv4RoutingProtocol::DoDispose();
}

}  // namespace drainwise::sim::packet_internal
