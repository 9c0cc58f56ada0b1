#include "server/http_messages.h"

#include "server/protocol.h"

namespace voxrt::server {

namespace http = boost::beast::http;

HttpResponse make_response(unsigned http_version, bool keep_alive, http::status status,
                           std::string body, std::string content_type) {
  HttpResponse response{status, http_version};
  response.set(http::field::server, "voxrt");
  response.set(http::field::content_type, content_type);
  response.keep_alive(keep_alive);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

HttpResponse error_response(unsigned http_version, bool keep_alive, http::status status,
                            std::string_view kind, std::string_view message) {
  auto response = make_response(http_version, keep_alive, status, error_json(kind, message) + "\n",
                                "application/json");
  if (status == http::status::unauthorized) response.set(http::field::www_authenticate, "Bearer");
  if (status == http::status::service_unavailable) response.set(http::field::retry_after, "1");
  return response;
}

bool bearer_token_matches(std::string_view header, std::string_view token) {
  if (token.empty()) return true;
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = header[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) return false;
  }
  std::size_t at = kScheme.size();
  if (header[at] != ' ' && header[at] != '\t') return false;
  while (at < header.size() && (header[at] == ' ' || header[at] == '\t')) ++at;
  std::string_view given = header.substr(at);
  while (!given.empty() && (given.back() == ' ' || given.back() == '\t')) given.remove_suffix(1);
  if (given.size() != token.size()) return false;
  unsigned char difference = 0;  // constant time: the token is a secret
  for (std::size_t i = 0; i < token.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ token[i]);
  return difference == 0;
}

}  // namespace voxrt::server
