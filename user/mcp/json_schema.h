// The subset of JSON Schema that slowburn mcp's tools declare, checked
// against a tool call's arguments: type (one name or a list), properties,
// required, additionalProperties (false), items, enum, minimum, maximum,
// minItems, maxItems, minLength. Other keywords are ignored, so a schema
// may say more (description, default) than is checked. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace slowburn {

// nullopt when `value` holds to `schema`; else the first violation, as a
// person reads it: "duration_s: 120 is above the maximum 60".
// `where` names the value in the message ("" for the top level).
std::optional<std::string> schema_violation(const nlohmann::json& schema, const nlohmann::json& value,
                                            const std::string& where = "");

}  // namespace slowburn
