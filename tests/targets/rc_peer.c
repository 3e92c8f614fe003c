/*
 * One end of a real RC connection (the kernel matrix's Soft-RoCE faults):
 * the server posts receives and drains them, the client streams sends. The
 * QP numbers, PSNs and GIDs are exchanged over TCP. Unlike ibv_rc_pingpong
 * and ib_send_bw (retry_cnt 7, which rdma_rxe retries forever), the retry
 * count is set: a killed peer exhausts the client's retries, and the client
 * does what a careful application does with a failed completion: reports
 * it and moves its QP to ERR to flush the rest before tearing down.
 *
 *   rc_peer -d rxe1 -g 1 -p 18520                  server
 *   rc_peer -d rxe0 -g 1 -p 18520 -r 1 127.0.0.1   client
 * Exit: 0 done (-s seconds), 3 a failed completion, 1 a setup error.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 16
#define SIZE 4096

struct endpoint {
	uint32_t qpn, psn;
	union ibv_gid gid;
};

static int die(const char *what)
{
	perror(what);
	return 1;
}

static int exchange(const char *host, int port, const struct endpoint *mine, struct endpoint *theirs)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), conn;

	if (host) {
		inet_pton(AF_INET, host, &addr.sin_addr);
		if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
			return -1;
		conn = fd;
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1) != 0)
			return -1;
		conn = accept(fd, NULL, NULL);
		if (conn < 0)
			return -1;
	}
	if (write(conn, mine, sizeof *mine) != sizeof *mine || read(conn, theirs, sizeof *theirs) != sizeof *theirs)
		return -1;
	return 0; /* the socket stays open: the peer's death is seen on RDMA, not here */
}

static int init_qp(struct ibv_qp *qp)
{
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = 0};

	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return die("ibv_modify_qp INIT");
	return 0;
}

static int connect_qp(struct ibv_qp *qp, int gid_index, const struct endpoint *mine, const struct endpoint *theirs,
		      int retry_cnt, int timeout)
{
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR,
				  .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = theirs->qpn,
				  .rq_psn = theirs->psn,
				  .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 12,
				  .ah_attr = {.is_global = 1,
					      .port_num = 1,
					      .grh = {.dgid = theirs->gid, .sgid_index = gid_index, .hop_limit = 64}}};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS,
				  .timeout = timeout,
				  .retry_cnt = retry_cnt,
				  .rnr_retry = 7,
				  .sq_psn = mine->psn,
				  .max_rd_atomic = 1};

	if (ibv_modify_qp(qp, &rtr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return die("ibv_modify_qp RTR");
	if (ibv_modify_qp(qp, &rts,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		return die("ibv_modify_qp RTS");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0", *host = NULL;
	int gid_index = 1, port = 18520, retry_cnt = 1, timeout = 14, seconds = 60, opt, n;
	struct ibv_device **devices;
	struct ibv_context *ctx = NULL;

	while ((opt = getopt(argc, argv, "d:g:p:r:t:s:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'r': retry_cnt = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 's': seconds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GID] [-p PORT] [-r RETRY] [-t TIMEOUT] [-s SECONDS] [HOST]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		host = argv[optind];
	devices = ibv_get_device_list(&n);
	for (int i = 0; devices && i < n; i++)
		if (!strcmp(ibv_get_device_name(devices[i]), dev_name))
			ctx = ibv_open_device(devices[i]);
	if (!ctx) {
		fprintf(stderr, "%s: no such RDMA device\n", dev_name);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char *buf = calloc(DEPTH, SIZE);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, DEPTH * SIZE, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_cq *cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	struct ibv_qp_init_attr qp_attr = {.send_cq = cq,
					   .recv_cq = cq,
					   .cap = {.max_send_wr = 2 * DEPTH, .max_recv_wr = 2 * DEPTH, .max_send_sge = 1, .max_recv_sge = 1},
					   .qp_type = IBV_QPT_RC};
	struct ibv_qp *qp = mr && cq ? ibv_create_qp(pd, &qp_attr) : NULL;
	if (!qp)
		return die("creating the PD, MR, CQ and QP");
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = SIZE, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *bad_rwr;
	struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
			   *bad_swr;
	/* Receives can be posted from INIT on, before the peer sends. */
	if (init_qp(qp))
		return 1;
	for (int i = 0; !host && i < DEPTH; i++)
		if (ibv_post_recv(qp, &rwr, &bad_rwr))
			return die("ibv_post_recv");

	struct endpoint mine = {.qpn = qp->qp_num, .psn = (uint32_t)getpid() & 0xffffff}, theirs;
	if (ibv_query_gid(ctx, 1, gid_index, &mine.gid))
		return die("ibv_query_gid");
	if (exchange(host, port, &mine, &theirs) != 0)
		return die("exchanging QP numbers over TCP");
	if (connect_qp(qp, gid_index, &mine, &theirs, retry_cnt, timeout))
		return 1;
	printf("%s: QP 0x%x connected to QP 0x%x (retry_cnt %d, timeout %d)\n", host ? "client" : "server", qp->qp_num,
	       theirs.qpn, retry_cnt, timeout);
	fflush(stdout);

	time_t end = time(NULL) + seconds;
	int outstanding = 0;
	long completed = 0;
	while (time(NULL) < end) {
		while (host && outstanding < DEPTH) {
			if (ibv_post_send(qp, &swr, &bad_swr))
				return die("ibv_post_send");
			outstanding++;
		}
		struct ibv_wc wc;
		int got = ibv_poll_cq(cq, 1, &wc);
		if (got < 0)
			return die("ibv_poll_cq");
		if (got == 0) {
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("completion error on QP 0x%x after %ld completions: %s (%d)\n", qp->qp_num, completed,
			       ibv_wc_status_str(wc.status), wc.status);
			fflush(stdout);
			struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
			if (ibv_modify_qp(qp, &err, IBV_QP_STATE))
				perror("ibv_modify_qp ERR");
			sleep(1);
			return 3;
		}
		completed++;
		if (host)
			outstanding--;
		else if (ibv_post_recv(qp, &rwr, &bad_rwr))
			return die("ibv_post_recv");
	}
	printf("%ld completions in %d s\n", completed, seconds);
	return 0;
}
