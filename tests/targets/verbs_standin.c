/*
 * A stand-in for libibverbs.so.1's control path: ibv_create_qp,
 * ibv_modify_qp, ibv_destroy_qp and ibv_get_async_event with the real
 * signatures and struct layouts (<infiniband/verbs.h>), for a machine with
 * no RDMA device, where the real functions cannot be called safely (they
 * dispatch through the device's provider). QPs follow the verbs state
 * machine: a transition it forbids fails with EINVAL, as a provider's does.
 * Async events are scripted by the driver (sb_queue_async_event).
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

static uint32_t next_qp_num = 0x100;

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp *qp;

	if (init->qp_type == IBV_QPT_RAW_PACKET) /* "not supported by this device" */
		return NULL;
	qp = calloc(1, sizeof(*qp));
	qp->context = pd->context;
	qp->pd = pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->srq = init->srq;
	qp->qp_num = ++next_qp_num;
	qp->state = IBV_QPS_RESET;
	qp->qp_type = init->qp_type;
	return qp;
}

static int allowed(enum ibv_qp_state from, enum ibv_qp_state to)
{
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return 1;
	switch (from) {
	case IBV_QPS_RESET: return to == IBV_QPS_INIT;
	case IBV_QPS_INIT: return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
	case IBV_QPS_RTR: return to == IBV_QPS_RTS;
	case IBV_QPS_RTS: return to == IBV_QPS_RTS || to == IBV_QPS_SQD || to == IBV_QPS_SQE;
	default: return 0;
	}
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if ((attr_mask & IBV_QP_STATE) && !allowed(qp->state, attr->qp_state))
		return EINVAL;
	/* As libibverbs does after the provider succeeds. */
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!qp)
		return EINVAL;
	free(qp);
	return 0;
}

#define MAX_EVENTS 16
static struct ibv_async_event queued[MAX_EVENTS];
static int queued_count, delivered;

void sb_queue_async_event(enum ibv_event_type type, struct ibv_qp *qp, int port_num)
{
	struct ibv_async_event *e = &queued[queued_count++ % MAX_EVENTS];

	memset(e, 0, sizeof(*e));
	e->event_type = type;
	if (qp)
		e->element.qp = qp;
	else
		e->element.port_num = port_num;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	(void)context;
	if (delivered == queued_count) {
		errno = EAGAIN; /* as on a non-blocking async fd with nothing pending */
		return -1;
	}
	*event = queued[delivered++ % MAX_EVENTS];
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
