"""Kazoo's use_ssl against a secureClientPort: a client certificate gives
the x509 identity its ACLs name; a missing or untrusted certificate, or
an untrusted server, gets no session while others are served. Certificates are made with openssl at test time."""

import os
import shutil
import subprocess
import tempfile

from kazoo.exceptions import NoAuthError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import ACL, Id, Permissions

import harness
from kzsuite import KazooTestCase

SUBJECT = "CN=kazoo,O=zkd test"


def openssl(*args):
    """Run openssl, failing with its output."""
    exe = shutil.which("openssl")
    if not exe:
        raise AssertionError("openssl is needed to make test certificates: apt-get install -y openssl")
    r = subprocess.run([exe] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("openssl %s: %s" % (" ".join(args), r.stderr))


class PKI:
    """A CA, a server certificate and client certificates in PEM files."""

    def __init__(self, d):
        self.dir = d
        self.ca = self.make_ca("ca", "zkd test CA")
        self.other_ca = self.make_ca("other", "someone else")

    def path(self, name):
        return os.path.join(self.dir, name)

    def make_ca(self, name, cn):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", self.path(name + ".key"), "-out", self.path(name + ".pem"),
                "-days", "1", "-subj", "/CN=" + cn)
        return name

    def issue(self, name, subject, ca="ca"):
        """A key and certificate signed by ca: name.key, name.crt and
        name-store.pem (both, as a PEM key store)."""
        key, csr, crt = self.path(name + ".key"), self.path(name + ".csr"), self.path(name + ".crt")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", subject)
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        openssl("x509", "-req", "-in", csr, "-CA", self.path(ca + ".pem"), "-CAkey", self.path(ca + ".key"),
                "-CAcreateserial", "-out", crt, "-extfile", ext, "-days", "1")
        with open(self.path(name + "-store.pem"), "w") as out:
            for p in (key, crt):
                with open(p) as f:
                    out.write(f.read())
        return name


class TLSTest(KazooTestCase):

    members = 1
    # zoo.cfg names the x509 provider (authProvider.x509=...).
    provider_line = True

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="kz-tls-")
        self.pki = PKI(self.tmp)
        self.pki.issue("server", "/CN=localhost")
        self.pki.issue("alice", "/O=zkd test/CN=kazoo")
        self.pki.issue("stranger", "/CN=kazoo", ca="other")
        self.secure_port = harness.free_port()
        cfg = {
            "secureClientPort": str(self.secure_port),
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": self.pki.path("server-store.pem"),
            "ssl.trustStore.location": self.pki.path("ca.pem"),
        }
        if self.provider_line:
            cfg["authProvider.x509"] = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
        self.tls_cluster = self.own_cluster(members=1, extra_cfg=cfg)
        self.secure_hosts = "127.0.0.1:%d" % self.secure_port

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tls_client(self, cert=None, ca="ca", start=True):
        kw = dict(hosts=self.secure_hosts, use_ssl=True, verify_certs=True, ca=self.pki.path(ca + ".pem"))
        if cert:
            kw.update(certfile=self.pki.path(cert + ".crt"), keyfile=self.pki.path(cert + ".key"))
        return self.client(self.tls_cluster, start=start, **kw)

    def test_client_certificate_is_x509_identity(self):
        alice = self.tls_client("alice")
        alice.ensure_path(self.root)
        acl = [ACL(Permissions.ALL, Id("x509", SUBJECT))]
        alice.create(self.p("mine"), b"v", acl=acl)
        self.assertEqual(alice.get(self.p("mine"))[0], b"v")
        self.assertEqual(alice.get_acls(self.p("mine"))[0], acl)
        plain = self.client(self.tls_cluster)
        with self.assertRaises(NoAuthError):
            plain.get(self.p("mine"))

    def test_bad_certificates_get_no_session(self):
        good = self.tls_client("alice")
        good.ensure_path(self.root)
        for name, kw in [("no certificate", dict(cert=None)),
                         ("untrusted certificate", dict(cert="stranger")),
                         ("untrusted server", dict(cert="alice", ca="other"))]:
            c = self.tls_client(start=False, **kw)
            with self.assertRaises(KazooTimeoutError, msg=name):
                c.start(timeout=4)
            c.stop()
            good.set(self.root, name.encode())
        self.assertEqual(good.get(self.root)[0], b"untrusted server")


class TLSWithoutProviderLineTest(TLSTest):
    """The same with no authProvider line: ZooKeeper 3.8 turns the x509
    provider on itself for a secureClientPort (configureSSLAuth), so a
    CA-signed client certificate still gets its session and x509 id."""

    provider_line = False
    # The refusals do not depend on the provider line; TLSTest covers them.
    test_bad_certificates_get_no_session = None
