// Every command under the wrong inputs a new user gives it: a root that is
// not there, a bad duration or pid, a library that is not one, no rank, no
// privileges. Each case: an exit status (1: an error) and one message that
// says what was wrong and what to do.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/subprocess.h"
#include "support/test_support.h"

namespace slowburn::cli_inputs_test {
namespace {

using namespace std::chrono_literals;
using testing::json_lines;
using testing::Ran;
using testing::run_slowburn;
using testing::TempDir;

struct WrongInput {
  std::string name;  // the test's parameter name
  std::vector<std::string> args;
  int status;
  std::string message;  // a part of the one line on stderr
};

std::ostream& operator<<(std::ostream& out, const WrongInput& c) { return out << c.name; }

// Refused while parsing the command line: no root needed, nothing runs.
const std::vector<WrongInput> kParseCases = {
    {"PcieRootMissing",
     {"pcie", "--sysfs-root", "/nonexistent"},
     1,
     "--sysfs-root: /nonexistent does not exist (this machine's trees are /sys and /proc"},
    {"PcieRootNotADirectory", {"pcie", "--sysfs-root", "/etc/passwd"}, 1, "/etc/passwd is not a directory"},
    {"AerRootMissing", {"aer", "--sysfs-root", "/nonexistent"}, 1, "--sysfs-root: /nonexistent does not exist"},
    {"XidProcfsRootMissing", {"xid", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"FabricRootMissing", {"fabric", "--sysfs-root", "/nonexistent"}, 1, "--sysfs-root: /nonexistent does not exist"},
    {"RanksRootMissing", {"ranks", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"TraceRootNotADirectory", {"trace", "--procfs-root", "/etc/passwd"}, 1, "/etc/passwd is not a directory"},
    {"ProbeRootMissing", {"probe", "--sysfs-root", "/nonexistent"}, 1, "--sysfs-root: /nonexistent does not exist"},
    {"HealthRootMissing", {"health", "--sysfs-root", "/nonexistent"}, 1, "--sysfs-root: /nonexistent does not exist"},
    {"CheckRootMissing", {"check", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"GpuirqRootMissing", {"gpuirq", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"IbRootMissing", {"ib", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"QpRootMissing", {"qp", "--sysfs-root", "/nonexistent"}, 1, "--sysfs-root: /nonexistent does not exist"},
    {"InvestigateRootMissing",
     {"investigate", "--sysfs-root", "/nonexistent"},
     1,
     "--sysfs-root: /nonexistent does not exist"},
    {"McpRootMissing", {"mcp", "--procfs-root", "/nonexistent"}, 1, "--procfs-root: /nonexistent does not exist"},
    {"ProbesRootMissing",
     {"probes", "--pid", "1", "--procfs-root", "/nonexistent"},
     1,
     "--procfs-root: /nonexistent does not exist"},
    {"FunclatRootMissing",
     {"funclat", "--procfs-root", "/nonexistent", "c:getpid"},
     1,
     "--procfs-root: /nonexistent does not exist"},
    {"TraceDurationNotANumber",
     {"trace", "-d", "x"},
     1,
     "--duration: 'x' is not a number of seconds (e.g. 30 or 0.5) (see slowburn trace --help)"},
    {"TraceDurationNegative", {"trace", "-d", "-1"}, 1, "'-1' is not a number of seconds"},
    {"TraceIntervalZero", {"trace", "-i", "0"}, 1, "--interval: '0' is not a number of seconds above 0"},
    {"FunclatIntervalNotANumber", {"funclat", "-i", "abc", "c:getpid"}, 1, "'abc' is not a number of seconds"},
    {"InvestigateDurationZero", {"investigate", "-d", "0"}, 1, "'0' is not a number of seconds above 0"},
    {"QpDurationNotANumber", {"qp", "-d", "1s"}, 1, "'1s' is not a number of seconds"},
    {"XidDurationNotANumber", {"xid", "-d", "ten"}, 1, "'ten' is not a number of seconds"},
    {"ProbeDurationNotANumber", {"probe", "-d", "forever"}, 1, "'forever' is not a number of seconds"},
    {"ProbesPidNotANumber",
     {"probes", "--pid", "abc"},
     1,
     "--pid: 'abc' is not a process id (a positive number; slowburn ranks lists the ranks)"},
    {"TracePidZero", {"trace", "--pid", "0"}, 1, "'0' is not a process id"},
    {"IbPidNegative", {"ib", "-p", "-5"}, 1, "'-5' is not a process id"},
    {"CheckPidNotANumber", {"check", "-p", "rank0"}, 1, "'rank0' is not a process id"},
    {"UnknownOption", {"trace", "--nosuch"}, 1, "(see slowburn trace --help)"},
    {"NoSubcommand", {}, 1, "(see slowburn --help)"},
    {"UnknownCommandNamesTheClosest", {"tracee"}, 1, "unknown command tracee; did you mean trace?"},
    {"UnknownOptionBeforeTheCommand", {"--bogus"}, 1, "unknown option --bogus"},
    {"HelpForAnUnknownCommand", {"help", "catalgo"}, 1, "no command catalgo; did you mean catalog?"},
    {"XidDurationBeyondAnyClock", {"xid", "-d", "1e99"}, 1, "'1e99' seconds is more than slowburn waits: at most"},
    {"TraceDurationInfinite", {"trace", "-d", "inf"}, 1, "'inf' seconds is more than slowburn waits"},
    {"GpuirqDurationBeyondAnyClock", {"gpuirq", "-d", "1e17"}, 1, "'1e17' seconds is more than slowburn waits"},
    {"FabricDurationBeyondAnyClock",
     {"fabric", "--netdev", "eth0", "-d", "1e99"},
     1,
     "'1e99' seconds is more than slowburn waits"},
    {"HealthKernelLogADirectory", {"health", "--kmsg", "/etc"}, 1, "--kmsg: /etc is a directory"},
    {"ProbesLibraryNotAnElf", {"probes", "--lib", "/etc/passwd"}, 1, "/etc/passwd is not an ELF file (it does not"},
    // A threshold refused in one short line (CLI11's PositiveNumber printed DBL_MAX in full).
    {"TraceZThresholdNegative", {"trace", "--z-threshold", "-3"}, 1, "'-3' is not a number above 0 (e.g. 3.5)"},
    {"AnalyzeZThresholdInfinite", {"analyze", "--z-threshold", "inf", "/tmp"}, 1, "'inf' is not a number above 0"},
    // -5 picked a random rank in silence.
    {"DemoSlowRankNegative", {"demo", "--slow-rank", "-5"}, 1, "--slow-rank: Value -5 not in range 0 to 3"},
    {"StacksOneSample", {"stacks", "--samples", "0"}, 1, "--samples: Value 0 not in range 1 to 100"},
};

class WrongInputs : public ::testing::TestWithParam<WrongInput> {};

TEST_P(WrongInputs, SaysWhatWasWrongAndWhatToDo) {
  const WrongInput& c = GetParam();
  Ran ran = run_slowburn(c.args, 30s);
  EXPECT_EQ(ran.status, c.status) << ran.output;
  EXPECT_NE(ran.output.find("slowburn: "), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find(c.message), std::string::npos) << ran.output;
}

INSTANTIATE_TEST_SUITE_P(Cli, WrongInputs, ::testing::ValuesIn(kParseCases),
                         [](const auto& info) { return info.param.name; });

// As root, a process whose environment root may not read (here pid 1, in
// this VM's container) is not answered with "run as root".
TEST(CliInputs, APidRootMayNotReadIsNotAnsweredWithRunAsRoot) {
  SKIP_UNLESS_ROOT();
  Ran ran = run_slowburn({"trace", "--pid", "1", "-d", "1", "--no-hardware"}, 30s);
  EXPECT_NE(ran.status, 0) << ran.output;
  EXPECT_EQ(ran.output.find("run as root"), std::string::npos) << ran.output;
  if (ran.output.find("Permission denied") != std::string::npos) {
    EXPECT_NE(ran.output.find("denied to root as well"), std::string::npos) << ran.output;
  }
}

// A session that failed before any call leaves no recording nor timeline:
// the retry with the same --record found the file and was refused ("a
// recording is never appended to").
TEST(CliInputs, AFailedTraceLeavesNoRecording) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto sleeper = Subprocess::spawn({"/bin/sleep", "30"});
  ASSERT_TRUE(sleeper);
  std::string pid = std::to_string(sleeper->pid());
  std::string recordings = (dir.path() / "run").string() + "/";
  std::string timeline = (dir.path() / "timeline.json").string();
  for (int attempt = 0; attempt < 2; ++attempt) {
    Ran ran = run_slowburn({"trace", "--pid", pid, "-d", "1", "--no-hardware", "--host", "n1", "--record", recordings,
                            "--perfetto", timeline},
                           30s);
    EXPECT_EQ(ran.status, 1) << ran.output;
    EXPECT_NE(ran.output.find("is not a rank of a training job"), std::string::npos) << "attempt " << attempt << "\n"
                                                                                     << ran.output;
    EXPECT_EQ(ran.output.find("recorded to"), std::string::npos) << ran.output;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "run" / "n1.sbr")) << ran.output;
    EXPECT_FALSE(std::filesystem::exists(timeline)) << ran.output;
  }
  // A file that was there before the run is not this run's to remove.
  std::string existing = (dir.path() / "mine.json").string();
  std::ofstream(existing) << "{}";
  Ran ran = run_slowburn({"trace", "--pid", pid, "-d", "1", "--no-hardware", "--perfetto", existing}, 30s);
  EXPECT_EQ(ran.status, 1) << ran.output;
  EXPECT_TRUE(std::filesystem::exists(existing)) << ran.output;
}

// `slowburn help` and `slowburn help CMD` print the help (CLI11 alone said
// "A subcommand is required").
TEST(CliInputs, HelpIsACommand) {
  Ran all = run_slowburn({"help"}, 30s);
  EXPECT_EQ(all.status, 0) << all.output;
  EXPECT_NE(all.output.find("slowburn trace -d 30"), std::string::npos) << all.output;
  Ran trace = run_slowburn({"help", "trace"}, 30s);
  EXPECT_EQ(trace.status, 0) << trace.output;
  EXPECT_NE(trace.output.find("--min-cost"), std::string::npos) << trace.output;
}

// The top-level help is a map: under 60 lines, every command on one line
// in its group, each command's own help kept whole.
TEST(CliInputs, TheTopLevelHelpIsAShortGroupedMap) {
  Ran ran = run_slowburn({"--help"}, 30s);
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_LE(std::count(ran.output.begin(), ran.output.end(), '\n'), 60) << ran.output;
  for (const char* group : {"\nStart here:\n", "\nTracing:\n", "\nHardware:\n", "\nFabric:\n", "\nFleet:\n",
                            "\nForensics:\n", "\nAgents:\n"})
    EXPECT_NE(ran.output.find(group), std::string::npos) << group << "\n" << ran.output;
  EXPECT_EQ(ran.output.find("\nMore:\n"), std::string::npos) << "a command without a group\n" << ran.output;
  for (const char* command : {"check", "demo", "trace", "stacks", "ranks", "catalog", "funclat", "xid", "aer", "pcie",
                              "gpuirq", "health", "ib", "qp", "fabric", "probe", "analyze", "investigate", "mcp"})
    EXPECT_NE(ran.output.find(std::string("\n  ") + command + " "), std::string::npos) << command;
  EXPECT_NE(ran.output.find("slowburn CMD --help"), std::string::npos) << ran.output;
  Ran trace = run_slowburn({"trace", "--help"}, 30s);
  EXPECT_NE(trace.output.find("--min-cost"), std::string::npos) << "a command's help stays whole";
}

// Every command's options without CLI11's internals: no "{false}" after a
// negated flag, no C++ type before a value ("FLOAT:SECONDS>0=1"); the
// MCP server's help names every tool it serves.
TEST(CliInputs, EachCommandsHelpHasNoCli11Leftovers) {
  Ran commands = run_slowburn({"completion", "commands"}, 30s);
  ASSERT_EQ(commands.status, 0);
  std::istringstream names(commands.output);
  for (std::string name; names >> name;) {
    Ran help = run_slowburn({name, "--help"}, 30s);
    EXPECT_EQ(help.status, 0) << name;
    for (const char* leftover : {"{false}", "{true}", "FLOAT", "INT:", "TEXT:", "UINT"})
      EXPECT_EQ(help.output.find(leftover), std::string::npos) << name << " --help shows " << leftover << "\n"
                                                               << help.output;
  }
  Ran trace = run_slowburn({"trace", "--help"}, 30s);
  EXPECT_NE(trace.output.find("-i,--interval SECONDS>0 (default 1)"), std::string::npos) << trace.output;
  EXPECT_NE(trace.output.find("--no-hardware "), std::string::npos) << trace.output;
  Ran mcp = run_slowburn({"mcp", "--help"}, 30s);
  for (const char* tool : {"check", "ranks", "trace", "stacks", "events", "health", "investigate", "analyze"})
    EXPECT_NE(mcp.output.find(std::string(" ") + tool), std::string::npos) << tool << "\n" << mcp.output;
}

// The flags every command shares read the same in every --help (one
// grammar, cli/options.h): -d is "Seconds to ... (0 or left out: until ...)"
// or a duration that always ends with its default; -i "Seconds between ...";
// -p a process id, "(repeatable" where it takes several; --json JSON lines
// naming their kinds. And each refuses its wrong value the same way.
TEST(CliInputs, TheSharedFlagsReadTheSameInEveryCommand) {
  Ran commands = run_slowburn({"completion", "commands"}, 30s);
  ASSERT_EQ(commands.status, 0);
  std::istringstream names(commands.output);
  int durations = 0, intervals = 0, pids = 0, jsons = 0;
  for (std::string name; names >> name;) {
    Ran help = run_slowburn({name, "--help"}, 30s);
    // An option's line and the one after it (CLI11 wraps a long type).
    auto option = [&](const std::string& flag) -> std::string {
      size_t at = help.output.find("\n  " + flag);
      if (at == std::string::npos) return "";
      size_t end = help.output.find('\n', help.output.find('\n', at + 1) + 1);
      return help.output.substr(at + 1, end - at - 1);
    };
    if (std::string d = option("-d,--duration "); !d.empty()) {
      ++durations;
      bool forever = d.find("SECONDS ") != std::string::npos && d.find("(0 or left out: until ") != std::string::npos;
      bool ends = d.find("SECONDS>0 (default ") != std::string::npos;
      EXPECT_TRUE(forever || ends) << name << ":\n" << d;
      EXPECT_EQ(run_slowburn({name, "-d", "-1"}, 30s).status, 1) << name;
    }
    if (std::string i = option("-i,--interval "); !i.empty()) {
      ++intervals;
      EXPECT_NE(i.find("Seconds between "), std::string::npos) << name << ":\n" << i;
      EXPECT_NE(i.find("(default "), std::string::npos) << name << ":\n" << i;
      Ran too_long = run_slowburn({name, "-i", "7200"}, 30s);
      EXPECT_EQ(too_long.status, 1) << name;
      EXPECT_NE(too_long.output.find("at most 3600"), std::string::npos) << name << ": " << too_long.output;
    }
    if (std::string p = option("-p,--pid "); !p.empty()) {
      ++pids;
      EXPECT_TRUE(p.find("PID ...") == std::string::npos || p.find("(repeatable") != std::string::npos) << name << ":\n"
                                                                                                        << p;
      Ran bad = run_slowburn({name, "-p", "x"}, 30s);
      EXPECT_NE(bad.output.find("'x' is not a process id"), std::string::npos) << name << ": " << bad.output;
    }
    if (std::string j = option("--json "); !j.empty()) {
      ++jsons;
      EXPECT_NE(j.find("JSON lines, one object a line (kind: "), std::string::npos) << name << ":\n" << j;
    }
  }
  // Which commands carry them: docs/cli.md's table.
  EXPECT_GE(durations, 11);
  EXPECT_GE(intervals, 11);
  EXPECT_GE(pids, 8);
  EXPECT_GE(jsons, 16);
}

// A directory that exists but is not a sysfs: not "a machine with no PCIe device".
TEST(CliInputs, PcieOnADirectoryThatIsNotASysfs) {
  TempDir dir;
  for (const char* tool : {"pcie", "aer"}) {
    Ran ran = run_slowburn({tool, "--sysfs-root", dir.path().string(), "--procfs-root", dir.path().string()});
    EXPECT_EQ(ran.status, 1) << tool << ": " << ran.output;
    EXPECT_NE(ran.output.find("has no bus/pci/devices: not a sysfs tree"), std::string::npos) << ran.output;
  }
}

// A machine with no AER counters still gets an answer in JSON: the table's summary line.
TEST(CliInputs, AerOnceJsonAnswersWithoutCounters) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "bus/pci/devices");
  Ran ran = run_slowburn(
      {"aer", "--once", "--json", "--sysfs-root", dir.path().string(), "--procfs-root", dir.path().string()});
  EXPECT_EQ(ran.status, 2) << "nothing to watch: " << ran.output;
  auto lines = json_lines(ran.output);
  ASSERT_EQ(lines.size(), 1u) << ran.output;
  EXPECT_EQ(lines[0]["kind"], "summary") << ran.output;
  EXPECT_EQ(lines[0]["devices"], 0) << ran.output;
  EXPECT_NE(lines[0].value("note", "").find("No device has AER counters"), std::string::npos) << ran.output;
}

// One exit-code table (docs/cli.md): where a command finds nothing to
// watch it says why in one line and exits 2, as when no verdict is reached.
TEST(CliInputs, NothingToWatchExitsTwoInEveryCommand) {
  SKIP_UNLESS_ROOT();
  TempDir empty;  // a procfs with no process, a sysfs with no device
  std::filesystem::create_directories(empty / "bus/pci/devices");
  std::string root = empty.path().string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"ranks", "--procfs-root", root}, "No rank processes found"},
      {{"ranks", "--json", "--procfs-root", root}, "\"kind\":\"summary\""},
      {{"trace", "-d", "1", "--no-hardware", "--procfs-root", root}, "slowburn: no rank processes found on this node"},
      {{"ib", "-d", "1", "--procfs-root", root}, "slowburn: no rank processes found on this node"},
      {{"pcie", "--sysfs-root", root, "--procfs-root", root}, "no PCIe device with link attributes"},
      {{"aer", "--once", "--sysfs-root", root, "--procfs-root", root}, "No device has AER counters"},
      {{"fabric", "-d", "1", "--sysfs-root", root}, "slowburn: nothing to watch: no RDMA devices"},
      {{"gpuirq", "-d", "1", "--name-prefix", "no-such-handler"},
       "slowburn: nothing to watch: no interrupt handler named no-such-handler*"},
  };
  for (const Case& c : cases) {
    Ran ran = run_slowburn(c.args, 30s);
    std::string line = c.args.front() + " " + c.args[1];
    EXPECT_EQ(ran.status, 2) << line << ": " << ran.output;
    EXPECT_NE(ran.output.find(c.says), std::string::npos) << line << ": " << ran.output;
  }
}

