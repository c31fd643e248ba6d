// The operator console: a static web page (HTML, CSS, plain JS modules, inline SVG)
// served by the daemon at "/" and "/ui/{file}". The files live in
// src/server/console/ and are embedded in the binary at build time
// (console/embed.cmake), so the page needs nothing at run time but the daemon:
// no CDN, no internet. index.html loads console.js, which imports its sibling
// modules by relative URL (/ui/dom.js, /ui/fabric.js, ...). The page itself
// holds no data; it reads everything through the public REST API with the
// caller's bearer token, so these routes are public and the API routes keep
// their roles.
#pragma once

#include <optional>
#include <string_view>

#include "server/api.h"

namespace drainwise::server {

struct ConsoleAsset {
  std::string_view name;          // "console.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view body;          // the file's bytes, static storage
};

// The embedded file for a request path: "/" is index.html, "/ui/NAME" is
// NAME. Nothing for any other path, for names not embedded, and for names
// with a '/' or "..": only the flat list of embedded files is reachable.
std::optional<ConsoleAsset> FindConsoleAsset(std::string_view path);

// GET / and GET /ui/{file}: the asset with its content type, no-cache
// revalidation and a restrictive Content-Security-Policy (same origin only,
// no inline script), or 404 problem+json.
ApiResponse ConsoleResponse(std::string_view path);

}  // namespace drainwise::server
