#!/usr/bin/env python3
"""The remote shell between the guests of `make test-nodes`: Open MPI's rsh
launcher (plm_rsh_agent) starts its daemon on the other node through it, as
it would through ssh. The guests share this machine's root read-only and have
no sshd or keys; this is the least that does ssh's job for the launcher: run
one command line under sh on the other node, relay its output, and exit with
its status once it ends (mpirun takes an agent that exits for a daemon lost).

  rsh.py serve ADDR PORT        the node that takes commands (runs until killed)
  rsh.py [-x ...] HOST CMD...   what mpirun runs: CMD on HOST, via HOST:PORT
                                (PORT from SB_RSH_PORT, default 7722)
Frames both ways: 1 byte type, 4 bytes length (big-endian), the bytes.
Types: 0 the command line, 1 stdout, 2 stderr, 3 the exit status (4 bytes).
"""
import os
import socket
import struct
import subprocess
import sys
import threading

CMD, OUT, ERR, STATUS = 0, 1, 2, 3


def send(sock, lock, kind, data):
    with lock:
        sock.sendall(struct.pack(">BI", kind, len(data)) + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_frame(sock):
    head = recv_exact(sock, 5)
    if head is None:
        return None, None
    kind, length = struct.unpack(">BI", head)
    return kind, recv_exact(sock, length)


def handle(conn):
    lock = threading.Lock()
    kind, command = recv_frame(conn)
    if kind != CMD:
        conn.close()
        return
    proc = subprocess.Popen(["/bin/sh", "-c", command.decode()], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def relay(pipe, kind):
        for chunk in iter(lambda: os.read(pipe.fileno(), 65536), b""):
            send(conn, lock, kind, chunk)

    relays = [threading.Thread(target=relay, args=(proc.stdout, OUT)),
              threading.Thread(target=relay, args=(proc.stderr, ERR))]
    for t in relays:
        t.start()
    status = proc.wait()
    for t in relays:
        t.join()
    send(conn, lock, STATUS, struct.pack(">i", status if status >= 0 else 128 - status))
    conn.close()


def serve(addr, port):
    listener = socket.create_server((addr, port), reuse_port=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def run(host, command):
    port = int(os.environ.get("SB_RSH_PORT", "7722"))
    try:
        sock = socket.create_connection((host, port), timeout=30)
    except OSError as e:
        print("rsh.py: cannot reach %s:%d: %s" % (host, port, e), file=sys.stderr)
        return 255
    sock.settimeout(None)
    send(sock, threading.Lock(), CMD, command.encode())
    while True:
        kind, data = recv_frame(sock)
        if kind is None:
            print("rsh.py: %s closed the connection before the command's status" % host, file=sys.stderr)
            return 255
        if kind == STATUS:
            return struct.unpack(">i", data)[0]
        stream = sys.stdout.buffer if kind == OUT else sys.stderr.buffer
        stream.write(data)
        stream.flush()


def main(argv):
    if len(argv) == 4 and argv[1] == "serve":
        serve(argv[2], int(argv[3]))
        return 0
    args = argv[1:]
    while args and args[0].startswith("-"):  # ssh's options (-x) mean nothing here
        args = args[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return run(args[0], " ".join(args[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
