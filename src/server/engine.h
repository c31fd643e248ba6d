// What the server needs from the simulators and the advisor: the engine
// library's typed interface (src/engine/engine.h). The server only
// translates: wire JSON into typed requests and typed results into JSON
// (src/engine/codec.h), on the one serving view a request reads
// (server::State::view()). main() wires in engine::MakeEngine; tests can use
// a fake.
#pragma once

#include "engine/engine.h"

namespace drainwise::server {

using Engine = engine::Engine;

}  // namespace drainwise::server
