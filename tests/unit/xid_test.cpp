#include "nvidia/xid.h"

#include <gtest/gtest.h>

#include "nvidia/xid_catalog.h"

namespace slowburn::xid_test {
namespace {

TEST(XidParser, WithPidAndName) {
  auto e = parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.");
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->nvswitch);
  EXPECT_EQ(e->code, 79);
  EXPECT_EQ(e->pci, "0000:3b:00");
  EXPECT_EQ(e->pid, 1234);
  EXPECT_EQ(e->process, "python3");
  EXPECT_EQ(e->message, "GPU has fallen off the bus.");
}

TEST(XidParser, PublicExamplesFromFacts) {
  auto a = parse_xid_line(
      "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->code, 63);
  EXPECT_EQ(a->pid, 1896);
  EXPECT_FALSE(a->process.has_value());
  EXPECT_EQ(a->message, "Row Remapper: New row marked for remapping, reset gpu to activate.");

  auto b = parse_xid_line("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->pid.has_value());
  EXPECT_EQ(b->message, "GPU has fallen off the bus.");

  auto c = parse_xid_line(
      "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->pci, "0000:01:00");
  EXPECT_EQ(c->gpu_instance, 5);
  EXPECT_FALSE(c->compute_instance.has_value());
  EXPECT_EQ(c->code, 94);
  EXPECT_EQ(c->message, "Contained: CE User Channel (0x9). RST: No, D-RST: No");
}

TEST(XidParser, MigComputeInstanceOldFormsAndCausedBy) {
  auto mig = parse_xid_line("NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 43, pid=88, name=trainer, Ch 00000010");
  ASSERT_TRUE(mig.has_value());
  EXPECT_EQ(mig->gpu_instance, 5);
  EXPECT_EQ(mig->compute_instance, 1);
  EXPECT_EQ(mig->process, "trainer");

  auto unknown = parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_FALSE(unknown->pid.has_value());
  EXPECT_FALSE(unknown->process.has_value());
  EXPECT_EQ(unknown->message, "Graphics Exception");

  auto very_old = parse_xid_line("NVRM: Xid (0000:03:00): 14, Channel 00000001");
  ASSERT_TRUE(very_old.has_value());
  EXPECT_EQ(very_old->pci, "0000:03:00");
  EXPECT_EQ(very_old->code, 14);

  auto chained = parse_xid_line(
      "NVRM: Xid (PCI:0000:3b:00): 45, pid=2211, name=python, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info "
      "0x3c046 caused by previous Xid 109");
  ASSERT_TRUE(chained.has_value());
  EXPECT_EQ(chained->caused_by, 109);

  auto empty_name = parse_xid_line("NVRM: Xid (PCI:0000:00:1e): 79, pid=0, name=, GPU has fallen off the bus.");
  ASSERT_TRUE(empty_name.has_value());
  EXPECT_EQ(empty_name->pid, 0);
  EXPECT_FALSE(empty_name->process.has_value());

  // Found by the fuzzer: one timestamp is stripped, not two.
  EXPECT_FALSE(parse_xid_line("[0] [1] NVRM: Xid (PCI:0000:3b:00): 48, text").has_value());
  EXPECT_FALSE(looks_like_xid_line("[0] [1] NVRM: Xid (PCI:0000:3b:00): 48, text"));

  auto with_timestamp =
      parse_xid_line("[  402.115220] NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error");
  ASSERT_TRUE(with_timestamp.has_value());
  EXPECT_EQ(with_timestamp->code, 48);
}

TEST(XidParser, NvswitchSxid) {
  auto s = parse_xid_line(
      "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 31 egress non-posted PRIV error (First)");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->nvswitch);
  EXPECT_EQ(s->switch_index, 3);
  EXPECT_EQ(s->pci, "0000:05:00.0");
  EXPECT_EQ(s->code, 12028);
  EXPECT_EQ(s->message, "Non-fatal, Link 31 egress non-posted PRIV error (First)");
  auto padded = parse_xid_line("nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 00019, Fatal, Link 02 something");
  ASSERT_TRUE(padded.has_value());
  EXPECT_EQ(padded->code, 19);
}

TEST(XidParser, OrdinaryAndDamagedLinesAreNotXids) {
  for (const char* line :
       {"", "hello world", "NVRM: loading NVIDIA UNIX x86_64 Kernel Module", "NVRM: Xid", "NVRM: Xid (PCI:0000:3b:00",
        "NVRM: Xid (PCI:0000:3b:00): , pid=1", "NVRM: Xid (PCI:0000:3b:00): abc, message", "nvidia-nvswitch: SXid (",
        "nvidia-nvswitch12345: SXid (PCI:0000:05:00.0): 1, x", "xNVRM: Xid (PCI:0000:3b:00): 79, late prefix"})
    EXPECT_FALSE(parse_xid_line(line).has_value()) << line;
  EXPECT_TRUE(looks_like_xid_line("NVRM: Xid (anything"));
  EXPECT_FALSE(looks_like_xid_line("NVRM: GPU at PCI:0000:3b:00"));
}

TEST(XidCatalog, KnownUnknownAndRecoveryAction) {
  EXPECT_EQ(xid_info(79).severity, "reboot-node");
  EXPECT_EQ(xid_info(48).action, "reset the GPU");
  EXPECT_EQ(xid_info(13).severity, "restart-app");
  EXPECT_EQ(xid_info(146).meaning, "NVLink (NVLink5) error");
  XidInfo unknown = xid_info(9999);
  EXPECT_EQ(unknown.severity, "unknown");
  EXPECT_EQ(unknown.meaning, "unknown Xid 9999");
  EXPECT_EQ(xid_info(154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)").severity,
            "reboot-node");
  EXPECT_EQ(xid_info(154, "no action in this text").severity, "hardware");
}

// One table: every code the catalog grades has a family `health` counts it
// in, and only those; the SDC ones are ECC, row remapping and DRAM/SRAM.
TEST(XidCatalog, OneTableGradesAndGroupsEveryCode) {
  for (int code = 0; code <= 300; ++code) {
    XidInfo info = xid_info(code);
    EXPECT_EQ(info.severity == "unknown", info.family == "other") << code;
    EXPECT_EQ(xid_family(code, false), info.family) << code;
    if (info.sdc) {
      EXPECT_TRUE(info.family == "ecc" || info.family == "row-remap" || info.family == "memory") << code;
    }
  }
  EXPECT_EQ(xid_family(62, false), "firmware");
  EXPECT_EQ(xid_family(109, false), "engine");
  EXPECT_EQ(xid_family(31, true), "nvswitch");
  EXPECT_FALSE(xid_sdc_relevant(48, true)) << "an SXid is the switch's";
}

}  // namespace
}  // namespace slowburn::xid_test
