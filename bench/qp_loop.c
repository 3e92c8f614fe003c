/*
 * Benchmark target for the verbs data path probes: a provider's post_send
 * and poll_cq with the real signatures and structs, called through a
 * context's ops as ibv_post_send / ibv_poll_cq call them. Each round posts
 * one signaled send and polls its completion back (the probes' full path:
 * stamp, match, sum), or, with "empty", polls a CQ that has nothing (the
 * polling loop's common case). Prints the mean wall time per round.
 *
 *   qp_loop CALLS [empty]   ->   "ns_per_call 1234.5"
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t pending_wr_id;
static int pending;

__attribute__((noinline, used)) int bench_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
						     struct ibv_send_wr **bad_wr)
{
	(void)qp;
	(void)bad_wr;
	pending_wr_id = wr->wr_id;
	pending = 1;
	return 0;
}

__attribute__((noinline, used)) int bench_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	(void)cq;
	if (!pending || num_entries < 1)
		return 0;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = pending_wr_id;
	wc->opcode = IBV_WC_SEND;
	wc->qp_num = 0x42;
	pending = 0;
	return 1;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000;
	int empty = argc > 2 && strcmp(argv[2], "empty") == 0;
	struct ibv_context context;
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct timespec start, end;
	long acc = 0;

	memset(&context, 0, sizeof(context));
	context.ops.post_send = bench_post_send;
	context.ops.poll_cq = bench_poll_cq;
	memset(&qp, 0, sizeof(qp));
	qp.context = &context;
	qp.qp_num = 0x42;
	memset(&cq, 0, sizeof(cq));
	cq.context = &context;
	qp.send_cq = &cq; /* as libibverbs sets it: the probes key a request by it */
	memset(&wr, 0, sizeof(wr));
	wr.send_flags = IBV_SEND_SIGNALED;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < calls; i++) {
		if (!empty) {
			wr.wr_id = (uint64_t)i;
			acc += ibv_post_send(&qp, &wr, &bad);
		}
		acc += ibv_poll_cq(&cq, 1, &wc);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("ns_per_call %.1f\n",
	       ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / (double)calls);
	return acc == (empty ? 0 : calls) ? 0 : 1;
}
