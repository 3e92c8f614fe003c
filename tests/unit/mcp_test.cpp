// slowburn mcp's protocol without stdio or BPF: the dispatch (mcp_server)
// from a request to its answer, the argument checks (json_schema), and the
// read-only tools that run on fixture trees (ranks, health, analyze's
// errors), their results held to their own outputSchema.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mcp/json_schema.h"
#include "mcp/mcp_server.h"
#include "mcp/mcp_stdio.h"
#include "mcp/mcp_tools.h"
#include "support/synthetic_recording.h"
#include "support/temp_dir.h"

namespace slowburn::mcp_test {
namespace {

using nlohmann::json;

const std::filesystem::path kFixtures = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/fixtures";

ServerIdentity test_server() {
  ServerIdentity server;
  server.version = "0.1.0";
  server.instructions = "test";
  return server;
}

// The real table, on the fixture trees: nothing here traces.
McpToolContext fixture_context() {
  McpToolContext context;
  context.proc_root = kFixtures / "proc";
  context.sysfs_root = kFixtures / "health/sys";
  context.kmsg_file = kFixtures / "health/kmsg";
  context.host = "test";
  return context;
}

ToolTable real_tools() {
  auto tools = slowburn_tools(fixture_context());
  EXPECT_TRUE(tools.ok());
  return tools.ok() ? *tools : ToolTable{};
}

json request(const std::string& method, json params = json::object(), json id = 1) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json answer(const json& message, const ToolTable& tools) {
  auto reply = handle_message(message.dump(), tools, test_server());
  EXPECT_TRUE(reply.has_value()) << message;
  return reply.value_or(json());
}

json call(const ToolTable& tools, const std::string& name, json arguments = json::object()) {
  return answer(request("tools/call", {{"name", name}, {"arguments", std::move(arguments)}}), tools);
}

int error_code(const json& reply) { return reply.at("error").at("code").get<int>(); }

TEST(McpProtocol, InitializeAnswersTheClientsVersionWhenSupported) {
  ToolTable tools = real_tools();
  for (const char* version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    json reply = answer(request("initialize", {{"protocolVersion", version},
                                               {"capabilities", json::object()},
                                               {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                        tools);
    EXPECT_EQ(reply["jsonrpc"], "2.0");
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["protocolVersion"], version);
    EXPECT_EQ(reply["result"]["serverInfo"]["name"], "slowburn");
    EXPECT_EQ(reply["result"]["serverInfo"]["version"], "0.1.0");
    EXPECT_TRUE(reply["result"]["capabilities"]["tools"].is_object());
    EXPECT_EQ(reply["result"]["instructions"], "test");
  }
}

TEST(McpProtocol, InitializeAnswersTheLatestForAnUnknownVersion) {
  ToolTable tools = real_tools();
  json reply = answer(request("initialize", {{"protocolVersion", "2099-01-01"}}), tools);
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(negotiate_protocol_version(json(42)), "2025-11-25");
  // No version at all is a malformed initialize.
  EXPECT_EQ(error_code(answer(request("initialize"), tools)), kInvalidParams);
}

TEST(McpProtocol, NotificationsGetNoReply) {
  ToolTable tools = real_tools();
  EXPECT_FALSE(handle_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", tools, test_server()));
  EXPECT_FALSE(handle_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})", tools,
                              test_server()));
  // Even an unknown method, as a notification, and a response to nothing this server asked.
  EXPECT_FALSE(handle_message(R"({"jsonrpc":"2.0","method":"no/such"})", tools, test_server()));
  EXPECT_FALSE(handle_message(R"({"jsonrpc":"2.0","id":7,"result":{}})", tools, test_server()));
}

TEST(McpProtocol, PingAnswersAnEmptyResult) {
  json reply = answer(request("ping", json::object(), "abc"), real_tools());
  EXPECT_EQ(reply["id"], "abc");
  EXPECT_EQ(reply["result"], json::object());
  // params may be left out.
  EXPECT_EQ(answer({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}, real_tools())["result"], json::object());
}

TEST(McpProtocol, ToolsListGivesEveryToolWithObjectSchemas) {
  json reply = answer(request("tools/list"), real_tools());
  std::vector<std::string> names;
  for (const json& tool : reply["result"]["tools"]) {
    names.push_back(tool["name"]);
    EXPECT_FALSE(tool["description"].get<std::string>().empty()) << tool["name"];
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object") << tool["name"];
    EXPECT_TRUE(tool["outputSchema"]["properties"].is_object()) << tool["name"];
    EXPECT_EQ(tool["annotations"]["readOnlyHint"], true) << tool["name"];
    EXPECT_EQ(tool["annotations"]["destructiveHint"], false) << tool["name"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"check", "ranks", "trace", "stacks", "events", "health", "investigate",
                                             "analyze"}));
  const json& trace = reply["result"]["tools"][2];
  EXPECT_EQ(trace["inputSchema"]["properties"]["duration_s"]["maximum"], kMaxTraceSeconds);
  for (const char* field : {"findings", "verdict", "ranks"})
    EXPECT_TRUE(trace["outputSchema"]["properties"].contains(field)) << field;
  const json& verdict = trace["outputSchema"]["properties"]["verdict"];
  for (const char* field : {"stragglers", "hangs", "episodes"})
    EXPECT_EQ(verdict["properties"][field]["type"], "array") << field;
}

TEST(McpProtocol, ServerDiscoverIsInitializePlusTheTools) {
  ToolTable tools = real_tools();
  json discover = answer(request("server/discover"), tools)["result"];
  json init = answer(request("initialize", {{"protocolVersion", "2025-11-25"}}), tools)["result"];
  json list = answer(request("tools/list"), tools)["result"];
  EXPECT_EQ(discover["tools"], list["tools"]);
  discover.erase("tools");
  EXPECT_EQ(discover, init);
}

TEST(McpProtocol, MalformedJsonIsAParseErrorWithIdNull) {
  ToolTable tools = real_tools();
  for (const char* line : {"{not json", R"({"jsonrpc":"2.0","id":1,"method":"ping")", "\x01\x02"}) {
    auto reply = handle_message(line, tools, test_server());
    ASSERT_TRUE(reply) << line;
    EXPECT_EQ(error_code(*reply), kParseError) << line;
    EXPECT_TRUE((*reply)["id"].is_null());
    EXPECT_EQ((*reply)["jsonrpc"], "2.0");
  }
}

TEST(McpProtocol, InvalidRequestsSayWhy) {
  ToolTable tools = real_tools();
  EXPECT_EQ(error_code(*handle_message(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", tools, test_server())),
            kInvalidRequest);
  EXPECT_EQ(error_code(*handle_message(R"({"id":1,"method":"ping"})", tools, test_server())), kInvalidRequest);
  EXPECT_EQ(error_code(*handle_message(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", tools, test_server())),
            kInvalidRequest);
  EXPECT_EQ(error_code(*handle_message(R"({"jsonrpc":"2.0","id":1,"method":7})", tools, test_server())),
            kInvalidRequest);
  EXPECT_EQ(error_code(*handle_message(R"("ping")", tools, test_server())), kInvalidRequest);
  EXPECT_EQ(
      error_code(*handle_message(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})", tools, test_server())),
      kInvalidParams);
}

TEST(McpProtocol, UnknownMethodIsMethodNotFound) {
  json reply = answer(request("resources/list", json::object(), 9), real_tools());
  EXPECT_EQ(error_code(reply), kMethodNotFound);
  EXPECT_EQ(reply["id"], 9);
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("resources/list"), std::string::npos);
}

TEST(McpProtocol, UnknownToolIsInvalidParamsNamingTheTools) {
  json reply = call(real_tools(), "rm_rf");
  EXPECT_EQ(error_code(reply), kInvalidParams);
  std::string message = reply["error"]["message"];
  EXPECT_NE(message.find("Unknown tool: rm_rf"), std::string::npos) << message;
  EXPECT_NE(message.find("check, ranks, trace, stacks, events, health, investigate, analyze"), std::string::npos)
      << message;
}

TEST(McpProtocol, MalformedToolsCallParamsAreInvalidParams) {
  ToolTable tools = real_tools();
  EXPECT_EQ(error_code(answer(request("tools/call", {{"arguments", json::object()}}), tools)), kInvalidParams);
  EXPECT_EQ(error_code(answer(request("tools/call", {{"name", 3}}), tools)), kInvalidParams);
  EXPECT_EQ(error_code(answer(request("tools/call", {{"name", "ranks"}, {"arguments", json::array()}}), tools)),
            kInvalidParams);
}

// Arguments that break the tool's inputSchema: a tool error the model can act on, nothing run.
TEST(McpProtocol, BadArgumentsAreToolErrorsSayingWhat) {
  ToolTable tools = real_tools();
  auto message_of = [](const json& reply) -> std::string {
    EXPECT_EQ(reply["result"]["isError"], true) << reply;
    return reply["result"]["content"][0]["text"];
  };
  EXPECT_EQ(message_of(call(tools, "trace", {{"duration_s", 120}})),
            "trace: bad arguments: duration_s: 120 is above the maximum 50");
  EXPECT_EQ(message_of(call(tools, "trace", {{"duration_s", "five"}})),
            "trace: bad arguments: duration_s: expected number, got string \"five\"");
  EXPECT_EQ(message_of(call(tools, "trace", {{"pids", {12, "x"}}})),
            "trace: bad arguments: pids[1]: expected integer, got string \"x\"");
  EXPECT_EQ(message_of(call(tools, "health", {{"interval", 1}})),
            "health: bad arguments: the arguments: unknown argument 'interval' (known: interval_s)");
  EXPECT_EQ(message_of(call(tools, "analyze")), "analyze: bad arguments: the arguments: 'paths' is required");
  EXPECT_EQ(message_of(call(tools, "analyze", {{"paths", json::array()}})),
            "analyze: bad arguments: paths: needs at least 1 item(s), got 0");
}

TEST(McpProtocol, AFailingOrThrowingToolIsAToolErrorAndTheServerGoesOn) {
  ToolTable tools;
  auto schema = json{{"type", "object"}};
  ASSERT_TRUE(tools.add({"fails", "", "d", schema, schema, [](const json&) -> ToolOutcome {
                           return make_error("cannot read /x: permission denied; run as root");
                         }}));
  ASSERT_TRUE(tools.add({"throws", "", "d", schema, schema, [](const json& a) -> ToolOutcome {
                           return json{{"x", a.at("missing").get<int>()}};
                         }}));
  json failed = call(tools, "fails");
  EXPECT_EQ(failed["result"]["isError"], true);
  EXPECT_EQ(failed["result"]["content"][0]["text"], "fails: cannot read /x: permission denied; run as root");
  EXPECT_FALSE(failed["result"].contains("structuredContent"));
  json thrown = call(tools, "throws");
  EXPECT_EQ(thrown["result"]["isError"], true);
  EXPECT_NE(thrown["result"]["content"][0]["text"].get<std::string>().find("failed unexpectedly"), std::string::npos);
  EXPECT_EQ(answer(request("ping"), tools)["result"], json::object());
}

// A tool is one entry, listed and called with nothing else changed.
TEST(McpProtocol, ATableEntryIsAToolListedAndCalled) {
  ToolTable tools = real_tools();
  McpTool check;
  check.name = "jobs";
  check.description = "a later tool";
  check.input_schema = {{"type", "object"}, {"properties", {{"job", {{"type", "string"}}}}}};
  check.output_schema = {{"type", "object"}, {"properties", {{"job", {{"type", "string"}}}}}, {"required", {"job"}}};
  check.handler = [](const json& args) -> ToolOutcome { return json{{"job", args.value("job", "")}}; };
  ASSERT_TRUE(tools.add(check));
  EXPECT_FALSE(tools.add(check));  // a name once
  McpTool bad = check;
  bad.name = "bad";
  bad.output_schema = {{"type", "array"}};
  EXPECT_FALSE(tools.add(bad));
  EXPECT_EQ(answer(request("tools/list"), tools)["result"]["tools"].size(), 9u);
  json reply = call(tools, "jobs", {{"job", "42"}});
  EXPECT_EQ(reply["result"]["isError"], false);
  EXPECT_EQ(reply["result"]["structuredContent"], (json{{"job", "42"}}));
  // The text item carries the same JSON.
  EXPECT_EQ(json::parse(reply["result"]["content"][0]["text"].get<std::string>()), (json{{"job", "42"}}));
}

TEST(McpSchema, TheSubsetChecked) {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"n", {{"type", "integer"}, {"minimum", 1}}},
                   {"x", {{"type", {"number", "null"}}}},
                   {"kind", {{"enum", {"a", "b"}}}},
                   {"list", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 2}}}}},
                 {"required", {"n"}},
                 {"additionalProperties", false}};
  EXPECT_EQ(schema_violation(schema, {{"n", 3}}), std::nullopt);
  EXPECT_EQ(schema_violation(schema, {{"n", 3.0}}), std::nullopt);  // a whole number is an integer
  EXPECT_EQ(schema_violation(schema, {{"n", 3}, {"x", nullptr}, {"kind", "b"}, {"list", {"p"}}}), std::nullopt);
  EXPECT_EQ(schema_violation(schema, {{"n", 2.5}}), "n: expected integer, got number 2.5");
  EXPECT_EQ(schema_violation(schema, {{"n", 0}}), "n: 0 is below the minimum 1");
  EXPECT_EQ(schema_violation(schema, {{"n", 1}, {"kind", "c"}}), "kind: \"c\" is not one of [\"a\",\"b\"]");
  EXPECT_EQ(schema_violation(schema, {{"n", 1}, {"list", {"a", "b", "c"}}}), "list: takes at most 2 item(s), got 3");
  EXPECT_EQ(schema_violation(schema, json::array()), "the arguments: expected object, got array []");
}

