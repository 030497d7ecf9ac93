"""SASL DIGEST-MD5 through Kazoo's sasl_options (puresasl, which Debian's
python3-kazoo depends on): users of the JAAS Server section named by
-Djava.security.auth.login.config (SERVER_JVMFLAGS for zkd, the JVM flags
for ZooKeeper), sasl ACLs, wrong passwords ending in AUTH_FAILED without a
retry storm, enforce.auth, and a server without SASL."""

import os
import socket
import struct
import tempfile
import time

from kazoo.exceptions import NoAuthError
from kazoo.protocol.states import KazooState
from kazoo.security import ACL, Id, Permissions

from kzsuite import CONFIG, KazooTestCase, wait_for

JAAS = """// ZooKeeper's SASL guide, as zkServer.sh users write it
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"
    user_bob="bobsecret";
};
"""

SASL_PROVIDER = {"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}


def jaas_opts(extra_cfg=None):
    """Server options that give zkd and ZooKeeper the same JAAS file."""
    d = tempfile.mkdtemp(prefix="kazoo-jaas-")
    path = os.path.join(d, "jaas.conf")
    with open(path, "w") as f:
        f.write(JAAS)
    flag = "-Djava.security.auth.login.config=" + path
    return {"extra_cfg": dict(extra_cfg or SASL_PROVIDER), "env": {"SERVER_JVMFLAGS": flag},
            "jvm_flags": [flag]}


def digest(user, password):
    return {"mechanism": "DIGEST-MD5", "username": user, "password": password}


def packets_received(server):
    """mntr's zk_packets_received of server."""
    for line in server.four_letter("mntr").splitlines():
        k, _, v = line.partition("\t")
        if k == "zk_packets_received":
            return int(v)
    raise AssertionError("mntr has no zk_packets_received")


class SASLTest(KazooTestCase):

    members = 1
    server_opts = jaas_opts()

    def test_digest_md5_and_sasl_acl(self):
        bob = self.client(sasl_options=digest("bob", "bobsecret"))
        bob.ensure_path(self.root)
        bob.create(self.p("bob"), b"b", acl=[ACL(Permissions.ALL, Id("sasl", "bob"))])
        self.assertEqual(bob.get(self.p("bob"))[0], b"b")
        self.assertEqual(bob.get_acls(self.p("bob"))[0], [ACL(Permissions.ALL, Id("sasl", "bob"))])

        anon = self.client()
        with self.assertRaises(NoAuthError):
            anon.get(self.p("bob"))
        with self.assertRaises(NoAuthError):
            anon.set(self.p("bob"), b"x")

        # The SASL user "super" matches every sasl ACL entry.
        sup = self.client(sasl_options=digest("super", "adminsecret"))
        self.assertEqual(sup.get(self.p("bob"))[0], b"b")

    def test_wrong_password_fails_once(self):
        srv = self.cluster.members[0]
        states = []
        c = self.client(start=False, sasl_options=digest("bob", "wrong"))
        c.add_listener(states.append)
        before = packets_received(srv)
        try:
            c.start(timeout=10)
        except Exception:  # noqa: BLE001 -- Kazoo may report the failure here
            pass
        wait_for(lambda: KazooState.LOST in states, msg="LOST after the failed SASL exchange")
        time.sleep(1)
        # Connect, two SASL steps; a retry storm would be thousands.
        self.assertLess(packets_received(srv) - before, 20)
        self.assertNotEqual(c.state, KazooState.CONNECTED)


class SASLEnforcedTest(KazooTestCase):
    """enforce.auth.enabled with enforce.auth.schemes=sasl."""

    members = 1
    server_opts = jaas_opts(dict(SASL_PROVIDER, **{"enforce.auth.enabled": "true",
                                                   "enforce.auth.schemes": "sasl"}))

    def test_authenticated_client_works(self):
        bob = self.client(sasl_options=digest("bob", "bobsecret"))
        bob.ensure_path(self.root)
        bob.create(self.p("x"), b"1")
        self.assertEqual(bob.get(self.p("x"))[0], b"1")


class SASLNotConfiguredTest(KazooTestCase):
    """A server without a JAAS file. ZooKeeper 3.8 answers a sasl request
    OK with a null token, which Kazoo answers with another empty token,
    without end; zkd answers AuthFailed and closes, so Kazoo stops."""

    members = 1

    def test_sasl_request(self):
        srv = self.cluster.members[0]
        if CONFIG.kind == "zookeeper":
            self.assertEqual(self.raw_sasl(srv), (0, -1))
            return
        self.assertEqual(self.raw_sasl(srv), (-115, -1))
        states = []
        c = self.client(start=False, sasl_options=digest("bob", "bobsecret"))
        c.add_listener(states.append)
        before = packets_received(srv)
        try:
            c.start(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        wait_for(lambda: KazooState.LOST in states, msg="LOST after the refused SASL exchange")
        time.sleep(1)
        self.assertLess(packets_received(srv) - before, 20)

    @staticmethod
    def raw_sasl(srv):
        """Connect, send one empty sasl token, return (err, token length)."""
        with socket.create_connection((srv.host, srv.port), timeout=10) as s:
            connect = struct.pack(">iqiqi", 0, 0, 10000, 0, 16) + b"\0" * 16
            s.sendall(struct.pack(">i", len(connect)) + connect)
            read_frame(s)
            req = struct.pack(">iii", 1, 102, 0)
            s.sendall(struct.pack(">i", len(req)) + req)
            body = read_frame(s)
            _, _, err, n = struct.unpack(">iqii", body[:20])
            return err, n


def read_frame(s):
    n = struct.unpack(">i", read_n(s, 4))[0]
    return read_n(s, n)


def read_n(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise AssertionError("connection closed")
        b += chunk
    return b
