# Embeds docs/openapi.yaml in drainwise_server as the JSON served at
# GET /v1/openapi.json. The file is comment lines followed by JSON (valid
# YAML 1.2), so stripping the leading comments is the whole conversion.
# Re-runs at configure time whenever the document changes.
set(_openapi_src ${PROJECT_SOURCE_DIR}/docs/openapi.yaml)
set(_openapi_out ${PROJECT_BINARY_DIR}/generated/openapi_document.cpp)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_openapi_src})
file(READ ${_openapi_src} _openapi_text)
string(REGEX REPLACE "^(#[^\n]*\n)+" "" _openapi_json "${_openapi_text}")
string(FIND "${_openapi_json}" ")openapi\"" _openapi_delim)
if(NOT _openapi_delim EQUAL -1)
  message(FATAL_ERROR "docs/openapi.yaml contains the raw-string delimiter )openapi\"")
endif()
set(_openapi_cpp "// Generated from docs/openapi.yaml by docs/openapi.cmake: do not edit.
#include <string_view>
namespace drainwise::server {
std::string_view OpenApiDocument() {
  static constexpr std::string_view kDocument = R\"openapi(@_openapi_json@)openapi\";
  return kDocument;
}
}  // namespace drainwise::server
")
# file(CONFIGURE) writes only when the content changed, so an unchanged
# document does not rebuild the server.
file(CONFIGURE OUTPUT ${_openapi_out} CONTENT "${_openapi_cpp}" @ONLY)
target_sources(drainwise_server PRIVATE ${_openapi_out})
