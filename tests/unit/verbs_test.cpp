// The libibverbs ABI the verbs program reads, the decoder of its records,
// enum names, and the QP inventory on scripted call sequences.
#include "slowburn/verbs.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "events/decoder.h"
#include "rdma/qp_inventory.h"
#include "rdma/verbs_names.h"

// The offsets bpf/verbs.bpf.c reads, against the installed header.
static_assert(offsetof(ibv_qp, qp_num) == SB_IBV_QP_NUM_OFFSET);
static_assert(offsetof(ibv_qp, state) == SB_IBV_QP_STATE_OFFSET);
static_assert(offsetof(ibv_qp, qp_type) == SB_IBV_QP_TYPE_OFFSET);
static_assert(offsetof(ibv_qp, context) == SB_IBV_QP_CONTEXT_OFFSET);
static_assert(offsetof(ibv_qp_attr, qp_state) == SB_IBV_ATTR_QP_STATE_OFFSET);
static_assert(offsetof(ibv_qp_attr, dest_qp_num) == SB_IBV_ATTR_DEST_QPN_OFFSET);
static_assert(offsetof(ibv_qp_attr, ah_attr) + offsetof(ibv_ah_attr, dlid) == SB_IBV_ATTR_AH_DLID_OFFSET);
static_assert(offsetof(ibv_qp_attr, ah_attr) + offsetof(ibv_ah_attr, grh) + offsetof(ibv_global_route, dgid) ==
              SB_IBV_ATTR_AH_DGID_OFFSET);
static_assert(offsetof(ibv_qp_attr, ah_attr) + offsetof(ibv_ah_attr, is_global) == SB_IBV_ATTR_AH_IS_GLOBAL_OFFSET);
static_assert(offsetof(ibv_async_event, event_type) == SB_IBV_ASYNC_EVENT_TYPE_OFFSET);
static_assert(offsetof(ibv_context, device) == SB_IBV_CONTEXT_DEVICE_OFFSET);
static_assert(offsetof(ibv_device, name) == SB_IBV_DEVICE_NAME_OFFSET);
static_assert(sizeof(ibv_device::name) == SB_IBV_DEVICE_NAME_BYTES);
static_assert(offsetof(ibv_context, ops) + offsetof(ibv_context_ops, poll_cq) == SB_IBV_CONTEXT_POLL_CQ_OFFSET);
static_assert(offsetof(ibv_context, ops) + offsetof(ibv_context_ops, post_send) == SB_IBV_CONTEXT_POST_SEND_OFFSET);
static_assert(offsetof(ibv_send_wr, wr_id) == 0);
static_assert(offsetof(ibv_send_wr, next) == SB_IBV_SEND_WR_NEXT_OFFSET);
static_assert(sizeof(ibv_wc) == SB_IBV_WC_BYTES);
static_assert(offsetof(ibv_wc, wr_id) == 0);
static_assert(offsetof(ibv_wc, status) == SB_IBV_WC_STATUS_OFFSET);
static_assert(offsetof(ibv_wc, qp_num) == SB_IBV_WC_QP_NUM_OFFSET);
static_assert(IBV_WC_WR_FLUSH_ERR == SB_IBV_WC_WR_FLUSH_ERR);
static_assert(offsetof(ibv_wc, opcode) == SB_IBV_WC_OPCODE_OFFSET);
static_assert(IBV_WC_RECV == SB_IBV_WC_RECV);
static_assert(offsetof(ibv_qp, send_cq) == SB_IBV_QP_SEND_CQ_OFFSET);
static_assert(offsetof(ibv_send_wr, send_flags) == SB_IBV_SEND_WR_FLAGS_OFFSET);
static_assert(IBV_SEND_SIGNALED == SB_IBV_SEND_SIGNALED);
static_assert(IBV_QP_STATE == SB_IBV_QP_STATE && IBV_QP_AV == SB_IBV_QP_AV && IBV_QP_DEST_QPN == SB_IBV_QP_DEST_QPN);
static_assert(IBV_QPS_SQE == 5 && IBV_QPS_ERR == 6 && IBV_EVENT_DEVICE_FATAL == 8 && IBV_EVENT_WQ_FATAL == 19);

