"""A process that moves data only where the interposer times nothing: a
multiprocessing queue to a forkserver child (pipes, and the forkserver's
Unix socket), a Unix socketpair, and UDP datagrams on loopback."""

import multiprocessing as mp
import socket
import threading

MIB = 1 << 20


def child(queue):
    queue.put(b"x" * (4 * MIB))


if __name__ == "__main__":
    ctx = mp.get_context("forkserver")
    queue = ctx.Queue()
    p = ctx.Process(target=child, args=(queue,))
    p.start()
    assert len(queue.get()) == 4 * MIB
    p.join()
    left, right = socket.socketpair()
    got = []
    reader = threading.Thread(target=lambda: got.append(right.makefile("rb").read(MIB)))
    reader.start()
    left.sendall(b"y" * MIB)
    reader.join()
    assert len(got[0]) == MIB
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    for _ in range(4):
        sender.send(b"z" * 1000)
        receiver.recv(2000)
    print("done")