// Completing a word in bash, through the script the binary generates from its commands.
std::string complete(const std::string& script, const std::string& words, int cword) {
  TempDir dir;
  std::ofstream(dir / "slowburn.bash") << script;
  std::string line = "source " + (dir / "slowburn.bash").string() + "; COMP_WORDS=(" + words +
                     "); COMP_CWORD=" + std::to_string(cword) + "; _slowburn; echo \"${COMPREPLY[*]}\"";
  std::string out;
  FILE* pipe = popen(("bash -c '" + line + "'").c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe)) out += buffer;
  pclose(pipe);
  return out;
}

TEST(CliInputs, BashCompletionAndManPagesComeFromTheCommands) {
  Ran script = run_slowburn({"completion", "bash"}, 30s);
  ASSERT_EQ(script.status, 0) << script.output;
  EXPECT_EQ(complete(script.output, "slowburn tr", 1), "trace\n");
  EXPECT_NE(complete(script.output, "slowburn trace --pro", 2).find("--probe"), std::string::npos);
  EXPECT_NE(complete(script.output, "slowburn -v stacks --sa", 3).find("--samples"), std::string::npos);
  EXPECT_EQ(complete(script.output, "slowburn probes --li", 2), "--lib\n") << "an alias completes as its command";
  // Every command has its page (make man: help2man on its --help), with its options.
  Ran commands = run_slowburn({"completion", "commands"}, 30s);
  ASSERT_EQ(commands.status, 0);
  std::istringstream names(commands.output);
  std::string name;
  int pages = 0;
  for (; names >> name; ++pages) {
    auto page = std::filesystem::path(SLOWBURN_BUILD_DIR) / "man" / ("slowburn-" + name + ".8");
    std::string text = testing::read_text(page.string());
    std::string title = "SLOWBURN-" + name;
    for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_NE(text.find(".TH " + title), std::string::npos) << page;
    EXPECT_NE(text.find("help"), std::string::npos) << page;
    EXPECT_NE(text.find(".SH \"SEE ALSO\"\n.BR slowburn (8)"), std::string::npos) << page << ": points back at the map";
  }
  EXPECT_EQ(pages, 19) << commands.output;
  EXPECT_NE(testing::read_text(std::string(SLOWBURN_BUILD_DIR) + "/man/slowburn-trace.8").find("probe"),
            std::string::npos);
  EXPECT_NE(testing::read_text(std::string(SLOWBURN_BUILD_DIR) + "/man/slowburn.8").find("slowburn-stacks"),
            std::string::npos)
      << "slowburn(8) points to every command's page";
}

