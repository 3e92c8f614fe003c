/*
 * A verbs data path on the stand-ins (verbs/libibverbs.so.1 for the
 * control path, verbs/libsbprov-rdmav34.so for the provider): once GO_FILE
 * exists, QPS RC QPs are created and walked to RTS, then for SECONDS each
 * QP in turn posts a chain of two sends (the first unsignaled, as NCCL and
 * UCX batch them) through the inline ibv_post_send and polls its CQ with
 * ibv_poll_cq until the signaled one completes. Every QP's completions take
 * 200 us but SLOW_QP's (its index), which take 12 ms (a margin for nanosleep's
 * overshoot on a loaded VM). The first QP's last
 * request completes with IBV_WC_RETRY_EXC_ERR, the second's with
 * IBV_WC_WR_FLUSH_ERR. Every unsignaled request has wr_id 0, as NCCL's do.
 * The QPs are destroyed at the end, as a job tears them down.
 *
 *   verbs_qp_driver GO_FILE QPS SECONDS SLOW_QP
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void sb_provider_init(struct ibv_context *context);
void sb_provider_set_delay_us(uint32_t qp_num, unsigned delay_us);
void sb_provider_fail_next(uint32_t qp_num, enum ibv_wc_status status);

#define MAX_QPS 16

static int to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One round trip: post two, poll until the signaled one is back. */
static int send_one(struct ibv_qp *qp, struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_send_wr first, second, *bad;
	struct ibv_wc wc[4];
	struct timespec pause = {0, 50000};

	memset(&first, 0, sizeof(first));
	memset(&second, 0, sizeof(second));
	first.wr_id = 0;
	first.next = &second;
	second.wr_id = wr_id;
	second.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, &first, &bad))
		return -1;
	for (;;) {
		int n = ibv_poll_cq(cq, 4, wc);

		if (n < 0)
			return -1;
		if (n > 0)
			return 0;
		nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	struct ibv_device device;
	struct ibv_context context;
	struct ibv_pd pd;
	struct ibv_cq cq;
	struct ibv_qp_init_attr init;
	struct ibv_qp *qps[MAX_QPS];
	int count, slow;
	double seconds, end;
	uint64_t wr_id = 1;

	if (argc != 5 || (count = atoi(argv[2])) < 1 || count > MAX_QPS) {
		fprintf(stderr, "usage: %s GO_FILE QPS(1-%d) SECONDS SLOW_QP\n", argv[0], MAX_QPS);
		return 2;
	}
	seconds = atof(argv[3]);
	slow = atoi(argv[4]);
	memset(&device, 0, sizeof(device));
	strcpy(device.name, "rxe0");
	memset(&context, 0, sizeof(context));
	context.device = &device;
	sb_provider_init(&context);
	memset(&pd, 0, sizeof(pd));
	pd.context = &context;
	memset(&cq, 0, sizeof(cq));
	cq.context = &context;
	while (access(argv[1], F_OK) != 0)
		usleep(1000);

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = &cq;
	init.recv_cq = &cq;
	for (int i = 0; i < count; i++) {
		qps[i] = ibv_create_qp(&pd, &init);
		if (!qps[i] || to_state(qps[i], IBV_QPS_INIT) || to_state(qps[i], IBV_QPS_RTR) ||
		    to_state(qps[i], IBV_QPS_RTS))
			return 1;
		sb_provider_set_delay_us(qps[i]->qp_num, i == slow ? 12000 : 200);
	}
	end = seconds_now() + seconds;
	while (seconds_now() < end)
		for (int i = 0; i < count; i++)
			if (send_one(qps[i], &cq, wr_id++))
				return 1;
	sb_provider_fail_next(qps[0]->qp_num, IBV_WC_RETRY_EXC_ERR);
	if (send_one(qps[0], &cq, wr_id++))
		return 1;
	if (count > 1) {
		sb_provider_fail_next(qps[1]->qp_num, IBV_WC_WR_FLUSH_ERR);
		if (send_one(qps[1], &cq, wr_id++))
			return 1;
	}
	for (int i = 0; i < count; i++)
		if (ibv_destroy_qp(qps[i]))
			return 1;
	printf("%llu requests\n", (unsigned long long)wr_id - 1);
	return 0;
}
