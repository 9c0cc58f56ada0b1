// HTTP plumbing shared by the server's sessions: request/response types, responses in the
// server's style (JSON errors), and the bearer-token check.
#pragma once

#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

namespace voxrt::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

HttpResponse make_response(unsigned http_version, bool keep_alive,
                           boost::beast::http::status status, std::string body,
                           std::string content_type = "text/plain; charset=utf-8");
// {"error": message, "kind": kind}; 401 carries WWW-Authenticate, 503 a Retry-After.
HttpResponse error_response(unsigned http_version, bool keep_alive,
                            boost::beast::http::status status, std::string_view kind,
                            std::string_view message);

// RFC 6750: "Authorization: Bearer <token>"; the scheme name is case-insensitive (RFC 7235), the
// token is compared in constant time. An empty `token` means authentication is off.
bool bearer_token_matches(std::string_view authorization_header, std::string_view token);

}  // namespace voxrt::server