// "0 Xid events" is no all-clear where no NVIDIA driver could write one: said.
TEST(CliInputs, XidSaysWhenNoNvidiaDriverIsLoaded) {
  // The live kernel log only (a captured tree has none): the note follows this machine's driver.
  bool driver = std::filesystem::exists("/proc/driver/nvidia");
  Ran ran = run_slowburn({"xid", "-d", "0.5"}, 30s);
  EXPECT_EQ(ran.status, driver ? 0 : 2) << "without a driver a quiet watch is nothing to watch: " << ran.output;
  EXPECT_EQ(ran.output.find("no NVIDIA driver is loaded (/proc/driver/nvidia is absent)") != std::string::npos, !driver)
      << ran.output;
}

// The global flag works after the command as before it.
TEST(CliInputs, VerboseAfterTheCommand) {
  Ran before = run_slowburn({"-v", "catalog"});
  Ran after = run_slowburn({"catalog", "-v"});
  EXPECT_EQ(before.status, 0) << before.output;
  EXPECT_EQ(after.status, 0) << after.output;
  EXPECT_EQ(after.output, before.output);
}

// -p means --pid in catalog as in trace, funclat, ib, qp, check and stacks.
TEST(CliInputs, CatalogTakesDashP) {
  std::string self = std::to_string(getpid());
  Ran longer = run_slowburn({"catalog", "--pid", self});
  Ran shorter = run_slowburn({"catalog", "-p", self});
  EXPECT_EQ(shorter.status, longer.status) << shorter.output;
  EXPECT_EQ(shorter.output, longer.output);
}

