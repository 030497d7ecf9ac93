"""A Kazoo client in its own process, driven by the suite (see
harness.ClientProcess): it connects, performs the setup its arguments ask
for, then reports every Kazoo state change as a JSON line on stdout until
stdin closes or says "exit".

Usage: clientproc.py HOSTS TIMEOUT_SECONDS [ephemeral:PATH] [lock:PATH:IDENT]
"""

import json
import sys
import threading

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry


def report(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def main(argv):
    hosts, timeout = argv[0], float(argv[1])
    retry = KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5)
    c = KazooClient(hosts=hosts, timeout=timeout, connection_retry=retry,
                    command_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5))

    def listener(state):
        report(state=str(state))

    c.add_listener(listener)
    c.start(timeout=30)
    held = []
    for action in argv[2:]:
        kind, _, rest = action.partition(":")
        if kind == "ephemeral":
            c.create(rest, b"eph", ephemeral=True, makepath=True)
        elif kind == "lock":
            path, _, ident = rest.partition(":")
            lock = c.Lock(path, ident)
            lock.acquire()
            held.append(lock)
        else:
            raise SystemExit("clientproc: unknown action %r" % action)
    sid, passwd = c.client_id
    report(ready=True, session=sid, passwd=passwd.hex())

    def session_watch():
        # Report each new session id (after LOST, Kazoo starts a new one).
        last = sid
        while True:
            ev = threading.Event()
            ev.wait(0.1)
            cur = c.client_id[0] if c.client_id else None
            if cur and cur != last and c.connected:
                report(new_session=cur)
                last = cur

    threading.Thread(target=session_watch, daemon=True).start()
    for line in sys.stdin:
        if line.strip() == "exit":
            break
    c.stop()
    c.close()


if __name__ == "__main__":
    main(sys.argv[1:])
