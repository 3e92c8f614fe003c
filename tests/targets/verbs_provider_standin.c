/*
 * A stand-in verbs provider (as librxe-rdmav34.so or libmlx5.so.1 are to
 * libibverbs): its post_send and poll_cq are static and the library is
 * stripped, as Debian's providers are, so a tracer finds them only as the
 * real ones are found, through a context's ops. The "wire" is a queue:
 * a signaled work request completes `delay` microseconds after its post
 * (set per QP by the driver); an unsignaled one completes silently.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>
#include <time.h>

#define MAX_PENDING 256
#define MAX_QPS 64

struct pending {
	uint64_t wr_id;
	uint32_t qp_num;
	enum ibv_wc_status status;
	uint64_t due_ns;
};

static struct pending queue[MAX_PENDING];
static int queued;
static struct {
	uint32_t qp_num;
	unsigned delay_us;
	enum ibv_wc_status fail_next;
} qps[MAX_QPS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int qp_slot(uint32_t qp_num)
{
	for (int i = 0; i < MAX_QPS; i++)
		if (qps[i].qp_num == qp_num || qps[i].qp_num == 0) {
			qps[i].qp_num = qp_num;
			return i;
		}
	return -1;
}

static int standin_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	int slot = qp_slot(qp->qp_num);

	for (; wr; wr = wr->next) {
		if (slot < 0 || queued == MAX_PENDING) {
			*bad_wr = wr;
			return ENOMEM;
		}
		if (!(wr->send_flags & IBV_SEND_SIGNALED))
			continue;
		queue[queued].wr_id = wr->wr_id;
		queue[queued].qp_num = qp->qp_num;
		queue[queued].status = qps[slot].fail_next;
		queue[queued].due_ns = now_ns() + qps[slot].delay_us * 1000ull;
		qps[slot].fail_next = IBV_WC_SUCCESS;
		queued++;
	}
	return 0;
}

static int standin_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	uint64_t now = now_ns();
	int n = 0;

	(void)cq;
	for (int i = 0; i < queued && n < num_entries;) {
		if (queue[i].due_ns > now) {
			i++;
			continue;
		}
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = queue[i].wr_id;
		wc[n].status = queue[i].status;
		wc[n].opcode = IBV_WC_SEND;
		wc[n].qp_num = queue[i].qp_num;
		n++;
		queue[i] = queue[--queued];
	}
	return n;
}

/* What the provider's alloc_context does: the context's ops point here. */
void sb_provider_init(struct ibv_context *context)
{
	context->ops.post_send = standin_post_send;
	context->ops.poll_cq = standin_poll_cq;
}

void sb_provider_set_delay_us(uint32_t qp_num, unsigned delay_us)
{
	int slot = qp_slot(qp_num);

	if (slot >= 0)
		qps[slot].delay_us = delay_us;
}

/* The QP's next signaled request completes with this status. */
void sb_provider_fail_next(uint32_t qp_num, enum ibv_wc_status status)
{
	int slot = qp_slot(qp_num);

	if (slot >= 0)
		qps[slot].fail_next = status;
}
