/*
 * Drives the libibverbs stand-in (verbs/libibverbs.so.1) through a QP
 * lifecycle once GO_FILE exists, on a device named "mlx5_7":
 *
 *   QP A (RC): RESET -> INIT -> RTR (peer QPN 0x2222, GID fe80::7, LID 7) -> RTS -> ERR
 *   QP B (UD): RESET -> INIT, then INIT -> RTS (LID 9, no global route), which fails with EINVAL
 *   a RAW_PACKET QP, which the device refuses (create returns NULL)
 *   async events: QP_FATAL on A, PORT_ERR on port 1, DEVICE_FATAL; one
 *   more call finds none pending (-1)
 *   A and B destroyed
 *
 *   verbs_driver GO_FILE
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void sb_queue_async_event(enum ibv_event_type type, struct ibv_qp *qp, int port_num);

static int to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

int main(int argc, char **argv)
{
	struct ibv_device device;
	struct ibv_context context;
	struct ibv_pd pd;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_async_event event;
	struct ibv_qp *a, *b, *raw;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GO_FILE\n", argv[0]);
		return 2;
	}
	memset(&device, 0, sizeof(device));
	strcpy(device.name, "mlx5_7");
	memset(&context, 0, sizeof(context));
	context.device = &device;
	memset(&pd, 0, sizeof(pd));
	pd.context = &context;
	while (access(argv[1], F_OK) != 0)
		usleep(1000);

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	a = ibv_create_qp(&pd, &init);
	init.qp_type = IBV_QPT_UD;
	b = ibv_create_qp(&pd, &init);
	init.qp_type = IBV_QPT_RAW_PACKET;
	raw = ibv_create_qp(&pd, &init);
	if (!a || !b || raw)
		return 1;

	if (to_state(a, IBV_QPS_INIT))
		return 1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.dest_qp_num = 0x2222;
	attr.ah_attr.dlid = 7;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid.raw[0] = 0xfe;
	attr.ah_attr.grh.dgid.raw[1] = 0x80;
	attr.ah_attr.grh.dgid.raw[15] = 0x07;
	if (ibv_modify_qp(a, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU))
		return 1;
	if (to_state(a, IBV_QPS_RTS) || to_state(a, IBV_QPS_ERR))
		return 1;
	if (to_state(b, IBV_QPS_INIT))
		return 1;
	/* A LID-only path: the GRH holds leftovers that must not be read as a GID. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS; /* INIT -> RTS skips RTR: refused */
	attr.ah_attr.dlid = 9;
	attr.ah_attr.is_global = 0;
	memset(attr.ah_attr.grh.dgid.raw, 0xab, sizeof(attr.ah_attr.grh.dgid.raw));
	if (ibv_modify_qp(b, &attr, IBV_QP_STATE | IBV_QP_AV) == 0)
		return 1;

	sb_queue_async_event(IBV_EVENT_QP_FATAL, a, 0);
	sb_queue_async_event(IBV_EVENT_PORT_ERR, NULL, 1);
	sb_queue_async_event(IBV_EVENT_DEVICE_FATAL, NULL, 0);
	for (int i = 0; i < 3; i++) {
		if (ibv_get_async_event(&context, &event))
			return 1;
		ibv_ack_async_event(&event);
	}
	if (ibv_get_async_event(&context, &event) == 0)
		return 1;

	if (ibv_destroy_qp(a) || ibv_destroy_qp(b))
		return 1;
	return 0;
}
