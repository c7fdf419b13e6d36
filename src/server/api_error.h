// An answer that refuses a request: its HTTP status, what is wrong, and the field at fault. Each
// API writes it in its own error shape (error_json, anthropic_error_json). Everything in the API
// layer that can refuse returns ApiResult<T> (a value or the refusal) or ApiStatus.
#pragma once

#include <string>

#include "util/error.h"

namespace kipp::server {

struct ApiError {
  ApiError(int status_code, std::string text, std::string field = {}, std::string error_type = "invalid_request_error",
           std::string error_code = {})
      : status(status_code),
        message(std::move(text)),
        param(std::move(field)),
        type(std::move(error_type)),
        code(std::move(error_code)) {}

  int status;
  std::string message;
  std::string param;  // the field at fault, when there is one
  std::string type;
  std::string code;
};

template <class T>
using ApiResult = Result<T, ApiError>;
using ApiStatus = Result<void, ApiError>;

}  // namespace kipp::server
