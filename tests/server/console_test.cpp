// The operator console's routes: embedded files by name with their content
// types, nothing else reachable, and no token needed for the page itself
// while the API it calls keeps its roles.
#include <doctest/doctest.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/console.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;

TEST_CASE("console files: / is index.html, /ui/NAME the embedded file, nothing else") {
  auto index = server::FindConsoleAsset("/");
  REQUIRE(index.has_value());
  CHECK(index->name == "index.html");
  CHECK(index->content_type == "text/html; charset=utf-8");
  CHECK(index->body.find("<!doctype html>") == 0);
  // The page loads its script and style from /ui/, and both are embedded.
  CHECK(index->body.find("/ui/console.js") != std::string_view::npos);
  CHECK(index->body.find("/ui/console.css") != std::string_view::npos);
  auto js = server::FindConsoleAsset("/ui/console.js");
  REQUIRE(js.has_value());
  CHECK(js->content_type == "text/javascript; charset=utf-8");
  CHECK(js->body.size() > 1000);
  auto css = server::FindConsoleAsset("/ui/console.css");
  REQUIRE(css.has_value());
  CHECK(css->content_type == "text/css; charset=utf-8");

  for (const char* bad : {"/ui/", "/ui/nope.js", "/ui/../console.js", "/ui/x/console.js", "/index.html",
                          "/ui/embed.cmake", "/v1/console.js"}) {
    INFO(bad);
    CHECK_FALSE(server::FindConsoleAsset(bad).has_value());
  }
}

TEST_CASE("the console is public; the API it calls is not") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  REQUIRE(state.PutTopology(testing::TwoByTwo(), "test").has_value());
  server::Api api(&state, nullptr);
  std::string text = server::Sha256Hex("reader-token-0123456") + " reader alice\n";
  api.RequireTokens(std::make_shared<const server::TokenTable>(*server::TokenTable::Parse(text, "t")));
  auto get = [&](std::string target) {
    server::ApiRequest r;
    r.method = "GET";
    r.target = std::move(target);
    return api.Handle(r);
  };
  auto page = get("/");
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  bool csp = false;
  for (const auto& [name, value] : page.headers) {
    if (name == "Content-Security-Policy") csp = value.find("script-src 'self'") != std::string::npos;
  }
  CHECK(csp);
  CHECK(get("/ui/console.js?v=1").status == 200);
  CHECK(get("/ui/missing.js").status == 404);
  CHECK(get("/ui/missing.js").content_type == "application/problem+json");
  CHECK(get("/v1/topology").status == 401);
  server::ApiRequest js;
  js.method = "GET";
  js.target = "/ui/console.js";
  CHECK(api.Route(js).RouteName() == "GET /ui/{file}");
  CHECK(api.Route(js).admission == server::Admission::kInline);
}
