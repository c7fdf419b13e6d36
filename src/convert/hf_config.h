// Checks a Hugging Face config.json against a registry entry, field by field.
#pragma once

#include <string>

#include "registry/registry.h"
#include "util/error.h"

namespace kipp {

Status check_hf_config(const std::string& config_text, const Checkpoint& checkpoint);

}  // namespace kipp
