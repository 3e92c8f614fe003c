#!/usr/bin/env python3
"""Boot one kernel under QEMU (TCG) with the host's root shared read-only over
virtio-9p, run the guest suite, serve its QEMU monitor requests, and kill the
guest at the timeout (printing the console's tail).

The guest asks for monitor commands by writing OUT/mon/N.req (one command);
this script runs it on QEMU's QMP socket (human-monitor-command) and answers in OUT/mon/N.ack.

  boot.py --kernel build/kernels/6.1.0-50-amd64 --init build/kernels/init \
          --suite tests/kernels/guest/suite.sh --out build/kernels/out/6.1 \
          --build build --timeout 300
Exit status: 0 the guest powered off, 2 it timed out, 1 an error.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time


def cpio_newc(path, entries):
    """entries: (name, mode, data or None for a directory)."""
    with open(path, "wb") as f:
        def put(ino, name, mode, data):
            nb = name.encode() + b"\0"
            hdr = "070701" + "".join("%08X" % v for v in (
                ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
            f.write(hdr.encode() + nb)
            f.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
            f.write(data)
            f.write(b"\0" * ((4 - len(data) % 4) % 4))
        for ino, (name, mode, data) in enumerate(entries, start=1):
            put(ino, name, mode, data if data is not None else b"")
        put(0, "TRAILER!!!", 0, b"")


def build_initramfs(kernel_dir, release, init, dest):
    # The 9p modules and what they need, in load order, as modprobe resolves them.
    res = subprocess.run(
        ["/sbin/modprobe", "-d", kernel_dir, "-S", release, "--show-depends",
         "-a", "virtio_pci", "9pnet_virtio", "9p"],
        check=True, capture_output=True, text=True)
    entries = [("dev", 0o40755, None), ("newroot", 0o40755, None),
               ("lib", 0o40755, None)]
    order, seen = [], set()
    for line in res.stdout.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "insmod" and words[1] not in seen:
            seen.add(words[1])
            name = "lib/%02d-%s" % (len(order), os.path.basename(words[1]))
            entries.append((name, 0o100644, pathlib.Path(words[1]).read_bytes()))
            order.append("/" + name)
    entries.append(("modules.list", 0o100644, ("\n".join(order) + "\n").encode()))
    entries.append(("init", 0o100755, pathlib.Path(init).read_bytes()))
    cpio_newc(dest, entries)


class Monitor:
    """QEMU's QMP socket; human monitor commands go through
    human-monitor-command, so replies come back as plain text."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self._reply()  # the greeting
        self.execute("qmp_capabilities")

    def _reply(self):
        while True:
            line = self.file.readline()
            if not line:
                raise OSError("QMP socket closed")
            msg = json.loads(line)
            if "event" not in msg:  # asynchronous events are not replies
                return msg

    def execute(self, command, **arguments):
        self.file.write(json.dumps({"execute": command, "arguments": arguments}).encode() + b"\n")
        self.file.flush()
        return self._reply()

    def human(self, command_line):
        reply = self.execute("human-monitor-command", **{"command-line": command_line})
        if "error" in reply:
            return "error: %s\n" % reply["error"].get("desc", reply["error"])
        return reply.get("return", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True, help="an extracted kernel package (fetch.sh)")
    ap.add_argument("--init", required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", default=os.getcwd(), help="the checkout (default: the current directory)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--memory", default="2048")
    ap.add_argument("--smp", default="2")
    # Several guests as the nodes of one job (tests/kernels/nodes.sh):
    ap.add_argument("--append", action="append", default=[],
                    help="KEY=VALUE on the kernel command line (init hands it to the suite as environment)")
    ap.add_argument("--rtc-base", help="the guest's wall clock at boot (QEMU -rtc base=): nodes whose clocks disagree")
    ap.add_argument("--fabric", help="listen:PORT or connect:PORT: one more e1000e (0000:00:1e.0) on a QEMU "
                    "socket netdev, the Ethernet segment between guests (loopback on this host only)")
    ap.add_argument("--mac", default="52:54:00:5b:00:01", help="the fabric NIC's MAC (one per guest)")
    args = ap.parse_args()

    kernel_dir = os.path.abspath(args.kernel)
    release = os.path.basename(kernel_dir)
    out = pathlib.Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    (out / "mon").mkdir(parents=True)
    initrd = out / "initramfs.cpio"
    build_initramfs(kernel_dir, release, args.init, initrd)
    console = out / "console.log"
    mon_path = out / "monitor.sock"

    # The checkout and the build directory, each its own read-only 9p share
    # mounted at its host path (init.c): the share of the host root does not
    # cross the host's mounts and the guest's /tmp is a tmpfs, so a clone
    # under /tmp or a build on another disk would be missing there.
    src = os.path.realpath(args.src)
    build = os.path.realpath(args.build)
    shares = [("src", src)]
    if os.path.commonpath([src, build]) != src:
        shares.append(("build", build))
    for tag, path in shares:
        if any(c in path for c in " ,:\t\n"):
            print("kernels: %s: the path %r cannot go on the kernel command line "
                  "(a space, comma or colon): move it" % (tag, path), file=sys.stderr)
            return 1

    cmdline = " ".join([
        "console=ttyS0", "panic=-1", "pcie_ports=native", "loglevel=6",
        "sb_suite=" + os.path.abspath(args.suite),
        "sb_build=" + build, "sb_src=" + src, "sb_release=" + release,
        "sb_shares=" + ",".join("%s:%s" % share for share in shares)]
        # SB_TESTS=check,aer: run only these guest tests.
        + (["sb_tests=" + os.environ["SB_TESTS"]] if os.environ.get("SB_TESTS") else [])
        + args.append)
    qemu = [
        "qemu-system-x86_64", "-machine", "q35", "-cpu", "max",
        # One TCG thread for both vCPUs: with multi-threaded TCG, the kernel's
        # text_poke of a tracepoint's static branch (int3, then the new bytes)
        # raced another vCPU executing it: "Oops: int3" in
        # __handle_irq_event_percpu on 6.12 as gpuirq attached irq_handler_entry.
        "-accel", "tcg,thread=single",
        "-m", args.memory, "-smp", args.smp, "-no-reboot", "-display", "none",
        "-serial", "file:%s" % console,
        "-qmp", "unix:%s,server,nowait" % mon_path,
        "-kernel", os.path.join(kernel_dir, "boot", "vmlinuz-" + release),
        "-initrd", str(initrd), "-append", cmdline,
        # rp1: AER target, no hotplug (pcie_aer_inject_error); rp2: hotplug.
        # Native PCIe hotplug (pciehp), not QEMU's ACPI hotplug of q35 (6.1+).
        "-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off",
        # nic1 and nic2 share one Ethernet segment (a QEMU hub): Soft-RoCE
        # on them is RDMA over PCIe NICs, below root ports that take AER.
        "-netdev", "hubport,id=net1,hubid=0",
        "-netdev", "hubport,id=net2,hubid=0",
        "-device", "pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1,hotplug=off,addr=3.0",
        "-device", "e1000e,bus=rp1,id=nic1,netdev=net1",
        "-device", "pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2,addr=4.0",
        "-device", "e1000e,bus=rp2,id=nic2,netdev=net2",
        # rp3: an AER endpoint (0000:03:00.0). QEMU's e1000e cannot be one: its
        # Device Control error-reporting bits are read-only zero, so it never
        # forwards an error; virtio-pci with aer=on has both.
        "-device", "pcie-root-port,id=rp3,bus=pcie.0,chassis=3,slot=3,hotplug=off,addr=5.0",
        "-device", "virtio-rng-pci,bus=rp3,id=rng1,aer=on",
        "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
        "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
        *[arg for tag, path in shares for arg in (
            "-fsdev", "local,id=%s,path=%s,security_model=none,readonly=on,multidevs=remap" % (tag, path),
            "-device", "virtio-9p-pci,fsdev=%s,mount_tag=%s" % (tag, tag))],
        "-fsdev", "local,id=out,path=%s,security_model=none" % out,
        "-device", "virtio-9p-pci,fsdev=out,mount_tag=out",
        "-fsdev", "local,id=kernel,path=%s,security_model=none,readonly=on" % kernel_dir,
        "-device", "virtio-9p-pci,fsdev=kernel,mount_tag=kernel",
        "-nic", "none",
    ]
    if args.rtc_base:
        qemu += ["-rtc", "base=%s,clock=host" % args.rtc_base]
    if args.fabric:
        mode, _, port = args.fabric.partition(":")
        if mode not in ("listen", "connect") or not port.isdigit():
            print("kernels: --fabric %r: want listen:PORT or connect:PORT" % args.fabric, file=sys.stderr)
            return 1
        qemu += ["-netdev", "socket,id=fabric,%s=127.0.0.1:%s" % (mode, port),
                 "-device", "e1000e,bus=pcie.0,addr=1e.0,id=fabnic,netdev=fabric,mac=%s" % args.mac]
    started = time.time()
    # When this guest's clocks began: its RTC counts from --rtc-base here.
    (out / "qemu_started").write_text("%.3f\n" % started)
    proc = subprocess.Popen(["nice"] + qemu, stdin=subprocess.DEVNULL,
                            stdout=open(out / "qemu.log", "wb"), stderr=subprocess.STDOUT)
    monitor = None
    answered = set()
    status = 0
    while proc.poll() is None:
        if time.time() - started > args.timeout:
            proc.kill()
            proc.wait()
            tail = console.read_text(errors="replace").splitlines()[-40:] if console.exists() else []
            print("kernels: %s: guest still running after %.0f s, killed; console tail:" %
                  (release, args.timeout), file=sys.stderr)
            for line in tail:
                print("  | " + line, file=sys.stderr)
            status = 2
            break
        if monitor is None and mon_path.exists():
            try:
                monitor = Monitor(mon_path)
            except OSError:
                monitor = None
        for req in sorted((out / "mon").glob("*.req")):
            if req.name in answered or monitor is None:
                continue
            answered.add(req.name)
            reply = monitor.human(req.read_text().strip())
            tmp = req.with_suffix(".tmp")
            tmp.write_text(reply)
            tmp.rename(req.with_suffix(".ack"))
        time.sleep(0.2)
    (out / "wall_s").write_text("%.1f\n" % (time.time() - started))
    if status == 0 and proc.returncode != 0:
        print("kernels: %s: qemu exited %d: %s" % (release, proc.returncode,
              (out / "qemu.log").read_text(errors="replace")[-2000:]), file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
