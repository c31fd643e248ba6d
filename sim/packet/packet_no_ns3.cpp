// Built instead of packet_ns3.cpp when CMake finds no ns-3: the packet
// level answers kUnimplemented with how to enable it.
#include "sim/packet/packet_run.h"

namespace drainwise::sim {

bool PacketLevelAvailable() { return false; }

std::string_view PacketLevelUnavailableMessage() {
  return "the packet level needs ns-3, which this build of drainwise was made without: install Debian's libns3-dev "
         "(packaging/install-deps.sh does) and rebuild";
}

namespace packet_internal {
Result<RunOutput> RunScenario(const RunInput&, std::stop_token, const std::function<void(double)>&) {
  return MakeError(ErrorCode::kUnavailable, std::string(PacketLevelUnavailableMessage()));
}
Result<std::vector<RunOutput>> RunScenarios(const std::vector<const RunInput*>&, const PacketOptions&, std::stop_token,
                                            const std::function<void(double)>&) {
  return MakeError(ErrorCode::kUnavailable, std::string(PacketLevelUnavailableMessage()));
}
}  // namespace packet_internal

int ServePacketWorker(int, int) { return 2; }  // never spawned: without ns-3 no run starts

}  // namespace drainwise::sim
