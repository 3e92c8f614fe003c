#include "mcp/json_schema.h"

#include <fmt/format.h>

namespace slowburn {

using nlohmann::json;

namespace {

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  // 5.0 is an integer in JSON Schema: a whole number, whatever its spelling.
  if (type == "integer")
    return value.is_number_integer() ||
           (value.is_number_float() &&
            value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>())));
  return true;  // a type this subset does not know: not checked
}

std::string type_names(const json& type) {
  if (type.is_string()) return type.get<std::string>();
  std::string names;
  for (const json& t : type) names += (names.empty() ? "" : " or ") + t.get<std::string>();
  return names;
}

std::string value_type_name(const json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return value.type_name();
}

std::string at(const std::string& where, const std::string& child) {
  return where.empty() ? child : where + "." + child;
}

std::string label(const std::string& where) { return where.empty() ? "the arguments" : where; }

std::optional<std::string> type_violation(const json& schema, const json& value, const std::string& where) {
  if (!schema.contains("type")) return std::nullopt;
  const json& type = schema["type"];
  bool ok = false;
  if (type.is_string())
    ok = has_type(value, type.get<std::string>());
  else if (type.is_array())
    for (const json& t : type) ok = ok || (t.is_string() && has_type(value, t.get<std::string>()));
  else
    ok = true;
  if (ok) return std::nullopt;
  return fmt::format("{}: expected {}, got {} {}", label(where), type_names(type), value_type_name(value),
                     value.dump());
}

std::optional<std::string> number_violation(const json& schema, const json& value, const std::string& where) {
  if (!value.is_number()) return std::nullopt;
  double x = value.get<double>();
  if (schema.contains("minimum") && x < schema["minimum"].get<double>())
    return fmt::format("{}: {} is below the minimum {}", label(where), value.dump(), schema["minimum"].dump());
  if (schema.contains("maximum") && x > schema["maximum"].get<double>())
    return fmt::format("{}: {} is above the maximum {}", label(where), value.dump(), schema["maximum"].dump());
  return std::nullopt;
}

std::optional<std::string> object_violation(const json& schema, const json& value, const std::string& where) {
  if (!value.is_object()) return std::nullopt;
  const json properties = schema.value("properties", json::object());
  for (const json& name : schema.value("required", json::array()))
    if (name.is_string() && !value.contains(name.get<std::string>()))
      return fmt::format("{}: '{}' is required", label(where), name.get<std::string>());
  for (const auto& [name, item] : value.items()) {
    if (properties.contains(name)) {
      if (auto bad = schema_violation(properties[name], item, at(where, name))) return bad;
    } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
      std::string known;
      for (const auto& [p, _] : properties.items()) known += (known.empty() ? "" : ", ") + p;
      return fmt::format("{}: unknown argument '{}' (known: {})", label(where), name, known.empty() ? "none" : known);
    }
  }
  return std::nullopt;
}

std::optional<std::string> array_violation(const json& schema, const json& value, const std::string& where) {
  if (!value.is_array()) return std::nullopt;
  if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>())
    return fmt::format("{}: needs at least {} item(s), got {}", label(where), schema["minItems"].dump(), value.size());
  if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>())
    return fmt::format("{}: takes at most {} item(s), got {}", label(where), schema["maxItems"].dump(), value.size());
  if (schema.contains("items"))
    for (size_t i = 0; i < value.size(); ++i)
      if (auto bad = schema_violation(schema["items"], value[i], fmt::format("{}[{}]", where, i))) return bad;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> schema_violation(const json& schema, const json& value, const std::string& where) {
  if (!schema.is_object()) return std::nullopt;
  if (auto bad = type_violation(schema, value, where)) return bad;
  if (schema.contains("enum") && schema["enum"].is_array()) {
    bool listed = false;
    for (const json& option : schema["enum"]) listed = listed || option == value;
    if (!listed) return fmt::format("{}: {} is not one of {}", label(where), value.dump(), schema["enum"].dump());
  }
  if (value.is_string() && schema.contains("minLength") &&
      value.get<std::string>().size() < schema["minLength"].get<size_t>())
    return fmt::format("{}: needs at least {} character(s)", label(where), schema["minLength"].dump());
  if (auto bad = number_violation(schema, value, where)) return bad;
  if (auto bad = object_violation(schema, value, where)) return bad;
  return array_violation(schema, value, where);
}

}  // namespace slowburn
