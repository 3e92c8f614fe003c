// Attach decisions on kernels described by hand (loader/features.h): what
// slowburn does on a kernel it does not run on here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>

#include "loader/features.h"
#include "loader/gpuirq_program.h"
#include "loader/skeleton.h"
#include "loader/uprobe_links.h"
#include "sources/kernel_sources.h"

namespace slowburn::kernel_features_test {
namespace {

KernelFeatures kernel_with(std::set<std::string> tracepoints, bool uprobe_multi = true) {
  KernelFeatures k;
  k.release = "test";
  k.btf = true;
  k.uprobe_multi = uprobe_multi;
  k.tracefs = "/sys/kernel/tracing";
  k.tracepoint = [tracepoints](const std::string& system, const std::string& event) {
    return tracepoints.contains(system + ":" + event);
  };
  return k;
}

TEST(AttachMode, MultiUprobeLinksWhereTheKernelHasThemElsePerfLinks) {
  auto multi = choose_attach_mode(kernel_with({}, true), std::nullopt);
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(*multi, AttachMode::multi_link);
  auto old = choose_attach_mode(kernel_with({}, false), std::nullopt);  // before 6.10
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*old, AttachMode::perf_link);
  // Asking for multi-uprobe links on a kernel without them is an error that says which kernel.
  auto refused = choose_attach_mode(kernel_with({}, false), AttachMode::multi_link);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("6.10"), std::string::npos);
  // Perf links work everywhere.
  EXPECT_TRUE(choose_attach_mode(kernel_with({}, true), AttachMode::perf_link).ok());
}

TEST(KernelSources, EachTracepointIsAttachedWhereTheKernelHasIt) {
  auto plans = plan_kernel_sources(kernel_with({"ras:aer_event"}), true, true, true);
  ASSERT_EQ(plans.size(), 4u);
  std::map<std::string, const KernelSourcePlan*> by_name;
  for (const auto& p : plans) by_name[p.source.name] = &p;
  EXPECT_TRUE(by_name["pcie.aer"]->available);
  EXPECT_FALSE(by_name["pcie.link_event"]->available);
  EXPECT_NE(by_name["pcie.link_event"]->reason.find("Linux 7.0"), std::string::npos);
  EXPECT_FALSE(by_name["nvidia.xid"]->available);
  EXPECT_NE(by_name["nvidia.xid"]->reason.find("575"), std::string::npos);
}

TEST(KernelSources, AKernelWithoutPcieAerSaysSo) {
  // This machine's kernel: no CONFIG_PCIEAER.
  auto plans = plan_kernel_sources(kernel_with({"pci:pcie_link_event", "pci:pci_hp_event"}), true, true, false);
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_FALSE(plans[0].available);
  EXPECT_NE(plans[0].reason.find("CONFIG_PCIEAER"), std::string::npos);
  EXPECT_TRUE(plans[1].available);  // a 7.0 kernel's link events
  EXPECT_TRUE(plans[2].available);
}

TEST(KernelSources, WithoutTracefsEverySourceCarriesThatReason) {
  KernelFeatures k = kernel_with({"ras:aer_event"});
  k.tracefs.reset();
  k.tracefs_missing = "tracefs is not mounted";
  for (const auto& p : plan_kernel_sources(k, true, true, true)) {
    EXPECT_FALSE(p.available) << p.source.name;
    EXPECT_EQ(p.reason, "tracefs is not mounted");
  }
  EXPECT_TRUE(plan_kernel_sources(k, false, false, false).empty());
}

TEST(IsrKprobes, RunOnlyWithKprobesAndTheDriversIsr) {
  KernelFeatures k = kernel_with({});
  bool asked = false;
  auto has_isr = [&] {
    asked = true;
    return true;
  };
  EXPECT_EQ(isr_kprobes_unavailable(k, true, has_isr), std::nullopt);
  EXPECT_TRUE(asked);
  EXPECT_EQ(isr_kprobes_unavailable(k, false, has_isr), "not requested");
  k.kprobes_missing = "kernel lacks kprobes";
  EXPECT_EQ(isr_kprobes_unavailable(k, true, has_isr), "kernel lacks kprobes");
  k.kprobes_missing.reset();
  auto reason = isr_kprobes_unavailable(k, true, [] { return false; });
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("nvidia_isr"), std::string::npos);
}

TEST(LoadFailure, TheVerifiersLastWordsAreInTheError) {
  // libbpf's warnings on a rejected program, as it prints them.
  std::vector<std::string> log = {
      "libbpf: prog 'call_exit': BPF program load failed: Permission denied",
      "libbpf: prog 'call_exit': -- BEGIN PROG LOAD LOG --",
      "0: (bf) r6 = r1",
      "1: (85) call bpf_get_current_pid_tgid#14",
      "R1 invalid mem access 'scalar'",
      "processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0",
      "libbpf: prog 'call_exit': -- END PROG LOAD LOG --",
  };
  if (geteuid() != 0) GTEST_SKIP() << "the explanation checks this process's capabilities first: needs root";
  Error e = explain_load_failure("the test programs", EACCES, log);
  EXPECT_NE(e.message.find("verifier rejected"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("R1 invalid mem access 'scalar'"), std::string::npos) << e.message;
  EXPECT_EQ(e.sys_errno, EACCES);
}

}  // namespace
}  // namespace slowburn::kernel_features_test
