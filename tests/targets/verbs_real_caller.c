/*
 * Loads the real libibverbs.so.1 and asks it for devices (none here: a
 * safe call), then waits for GO_FILE and exits: a process to attach the
 * verbs probes to in the real library.
 *
 *   verbs_real_caller GO_FILE
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int count = -1;
	struct ibv_device **devices;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GO_FILE\n", argv[0]);
		return 2;
	}
	devices = ibv_get_device_list(&count);
	printf("%d RDMA devices\n", count);
	fflush(stdout);
	if (devices)
		ibv_free_device_list(devices);
	while (access(argv[1], F_OK) != 0)
		usleep(1000);
	return 0;
}