// A tool's result holds to the outputSchema it lists (the SDK's client refuses one that does not).
void expect_holds_to_output_schema(const ToolTable& tools, const std::string& name, const json& result) {
  ASSERT_EQ(result["isError"], false) << result;
  EXPECT_EQ(schema_violation(tools.find(name)->output_schema, result["structuredContent"]), std::nullopt)
      << result["structuredContent"].dump().substr(0, 2000);
}

TEST(McpTools, RanksFromACapturedProcfs) {
  ToolTable tools = real_tools();
  json reply = call(tools, "ranks");
  expect_holds_to_output_schema(tools, "ranks", reply["result"]);
  const json& ranks = reply["result"]["structuredContent"]["ranks"];
  ASSERT_FALSE(ranks.empty());
  for (const json& r : ranks) {
    EXPECT_TRUE(r.contains("pid") && r.contains("rank") && r.contains("launcher")) << r;
  }
}

TEST(McpTools, HealthOnTheFixtureTree) {
  ToolTable tools = real_tools();
  json reply = call(tools, "health", {{"interval_s", 0}});
  expect_holds_to_output_schema(tools, "health", reply["result"]);
  const json& out = reply["result"]["structuredContent"];
  EXPECT_FALSE(out["checks"].empty());
  for (const json& c : out["checks"]) {
    EXPECT_EQ(c["kind"], "health");
    EXPECT_EQ(c["host"], "test");
  }
  EXPECT_FALSE(out["summary"].get<std::string>().empty());
}

