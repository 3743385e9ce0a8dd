#include "server/http_reply.h"

namespace valet {

void SendJson(httplib::Response& res, int status, const std::string& json) {
  res.status = status;
  res.set_content(json, "application/json");
}

void SendError(ServerContext& ctx, httplib::Response& res, const ApiError& error) {
  ctx.metrics.CountHttpError(error.http_status);
  SendJson(res, error.http_status, error.ToJson());
}

}  // namespace valet
