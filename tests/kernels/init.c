// The guest's /init (static, in the initramfs): load the kernel's own 9p
// modules, mount the host's root read-only over virtio-9p with writable
// tmpfs where programs write, chroot into it and run the guest suite; power
// off when it ends. The kernel hands unknown `key=value` command-line words
// to init as environment: sb_suite (the script), sb_build, sb_src, and
// sb_shares (the checkout's own shares, below).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, const char *arg) {
	fprintf(stderr, "sb-init: %s %s%s%s\n", what, arg, errno ? ": " : "", errno ? strerror(errno) : "");
	errno = 0;
}

static void power_off(void) {
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *opts) {
	mkdir(dst, 0755);
	errno = 0;
	if (mount(src, dst, type, flags, opts) != 0) {
		say("cannot mount", dst);
		power_off();
	}
}

// mkdir -p: a share's mount point may lie under one of the guest's own
// tmpfs mounts (a checkout under /tmp), where the host's directory is hidden.
static void make_dirs(const char *path) {
	char dir[1040];
	snprintf(dir, sizeof dir, "%s", path);
	for (char *slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(dir, 0755);
		*slash = '/';
	}
	mkdir(dir, 0755);
}

// sb_shares=TAG:PATH,TAG:PATH (boot.py): the checkout and the build
// directory, each its own 9p share mounted at its host path. The share of
// the host root does not cross the host's mounts, and the guest's /tmp is
// its own tmpfs: either would hide a checkout that is not on the root's
// filesystem (a clone under /tmp, a build on another disk).
static void mount_shares(const char *shares, const char *opts) {
	char list[1024], target[1040];
	snprintf(list, sizeof list, "%s", shares ? shares : "");
	for (char *save = NULL, *share = strtok_r(list, ",", &save); share; share = strtok_r(NULL, ",", &save)) {
		char *path = strchr(share, ':');
		if (!path || path[1] != '/')
			continue;
		*path++ = 0;
		snprintf(target, sizeof target, "/newroot%s", path);
		make_dirs(target);
		must_mount(share, target, "9p", MS_RDONLY, opts);
	}
}

// /modules.list: module files in load order (modprobe --show-depends order).
static void load_modules(void) {
	FILE *list = fopen("/modules.list", "r");
	char path[512];
	if (!list)
		return;
	while (fgets(path, sizeof path, list)) {
		path[strcspn(path, "\n")] = 0;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		errno = 0;
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST))
			say("cannot load", path);
		errno = 0;
		if (fd >= 0)
			close(fd);
	}
	fclose(list);
}

int main(void) {
	const char *suite = getenv("sb_suite");
	const char *p9 = "trans=virtio,version=9p2000.L,msize=262144";
	char opts[256];

	must_mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	load_modules();
	// The host root does not change while the guest runs: cache it.
	snprintf(opts, sizeof opts, "%s,cache=loose", p9);
	must_mount("hostroot", "/newroot", "9p", MS_RDONLY, opts);
	must_mount("tmpfs", "/newroot/run", "tmpfs", 0, "mode=0755");
	must_mount("tmpfs", "/newroot/tmp", "tmpfs", 0, "mode=1777");
	must_mount("tmpfs", "/newroot/var/tmp", "tmpfs", 0, "mode=1777");
	must_mount("devtmpfs", "/newroot/dev", "devtmpfs", 0, NULL);
	must_mount("devpts", "/newroot/dev/pts", "devpts", 0, NULL);
	must_mount("tmpfs", "/newroot/dev/shm", "tmpfs", 0, "mode=1777");
	must_mount("proc", "/newroot/proc", "proc", 0, NULL);
	must_mount("sysfs", "/newroot/sys", "sysfs", 0, NULL);
	must_mount("tracefs", "/newroot/sys/kernel/tracing", "tracefs", 0, NULL);
	must_mount("debugfs", "/newroot/sys/kernel/debug", "debugfs", 0, NULL);
	must_mount("bpf", "/newroot/sys/fs/bpf", "bpf", 0, NULL);
	must_mount("cgroup2", "/newroot/sys/fs/cgroup", "cgroup2", 0, NULL);
	mkdir("/newroot/run/sb", 0755);
	// Written by the guest and by the host (monitor replies): no cache.
	must_mount("out", "/newroot/run/sb/out", "9p", 0, p9);
	must_mount("kernel", "/newroot/run/sb/kernel", "9p", MS_RDONLY, opts);
	mount_shares(getenv("sb_shares"), opts);

	if (chroot("/newroot") != 0 || chdir("/") != 0) {
		say("cannot chroot", "/newroot");
		power_off();
	}
	pid_t child = fork();
	if (child == 0) {
		setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
		setenv("HOME", "/tmp", 1);
		setenv("SB_OUT", "/run/sb/out", 1);
		setenv("SB_KERNEL", "/run/sb/kernel", 1);
		setenv("SB_GUEST", "1", 1);
		execl("/bin/sh", "sh", suite ? suite : "/nonexistent-sb_suite", (char *)NULL);
		say("cannot run", suite ? suite : "(no sb_suite= on the command line)");
		_exit(127);
	}
	// pid 1 reaps every orphan until the suite itself has ended.
	for (;;) {
		int status;
		pid_t pid = wait(&status);
		if (pid == child || (pid < 0 && errno == ECHILD))
			break;
	}
	power_off();
}
