#include "cli/command_map.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>

namespace slowburn::cli {

namespace {

// The groups, in the order a person meets them; a command not listed
// (a new one) lands in "More", so it is never left out of the map.
const std::map<std::string, std::string>& group_of() {
  static const std::map<std::string, std::string> groups = {
      {"check", "Start here"},  {"demo", "Start here"},   {"trace", "Start here"},
      {"stacks", "Start here"}, {"ranks", "Tracing"},     {"catalog", "Tracing"},
      {"funclat", "Tracing"},   {"xid", "Hardware"},      {"aer", "Hardware"},
      {"pcie", "Hardware"},     {"gpuirq", "Hardware"},   {"health", "Hardware"},
      {"ib", "Fabric"},         {"qp", "Fabric"},         {"fabric", "Fabric"},
      {"probe", "Fleet"},       {"analyze", "Forensics"}, {"investigate", "Forensics"},
      {"mcp", "Agents"},
  };
  return groups;
}

constexpr size_t kLineWidth = 64;  // of the summary, after the name column

// A command's first sentence: its description up to the first ". ", ": "
// or line break, cut to one line.
std::string summary_of(const std::string& description) {
  std::string line = description.substr(0, description.find('\n'));
  for (const char* end : {". ", ": ", "; "})
    if (size_t at = line.find(end); at != std::string::npos) line = line.substr(0, at);
  if (line.ends_with(".")) line.pop_back();
  // Too long: without its parenthesis, else cut at a word.
  if (size_t paren = line.find(" ("); line.size() > kLineWidth && paren != std::string::npos && paren >= 20)
    line = line.substr(0, paren);
  if (line.size() > kLineWidth) line = line.substr(0, line.rfind(' ', kLineWidth - 4)) + " ...";
  return line;
}

class CommandMapFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    return fmt::format("  {:<13}{}\n", sub->get_name(), summary_of(sub->get_description()));
  }
};

}  // namespace

void use_command_map(CLI::App& app) {
  // Groups in order of first appearance: the map's order, whatever order the commands were added in.
  std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  for (CLI::App* sub : subs) {
    if (sub->get_group().empty()) continue;  // hidden (slowburn completion)
    auto it = group_of().find(sub->get_name());
    sub->group(it == group_of().end() ? "More" : it->second);
  }
  app.formatter(std::make_shared<CommandMapFormatter>());
  app.footer("Each command's options and examples: slowburn CMD --help (or slowburn help CMD).");
}

}  // namespace slowburn::cli