namespace slowburn::verbs_test {
namespace {

TEST(VerbsNames, StatesTypesEventsAndGids) {
  EXPECT_EQ(qp_state_name(IBV_QPS_RTS), "RTS");
  EXPECT_EQ(qp_state_name(IBV_QPS_ERR), "ERR");
  EXPECT_EQ(qp_state_name(-1), "-");
  EXPECT_EQ(qp_state_name(9), "state 9");
  EXPECT_TRUE(is_error_state(IBV_QPS_SQE));
  EXPECT_FALSE(is_error_state(IBV_QPS_SQD));
  EXPECT_EQ(qp_type_name(IBV_QPT_RC), "RC");
  EXPECT_EQ(qp_type_name(IBV_QPT_UD), "UD");
  EXPECT_EQ(qp_type_name(77), "type 77");
  // Every enum value the header knows has its own name, error flag and scope.
  EXPECT_EQ(async_event_info(IBV_EVENT_QP_FATAL).name, "QP_FATAL");
  EXPECT_TRUE(async_event_info(IBV_EVENT_QP_FATAL).error);
  EXPECT_EQ(async_event_info(IBV_EVENT_PORT_ERR).scope, AsyncScope::port);
  EXPECT_FALSE(async_event_info(IBV_EVENT_PORT_ACTIVE).error);
  EXPECT_EQ(async_event_info(20).name, "DEVICE_SPEED_CHANGE");  // rdma-core 50+, newer than this header
  EXPECT_EQ(async_event_info(IBV_EVENT_CQ_ERR).scope, AsyncScope::cq);
  EXPECT_EQ(async_event_info(40).name, "event 40");  // unknown, not dropped
  std::array<uint8_t, 16> gid{};
  EXPECT_TRUE(gid_is_zero(gid));
  gid[0] = 0xfe, gid[1] = 0x80, gid[15] = 0x07;
  EXPECT_EQ(format_gid(gid), "fe80:0000:0000:0000:0000:0000:0000:0007");
}

std::vector<std::byte> raw_record(const sb_verbs_event& e) {
  std::vector<std::byte> bytes(sizeof(e));
  std::memcpy(bytes.data(), &e, sizeof(e));
  return bytes;
}

sb_verbs_event modify_record() {
  sb_verbs_event e{};
  e.hdr.type = SB_EVENT_VERBS;
  e.hdr.version = SB_VERBS_EVENT_VERSION;
  e.hdr.pid = 42;
  e.hdr.tid = 43;
  e.hdr.ts_ns = 1000;
  e.call = SB_VERBS_MODIFY_QP;
  e.object = 0xabc0;
  e.qp_num = 0x101;
  e.new_state = IBV_QPS_ERR;
  e.old_state = IBV_QPS_RTS;
  e.attr_mask = IBV_QP_STATE;
  std::strcpy(e.device, "mlx5_0");
  return e;
}

TEST(VerbsDecoder, DecodesAndRejectsWhatItDoesNotKnow) {
  EventDecoder decoder;
  auto call = decoder.decode_verbs(raw_record(modify_record()));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->kind, VerbsCallKind::modify_qp);
  EXPECT_EQ(call->pid, 42u);
  EXPECT_EQ(call->qp_num, 0x101u);
  EXPECT_EQ(call->new_state, IBV_QPS_ERR);
  EXPECT_EQ(call->device, "mlx5_0");

