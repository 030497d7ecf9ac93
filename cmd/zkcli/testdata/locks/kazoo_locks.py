"""Queue Kazoo lock contenders for zkcli's lock-view test.

Usage: kazoo_locks.py HOST:PORT

Each contender gets its own session and acquires in a background thread;
the next starts once the previous one's node exists, so queue order is
start order. Prints "contender PATH 0xSESSION" per contender, in order,
then "ready", and holds everything until stdin closes.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

hosts = sys.argv[1]
clients = []


def queue(path, make, expected):
    c = KazooClient(hosts=hosts, timeout=10)
    c.start()
    clients.append(c)
    lock = make(c)
    print("contender %s 0x%x" % (path, c.client_id[0]), flush=True)
    threading.Thread(target=lock.acquire, daemon=True).start()
    while True:
        try:
            if len(c.get_children(path)) >= expected:
                return
        except NoNodeError:
            pass
        time.sleep(0.02)


for i in range(3):
    queue("/kazoo/lock", lambda c: c.Lock("/kazoo/lock", "id%d" % i), i + 1)
for i, kind in enumerate(["read", "write", "read"]):
    queue("/kazoo/rw", lambda c: c.ReadLock("/kazoo/rw") if kind == "read" else c.WriteLock("/kazoo/rw"), i + 1)
print("ready", flush=True)
sys.stdin.read()
for c in clients:
    c.stop()
    c.close()
