#include "cli/command_map.h"

#include <fmt/format.h>

#include <cctype>
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

// `from` where it stands as a word (not the INT of INTEGER) replaced by `to`.
void replace_word(std::string& text, const std::string& from, const std::string& to) {
  auto letter = [&](size_t i) { return std::isalpha(static_cast<unsigned char>(text[i])) != 0; };
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    bool word = (at == 0 || !letter(at - 1)) && (at + from.size() == text.size() || !letter(at + from.size()));
    if (word) {
      text.replace(at, from.size(), to);
      at += to.size();
    } else {
      at += from.size();
    }
  }
}

// Each command's options without CLI11's internals: a negated flag's
// "{false}" and a value's C++ type ("FLOAT:SECONDS>0=1" reads "SECONDS>0
// (default 1)"; a validator names the value, else the type does).
class OptionFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{', open)) {
      size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty() || opt->get_type_size() == 0) return CLI::Formatter::make_option_opts(opt);
    std::string type = opt->get_type_name();
    if (size_t colon = type.find(':'); colon != std::string::npos) type = type.substr(colon + 1);
    // CLI11's names of C++ types, in words ("FLOAT in [0.5 - 3600]": "NUMBER in [0.5 - 3600]").
    replace_word(type, "UINT", "INTEGER");
    replace_word(type, "INT", "INTEGER");
    replace_word(type, "FLOAT", "NUMBER");
    std::string out = type.empty() ? std::string() : " " + type;
    if (!opt->get_default_str().empty()) out += " (default " + opt->get_default_str() + ")";
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " REQUIRED";
    if (!opt->get_excludes().empty()) {
      out += " Excludes:";
      for (const CLI::Option* other : opt->get_excludes()) out += " " + other->get_name();
    }
    return out;
  }
};

class CommandMapFormatter : public OptionFormatter {
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
  for (CLI::App* sub : subs) sub->formatter(std::make_shared<OptionFormatter>());
  app.formatter(std::make_shared<CommandMapFormatter>());
  app.footer("Each command's options and examples: slowburn CMD --help (or slowburn help CMD).");
}

}  // namespace slowburn::cli