  sb_verbs_event newer = modify_record();
  newer.hdr.version = SB_VERBS_EVENT_VERSION + 1;
  EXPECT_FALSE(decoder.decode_verbs(raw_record(newer)).has_value());
  sb_verbs_event bad_call = modify_record();
  bad_call.call = 99;
  EXPECT_FALSE(decoder.decode_verbs(raw_record(bad_call)).has_value());
  auto short_record = raw_record(modify_record());
  short_record.resize(60);
  EXPECT_FALSE(decoder.decode_verbs(short_record).has_value());
  sb_verbs_event unterminated = modify_record();
  std::memset(unterminated.device, 'x', sizeof(unterminated.device));  // no NUL: bounded
  EXPECT_EQ(decoder.decode_verbs(raw_record(unterminated))->device.size(), sizeof(unterminated.device));
  EXPECT_EQ(decoder.stats().decoded, 2u);
  EXPECT_EQ(decoder.stats().unknown_version, 1u);
  EXPECT_EQ(decoder.stats().unknown_type, 1u);
  EXPECT_EQ(decoder.stats().truncated, 1u);
}

VerbsCall make(VerbsCallKind kind, uint64_t object, uint32_t qp_num, int32_t result = 0) {
  VerbsCall c;
  c.kind = kind;
  c.pid = 7;
  c.ts_ns = 100;
  c.object = object;
  c.qp_num = qp_num;
  c.result = result;
  c.device = "mlx5_1";
  return c;
}

VerbsCall transition(uint64_t object, uint32_t qp_num, int32_t from, int32_t to, int32_t result = 0) {
  VerbsCall c = make(VerbsCallKind::modify_qp, object, qp_num, result);
  c.old_state = from;
  c.new_state = to;
  c.attr_mask = to >= 0 ? IBV_QP_STATE : 0;
  return c;
}

TEST(QpInventory, LifecycleErrorsAndFailures) {
  QpInventory inventory;
  VerbsCall create = make(VerbsCallKind::create_qp, 0x1000, 0x101);
  create.qp_type = IBV_QPT_RC;
  EXPECT_TRUE(inventory.apply(create).empty());
  EXPECT_TRUE(inventory.apply(transition(0x1000, 0x101, IBV_QPS_RESET, IBV_QPS_INIT)).empty());
  VerbsCall rtr = transition(0x1000, 0x101, IBV_QPS_INIT, IBV_QPS_RTR);
  rtr.attr_mask |= IBV_QP_DEST_QPN | IBV_QP_AV;
  rtr.dest_qp_num = 0x2222;
  rtr.dest_lid = 7;
  EXPECT_TRUE(inventory.apply(rtr).empty());
  EXPECT_TRUE(inventory.apply(transition(0x1000, 0x101, IBV_QPS_RTR, IBV_QPS_RTS)).empty());
  auto qps = inventory.qps();
  ASSERT_EQ(qps.size(), 1u);
  EXPECT_EQ(qps[0].state, IBV_QPS_RTS);
  EXPECT_EQ(qps[0].transitions, 3u);
  EXPECT_EQ(qps[0].dest_qp_num, 0x2222u);
  EXPECT_EQ(qps[0].dest_lid, 7);
  EXPECT_EQ(qps[0].device, "mlx5_1");

  auto to_err = inventory.apply(transition(0x1000, 0x101, IBV_QPS_RTS, IBV_QPS_ERR));
  ASSERT_EQ(to_err.size(), 1u);
  EXPECT_EQ(to_err[0].type, "qp.error");
  EXPECT_EQ(to_err[0].severity, "warning");  // requested: a flush before destroy looks the same
  EXPECT_EQ(to_err[0].from_state, IBV_QPS_RTS);
  EXPECT_EQ(to_err[0].to_state, IBV_QPS_ERR);
  EXPECT_EQ(to_err[0].summary, "pid 7 mlx5_1: QP 0x101 moved RTS -> ERR (requested by the process)");

  // Attribute-only modify (no state in the mask): no transition.
  EXPECT_TRUE(inventory.apply(transition(0x1000, 0x101, IBV_QPS_ERR, -1)).empty());
  EXPECT_EQ(inventory.qps()[0].transitions, 4u);

  auto failed = inventory.apply(transition(0x1000, 0x101, IBV_QPS_ERR, IBV_QPS_RTS, 22));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].type, "qp.modify_failed");
  EXPECT_EQ(failed[0].summary, "pid 7 mlx5_1: QP 0x101 ERR -> RTS failed (error 22)");
  EXPECT_EQ(inventory.qps()[0].state, IBV_QPS_ERR);  // unchanged

  ASSERT_TRUE(inventory.last_known(7, 0x101).has_value());
  EXPECT_TRUE(inventory.apply(make(VerbsCallKind::destroy_qp, 0x1000, 0x101)).empty());
  EXPECT_TRUE(inventory.qps().empty());
  // Destroyed, still known by its number: its NIC and peer for a slow QP
  // said after the job tore it down.
  auto known = inventory.last_known(7, 0x101);
  ASSERT_TRUE(known.has_value());
  EXPECT_EQ(known->device, "mlx5_1");
  EXPECT_EQ(known->dest_qp_num, 0x2222u);
  EXPECT_FALSE(inventory.last_known(7, 0x102).has_value());
  EXPECT_FALSE(inventory.last_known(8, 0x101).has_value());
  const QpTotals& t = inventory.totals().at(7);
  EXPECT_EQ(t.created, 1u);
  EXPECT_EQ(t.destroyed, 1u);
  EXPECT_EQ(t.error_transitions, 1u);
  EXPECT_EQ(t.failed_calls, 1u);
  // The transitions asked for that succeeded: not the failed one, not the attribute-only one.
  EXPECT_EQ(t.moves_to[IBV_QPS_INIT], 1u);
  EXPECT_EQ(t.moves_to[IBV_QPS_RTR], 1u);
  EXPECT_EQ(t.moves_to[IBV_QPS_RTS], 1u);
  EXPECT_EQ(t.moves_to[IBV_QPS_ERR], 1u);
  EXPECT_EQ(qp_totals_text(t), "1 QP(s) created; moved to INIT 1, RTR 1, RTS 1, ERR 1; 1 destroyed");
  EXPECT_EQ(qp_totals_text(QpTotals{}), "0 QP(s) created; 0 destroyed");
}