TEST(McpTools, AnalyzeARecordingNamesTheSlowRank) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::write_synthetic_recording(dir / "node-a.sbr", 2));
  ToolTable tools = real_tools();
  json reply = call(tools, "analyze", {{"paths", {dir.path().string()}}});
  expect_holds_to_output_schema(tools, "analyze", reply["result"]);
  const json& out = reply["result"]["structuredContent"];
  ASSERT_EQ(out["nodes"].size(), 1u);
  EXPECT_EQ(out["nodes"][0]["host"], "node-a");
  EXPECT_EQ(out["verdict"]["judged"], true);
  ASSERT_EQ(out["verdict"]["stragglers"].size(), 1u) << out["verdict"].dump().substr(0, 2000);
  EXPECT_EQ(out["verdict"]["stragglers"][0]["rank"], 2);
  EXPECT_EQ(out["verdict"]["stragglers"][0]["node"], "node-a");
}

TEST(McpTools, AnalyzeAMissingRecordingIsAToolError) {
  json reply = call(real_tools(), "analyze", {{"paths", {"/nonexistent/run42"}}});
  EXPECT_EQ(reply["result"]["isError"], true);
  std::string message = reply["result"]["content"][0]["text"];
  EXPECT_NE(message.find("/nonexistent/run42"), std::string::npos) << message;
}

TEST(McpStdio, EveryLineAnsweredInOrderNotificationsSkipped) {
  ToolTable tools = real_tools();
  std::istringstream in(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n"
      "\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
      "this is not json\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}\n");
  std::vector<json> out;
  std::atomic<bool> stop{false};
  int status = serve_lines(
      in, [&](const std::string& line) { return out.push_back(json::parse(line)), true; }, tools, test_server(), stop);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]["id"], 1);
  EXPECT_EQ(out[1]["error"]["code"], kParseError);
  EXPECT_EQ(out[2]["error"]["code"], kMethodNotFound);
}

}  // namespace
}  // namespace slowburn::mcp_test
