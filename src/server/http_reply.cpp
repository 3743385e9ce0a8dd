#include "server/http_reply.h"

namespace valet {

http::HttpResponse JsonReply(int status, std::string json) {
  http::HttpResponse r;
  r.status = status;
  r.body = std::move(json);
  return r;
}

http::HttpResponse ErrorReply(ServerContext& ctx, const ApiError& error) {
  ctx.metrics.CountHttpError(error.http_status);
  return JsonReply(error.http_status, error.ToJson());
}

}  // namespace valet
