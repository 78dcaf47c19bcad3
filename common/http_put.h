// A minimal HTTP/1.1 client for one request with a body (PUT or POST to an http:// URL), as
// `faultline report --pushgateway URL` needs to push metrics to a Prometheus Pushgateway.
// Plain HTTP only (no TLS, no redirects, no proxies): an https:// URL is InvalidArgument.
//
// Thread-safety: reentrant. Blocking: until the reply's status line arrives or the deadline.
#pragma once

#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

struct HttpUrl {
  std::string host;  // a name or an IPv4/IPv6 literal (without brackets)
  int port = 80;
  std::string path = "/";
};

// http://HOST[:PORT][/PATH]; InvalidArgument saying what is wrong.
[[nodiscard]] StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

struct HttpReply {
  int status = 0;    // e.g. 200
  std::string body;  // at most 64 KiB of it
};

// Sends METHOD url.path with body and Content-Type, reads the reply until the server closes.
// Unavailable when the server cannot be reached, DeadlineExceeded when it does not answer in
// time; any status code is returned as it is (the caller decides what is an error).
[[nodiscard]] StatusOr<HttpReply> HttpSend(const std::string& method, const HttpUrl& url,
                                           const std::string& content_type, const std::string& body,
                                           Deadline deadline);

}  // namespace fl
