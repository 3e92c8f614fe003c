// slowburn mcp driven by the official MCP client (the TypeScript SDK's
// Client and StdioClientTransport, installed by `make deps` into
// build/node): tests/mcp/client.mjs lists the tools, calls each one (the
// SDK holds every structured result to the tool's outputSchema), traces a
// real OpenMPI job with one slowed rank and checks the verdict names it,
// analyzes a recording, and checks the errors (malformed JSON, unknown
// method and tool, bad arguments) are answered while the server lives on.
// The script prints a JSON summary; this test asserts on it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/subprocess.h"
#include "demo/mpi_job.h"
#include "support/synthetic_recording.h"
#include "support/test_support.h"

namespace slowburn::mcp_scenario_test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::TempDir;

const std::filesystem::path kNodeDir = std::filesystem::path(SLOWBURN_BUILD_DIR) / "node";
const std::filesystem::path kScript = std::filesystem::path(SLOWBURN_SOURCE_DIR) / "tests/mcp/client.mjs";

// The script's summary: its last line that is a JSON object with "failures".
std::optional<json> summary_of(const std::string& output) {
  std::istringstream lines(output);
  std::optional<json> summary;
  for (std::string line; std::getline(lines, line);) {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_object() && parsed.contains("failures")) summary = parsed;
  }
  return summary;
}

TEST(McpCli, HelpShowsExamples) {
  testing::Ran ran = testing::run_slowburn({"mcp", "--help"});
  EXPECT_EQ(ran.status, 0);
  EXPECT_NE(ran.output.find("Examples:"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("\"args\":[\"mcp\"]"), std::string::npos) << ran.output;
}

TEST(McpWithTheSdkClient, ListsAndCallsEveryToolNamesTheSlowRankAndSurvivesErrors) {
  SKIP_UNLESS_MPI();
  auto node = find_program("node");
  if (!node) GTEST_SKIP() << "node not installed (make deps installs nodejs and npm)";
  if (!std::filesystem::exists(kNodeDir / "node_modules/@modelcontextprotocol/sdk/package.json"))
    GTEST_SKIP() << "the MCP SDK is not installed in " << kNodeDir.string()
                 << " (make deps runs npm ci --prefix build/node from tests/mcp/package-lock.json)";

  TempDir dir;
  constexpr int kRecordedSlowRank = 1;
  ASSERT_TRUE(testing::write_synthetic_recording(dir / "node-a.sbr", kRecordedSlowRank));

  constexpr int kSlowRank = 2;
  MpiJobOptions options;
  options.program = demo_workload_argv(testing::workload_path("slowburn-mpi-workload"), kSlowRank,
                                       testing::kClearSlowdown, 3000, 120);
  options.ranks = 4;
  options.log_path = (dir / "mpirun.log").string();
  auto job = MpiJob::launch(options);
  ASSERT_TRUE(job.ok()) << job.error().message;
  std::string pids;
  for (int32_t pid : job->pids()) pids += (pids.empty() ? "" : ",") + std::to_string(pid);

  auto client =
      Subprocess::spawn({*node, kScript.string()},
                        {(dir / "client.out").string(),
                         {"SLOWBURN=" + testing::slowburn_binary().string(), "SLOWBURN_NODE_DIR=" + kNodeDir.string(),
                          "SLOWBURN_PIDS=" + pids, "SLOWBURN_SLOW_RANK=" + std::to_string(kSlowRank),
                          "SLOWBURN_TRACE_S=5", "SLOWBURN_RECORDING=" + (dir / "node-a.sbr").string()}});
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto status = client->wait_for(180s);
  job->stop();
  std::string output = testing::read_text(dir / "client.out");
  ASSERT_TRUE(status.has_value()) << "the client did not finish in 180 s:\n" << output;
  auto summary = summary_of(output);
  ASSERT_TRUE(summary) << "no summary line:\n" << output;
  std::cout << "client.mjs summary: " << summary->dump() << "\n";

  EXPECT_EQ((*summary)["failures"], json::array()) << summary->dump(2);
  EXPECT_EQ(*status, 0) << output;
  EXPECT_EQ((*summary)["server"]["name"], "slowburn");
  EXPECT_EQ((*summary)["tools"],
            (json{"check", "ranks", "trace", "stacks", "events", "health", "investigate", "analyze"}));
  // Every tool answered a structured result the SDK validated against its outputSchema.
  for (const char* tool : {"check", "ranks", "trace", "stacks", "events", "health", "investigate", "analyze"}) {
    const json& c = (*summary)["calls"][tool];
    EXPECT_EQ(c["validated"], true) << tool << ": " << c;
    EXPECT_EQ(c["text_is_same_json"], true) << tool << ": " << c;
  }
  EXPECT_EQ((*summary)["ranks_found"], (json{0, 1, 2, 3}));
  EXPECT_EQ((*summary)["stacks_ranks"], (json{0, 1, 2, 3})) << "stacks: a snapshot of every rank";
  EXPECT_EQ((*summary)["stragglers"], (json{kSlowRank})) << (*summary)["straggler_summary"];
  EXPECT_EQ((*summary)["analyze_stragglers"], (json{kRecordedSlowRank}));
  EXPECT_EQ((*summary)["can_trace"], true);
  // The recording's investigation: the symptom, then the recorded slow rank.
  EXPECT_EQ((*summary)["investigate_first_edge"], fmt::format("symptom -> rank{}", kRecordedSlowRank));
  EXPECT_EQ((*summary)["investigate_layers"][0], "collective:ruled_in");
  EXPECT_EQ((*summary)["unknown_tool"]["code"], -32602);
  EXPECT_EQ((*summary)["unknown_method"]["code"], -32601);
  EXPECT_EQ((*summary)["bad_arguments"]["is_error"], true);
  EXPECT_EQ((*summary)["alive_after_errors"], true);
  EXPECT_EQ((*summary)["raw"]["parse_error"]["code"], -32700);
  EXPECT_EQ((*summary)["raw"]["stray_stdout_lines"], json::array());
  EXPECT_EQ((*summary)["raw"]["exit"]["code"], 0);
}

}  // namespace
}  // namespace slowburn::mcp_scenario_test
