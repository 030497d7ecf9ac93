"""zkd's fencing tokens through Kazoo, unmodified: the public key and a lock
node's token are read with Kazoo's stock get, and checked as docs/fencing.md
shows a Python resource doing it, with the cryptography package's Ed25519
(Debian's python3-cryptography) and the struct module, no zkd code.

Against ZooKeeper (--server zookeeper) the scenario checks only that the
feature is absent there: /zookeeper/fencing does not exist.
"""

import base64
import json
import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from kazoo.exceptions import NoAuthError, NoNodeError, NodeExistsError

import kzsuite
from kzsuite import KazooTestCase, wait_for

KEY_PATH = "/zookeeper/fencing"


def b64url(s):
    """Decode unpadded base64url."""
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def parse_token(text, pub):
    """Check a token's Ed25519 signature with pub and return its fields;
    raises InvalidSignature or ValueError."""
    prefix, payload64, sig64 = text.decode().strip().split(".")
    if prefix != "zkdf1":
        raise ValueError("not a zkd fencing token: %r" % prefix)
    payload = b64url(payload64)
    pub.verify(b64url(sig64), payload)
    magic, version, key_id, czxid, session, read_zxid = struct.unpack_from(">4sB8sqqq", payload)
    if magic != b"ZKDF" or version != 1:
        raise ValueError("bad token header")
    off = struct.calcsize(">4sB8sqqq")
    strings = []
    for _ in range(2):
        (n,) = struct.unpack_from(">i", payload, off)
        strings.append(payload[off + 4:off + 4 + n].decode())
        off += 4 + n
    if off != len(payload):
        raise ValueError("trailing bytes in token")
    return dict(lock=strings[0], node=strings[1], czxid=czxid, session=session,
                read_zxid=read_zxid, key_id=key_id.hex())


class StaleToken(Exception):
    pass


class FencedStore:
    """A resource fenced by zkd's tokens: it keeps the highest czxid it
    accepted and refuses writes that carry a lower one."""

    def __init__(self, pub):
        self.pub = pub
        self.highest = None
        self.log = []

    def write(self, token, data):
        t = parse_token(token, self.pub)
        if self.highest is not None and t["czxid"] < self.highest:
            self.log.append("refused " + data)
            raise StaleToken("czxid %#x below %#x" % (t["czxid"], self.highest))
        self.highest = t["czxid"]
        self.log.append("ok " + data)
        return t


def node_of(client, lock_path, session):
    """The child of lock_path that session owns."""
    for name in client.get_children(lock_path):
        _, st = client.get(lock_path + "/" + name)
        if st.ephemeralOwner == session:
            return lock_path + "/" + name
    raise AssertionError("no child of %s owned by %#x" % (lock_path, session))


class FencingTest(KazooTestCase):

    def public_key(self, client):
        data = wait_for(lambda: self._try_get(client, KEY_PATH), timeout=20, msg="the fencing key")
        info = json.loads(data)
        self.assertEqual(info["algorithm"], "Ed25519")
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(info["public_key"]))

    @staticmethod
    def _try_get(client, path):
        try:
            return client.get(path)[0]
        except NoNodeError:
            return None

    def test_stale_holder_refused(self):
        # Holder A is a Kazoo process of its own holding Kazoo's Lock; its
        # token is read with a stock get. A is paused with SIGSTOP until its
        # session expires, B takes the lock; the store accepts B's token
        # and refuses A's, which A would carry on writing with.
        c = self.client()
        if kzsuite.CONFIG.kind == "zookeeper":
            self.assertRaises(NoNodeError, c.get, KEY_PATH)
            return
        store = FencedStore(self.public_key(c))
        lock = self.p("lock")
        timeout = 2.0
        holder = self.client_process(self.cluster.hosts, timeout, "lock:%s:holder" % lock)
        c.sync(lock)
        node_a = node_of(c, lock, holder.ready["session"])
        tok_a, st = c.get(KEY_PATH + node_a)
        a = store.write(tok_a, "a1")
        self.assertEqual((a["lock"], a["czxid"], a["session"]), (lock, st.czxid, holder.ready["session"]))
        self.assertEqual(lock + "/" + a["node"], node_a)

        holder.pause()
        waiter = self.client()
        lw = waiter.Lock(lock, "waiter")
        self.assertTrue(lw.acquire(timeout=30), "B did not get the lock after A's session expired")
        tok_b, _ = waiter.get(KEY_PATH + node_of(waiter, lock, waiter.client_id[0]))
        b = store.write(tok_b, "b1")
        self.assertGreater(b["czxid"], a["czxid"])
        holder.resume()
        with self.assertRaises(StaleToken):
            store.write(tok_a, "a2")
        store.write(tok_b, "b2")
        lw.release()
        self.assertEqual(store.log, ["ok a1", "ok b1", "refused a2", "ok b2"])
        # A's token is gone with its node; the token of a released lock
        # node too.
        self.assertRaises(NoNodeError, c.get, KEY_PATH + node_a)

    def test_virtual_nodes_read_only(self):
        c = self.client()
        if kzsuite.CONFIG.kind == "zookeeper":
            self.assertRaises(NoNodeError, c.get, KEY_PATH)
            return
        pub = self.public_key(c)
        c.create(self.p("l"), makepath=True)
        c.create(self.p("l", "plain"), ephemeral=True)
        node = c.create(self.p("l", "x__lock__"), ephemeral=True, sequence=True)
        tok, _ = c.get(KEY_PATH + node)
        # The same token claiming a czxid one higher, under the old
        # signature.
        prefix, payload64, sig64 = tok.decode().split(".")
        payload = bytearray(b64url(payload64))
        payload[struct.calcsize(">4sB8sq") - 1] ^= 1
        forged = ".".join((prefix, base64.urlsafe_b64encode(bytes(payload)).decode().rstrip("="), sig64)).encode()
        with self.assertRaises(InvalidSignature):
            parse_token(forged, pub)
        for p in (self.p("l"), self.p("l", "plain"), self.p("l", "x__lock__9999999999")):
            self.assertRaises(NoNodeError, c.get, KEY_PATH + p)
        self.assertNotIn("fencing", c.get_children("/zookeeper"))
        self.assertRaises(NodeExistsError, c.create, KEY_PATH)
        self.assertRaises(NoAuthError, c.set, KEY_PATH, b"x")
        self.assertRaises(NoAuthError, c.set, KEY_PATH + node, b"x")
        self.assertRaises(NoAuthError, c.delete, KEY_PATH + node)
