// The routing piece ns-3 3.37 lacks: equal-cost multipath with per-flow
// hashing. (Ipv4GlobalRouting's RandomEcmpRouting picks a random next hop
// for every packet, which is spraying, not what a fabric's ECMP does.)
//
// Tables are static: the pure part of the packet level computes, per node
// and destination NIC address, the equal-cost next-hop interfaces of the
// fabric with the drain applied (hop count; hosts never transit). A switch
// forwards a packet on one of them:
//   hash   a 64-bit mix of (source, destination, protocol, ports) and the
//          switch's salt, modulo the next hops: every packet of a TCP
//          connection takes one path, different switches decorrelate;
//   spray  round-robin per destination over the next hops, packet by packet.
// A host sends on the interface its socket is bound to (BindToNetDevice),
// else the one whose address is the packet's source, else its first NIC.
// Destinations are the /30-aligned link addresses of packet_ns3.cpp
// (10.0.0.0/8): the table is a flat vector indexed by (address - 10/8) / 4,
// and a switch looks a packet's destination up there before anything else
// (a switch is never a destination), so forwarding costs one index and one
// hash per hop.
// ns-3 only: built into the packet-level target when ns-3 is found.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include <ns3/ipv4-route.h>
#include <ns3/ipv4-routing-protocol.h>
#include <ns3/ipv4.h>

namespace drainwise::sim::packet_internal {

class EcmpRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId();

  // `salt` decorrelates the hash of different switches.
  void Configure(bool host, bool spray, uint64_t salt);
  // Interface `ifc` (already added to the node's Ipv4) reaches `peer`.
  void AddInterface(uint32_t ifc, ns3::Ipv4Address peer);
  // Packets to `destination` leave through one of `ifcs`.
  void AddRoute(ns3::Ipv4Address destination, const std::vector<uint32_t>& ifcs);

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice> oif, ns3::Socket::SocketErrno& sockerr) override;
  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header, ns3::Ptr<const ns3::NetDevice> idev,
                  UnicastForwardCallback ucb, MulticastForwardCallback mcb, LocalDeliverCallback lcb,
                  ErrorCallback ecb) override;
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit unit) const override;

 protected:
  void DoDispose() override;

 private:
  struct Entry {
    std::vector<ns3::Ptr<ns3::Ipv4Route>> routes;  // one per next hop, prebuilt
    uint32_t next = 0;                             // spray: round-robin position
  };
  ns3::Ptr<ns3::Ipv4Route> MakeRoute(ns3::Ipv4Address destination, uint32_t ifc) const;
  uint32_t Pick(Entry& e, ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header);

  ns3::Ptr<ns3::Ipv4> ipv4_;
  bool host_ = false;
  bool spray_ = false;
  uint64_t salt_ = 0;
  std::unordered_map<uint32_t, ns3::Ipv4Address> peer_;  // interface -> far end
  std::vector<uint32_t> nics_;                           // host: its NIC interfaces
  static constexpr uint32_t kBase = 0x0A000000u;         // 10.0.0.0
  Entry* Find(ns3::Ipv4Address destination);
  std::vector<Entry> table_;  // (destination - kBase) / 4 -> next hops
};

}  // namespace drainwise::sim::packet_internal