TEST(QpInventory, QpsCreatedBeforeTracingAppearOnTheirFirstTransition) {
  QpInventory inventory;
  EXPECT_TRUE(inventory.apply(transition(0x2000, 0x200, IBV_QPS_RTS, IBV_QPS_SQE)).size() == 1);
  auto qps = inventory.qps();
  ASSERT_EQ(qps.size(), 1u);
  EXPECT_EQ(qps[0].created_ns, 0u);
  EXPECT_EQ(qps[0].state, IBV_QPS_SQE);
}

TEST(QpInventory, AsyncEventsAndFailedCreates) {
  QpInventory inventory;
  inventory.apply(make(VerbsCallKind::create_qp, 0x1000, 0x101));
  VerbsCall fatal = make(VerbsCallKind::async_event, 0x1000, 0x101);
  fatal.event_type = IBV_EVENT_QP_FATAL;
  auto e = inventory.apply(fatal);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].type, "rdma.async");
  EXPECT_EQ(e[0].severity, "error");
  EXPECT_EQ(e[0].to_state, IBV_QPS_ERR);
  EXPECT_EQ(e[0].from_state, IBV_QPS_RESET);
  EXPECT_NE(e[0].summary.find("QP_FATAL on QP 0x101"), std::string::npos) << e[0].summary;
  EXPECT_EQ(inventory.qps()[0].state, IBV_QPS_ERR);

  VerbsCall port = make(VerbsCallKind::async_event, 0xc0, 0);
  port.event_type = IBV_EVENT_PORT_ERR;
  port.port_num = 1;
  e = inventory.apply(port);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].port_num, 1u);
  EXPECT_NE(e[0].summary.find("PORT_ERR on port 1"), std::string::npos) << e[0].summary;

  VerbsCall active = port;
  active.event_type = IBV_EVENT_PORT_ACTIVE;
  e = inventory.apply(active);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].severity, "info");

  VerbsCall none = make(VerbsCallKind::async_event, 0xc0, 0, -1);  // EAGAIN: no event
  EXPECT_TRUE(inventory.apply(none).empty());

  auto refused = inventory.apply(make(VerbsCallKind::create_qp, 0, 0, -1));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].type, "qp.create_failed");
  EXPECT_EQ(inventory.totals().at(7).async_errors, 2u);
  EXPECT_EQ(inventory.totals().at(7).error_transitions, 1u);

  inventory.apply(make(VerbsCallKind::create_qp, 0x2000, 0x102));
  EXPECT_EQ(inventory.forget_process(7), 2u);  // the process exited with its QPs
  EXPECT_TRUE(inventory.qps().empty());
}

}  // namespace
}  // namespace slowburn::verbs_test