TEST(CliInputs, ProbesInALibraryThatIsNotThere) {
  Ran ran = run_slowburn({"probes", "--lib", "/nonexistent/libmpi.so.40"});
  EXPECT_EQ(ran.status, 1) << ran.output;
  EXPECT_NE(ran.output.find("slowburn: --lib /nonexistent/libmpi.so.40: cannot stat"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("give the path of a library file"), std::string::npos) << ran.output;
  Ran not_elf = run_slowburn({"probes", "--lib", "/etc/passwd"});
  EXPECT_EQ(not_elf.status, 1) << not_elf.output;
  EXPECT_NE(not_elf.output.find("/etc/passwd is not an ELF file"), std::string::npos) << not_elf.output;
}

// A FIFO where a library should be: reading it would block forever.
TEST(CliInputs, ProbesInAFifoDoesNotHang) {
  TempDir dir;
  auto fifo = dir / "libmpi.so.40";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Ran ran = run_slowburn({"probes", "--lib", fifo.string()}, 10s);
  EXPECT_EQ(ran.status, 1) << ran.output;
  EXPECT_NE(ran.output.find("is not a regular file"), std::string::npos) << ran.output;
}

TEST(CliInputs, IbWithNoRankOnTheNode) {
  SKIP_UNLESS_ROOT();
  TempDir empty;  // a procfs with no process at all
  Ran ran = run_slowburn({"ib", "-d", "1", "--procfs-root", empty.path().string()});
  EXPECT_EQ(ran.status, 2) << "nothing to watch: " << ran.output;
  EXPECT_NE(ran.output.find("no rank processes found on this node"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("give -p PID or --lib PATH"), std::string::npos) << ran.output;
}

// A rank without NCCL: the reason is in the error itself, not "see above"
// pointing at nothing.
TEST(CliInputs, IbWithARankThatHasNoNccl) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  auto rank = Subprocess::spawn({testing::target_path("standin_rank").string(), (dir / "go").string(), "0", "0"});
  ASSERT_TRUE(rank.ok());
  Ran ran = run_slowburn({"ib", "-d", "1", "-p", std::to_string(rank->pid())});
  EXPECT_EQ(ran.status, 2) << "nothing to watch: " << ran.output;
  EXPECT_EQ(ran.output.find("see above"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("slowburn: no NCCL IB probe could be attached in 1 process(es): libnccl.so not loaded"),
            std::string::npos)
      << ran.output;
  EXPECT_NE(ran.output.find("trace a job whose NCCL uses the IB/RoCE transport"), std::string::npos) << ran.output;
}

// No privileges: the one line says so before any partial output.
TEST(CliInputs, AerWithoutPrivilegesPrintsNoTableFirst) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user";
  Ran ran = run_slowburn({"aer", "-d", "1"}, 30s,
                         {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"});
  EXPECT_EQ(ran.status, 1) << ran.output;
  EXPECT_EQ(ran.output.rfind("slowburn: tracing needs privileges", 0), 0u) << ran.output;
  EXPECT_NE(ran.output.find("run as root"), std::string::npos) << ran.output;
}

}  // namespace
}  // namespace slowburn::cli_inputs_test
