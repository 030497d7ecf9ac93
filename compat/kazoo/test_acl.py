"""ACLs and authentication through Kazoo: digest ACLs, add_auth, the auth
scheme, get_acls/set_acls with versions, per-permission checks and the
super user."""

import base64
import hashlib

from kazoo.exceptions import (
    BadVersionError,
    InvalidACLError,
    NoAuthError,
)
from kazoo.security import (
    ACL,
    Id,
    OPEN_ACL_UNSAFE,
    Permissions,
    make_acl,
    make_digest_acl,
    make_digest_acl_credential,
)

from kzsuite import KazooTestCase

READ, WRITE, CREATE, DELETE, ADMIN = (Permissions.READ, Permissions.WRITE, Permissions.CREATE,
                                      Permissions.DELETE, Permissions.ADMIN)


def world(perms):
    """A world:anyone ACL entry with perms."""
    return ACL(perms, Id("world", "anyone"))


class ACLTest(KazooTestCase):

    def test_digest_acl_and_add_auth(self):
        alice = self.client(auth_data=[("digest", "alice:pw")])
        alice.ensure_path(self.root)
        acl = [make_digest_acl("alice", "pw", all=True)]
        alice.create(self.p("secret"), b"s", acl=acl)
        alice.create(self.p("secret", "kid"), b"k", acl=acl)
        self.assertEqual(alice.get(self.p("secret"))[0], b"s")

        anon = self.client()
        anon.sync(self.p())  # alice may be connected to another member
        # exists is not ACL-checked.
        self.assertIsNotNone(anon.exists(self.p("secret")))
        for op in (lambda: anon.get(self.p("secret")),
                   lambda: anon.set(self.p("secret"), b"x"),
                   lambda: anon.get_children(self.p("secret")),
                   lambda: anon.create(self.p("secret", "new")),
                   lambda: anon.delete(self.p("secret", "kid"))):
            with self.assertRaises(NoAuthError):
                op()
        # A wrong password adds a different digest id: still no access.
        anon.add_auth("digest", "alice:wrong")
        with self.assertRaises(NoAuthError):
            anon.get(self.p("secret"))
        anon.add_auth("digest", "alice:pw")
        self.assertEqual(anon.get(self.p("secret"))[0], b"s")
        anon.set(self.p("secret"), b"t")
        alice.sync(self.p())
        self.assertEqual(alice.get(self.p("secret"))[0], b"t")

    def test_get_and_set_acls_with_versions(self):
        alice = self.client(auth_data=[("digest", "alice:pw")])
        alice.ensure_path(self.root)
        alice.create(self.p("n"), b"v", acl=[make_digest_acl("alice", "pw", all=True)])
        acls, st = alice.get_acls(self.p("n"))
        digest = base64.b64encode(hashlib.sha1(b"alice:pw").digest()).decode()
        self.assertEqual(make_digest_acl_credential("alice", "pw"), "alice:" + digest)
        self.assertEqual(list(acls), [ACL(Permissions.ALL, Id("digest", "alice:" + digest))])
        self.assertEqual(st.aversion, 0)

        new = [world(READ), make_digest_acl("alice", "pw", all=True)]
        st = alice.set_acls(self.p("n"), new, version=0)
        self.assertEqual(st.aversion, 1)
        self.assertEqual(st.version, 0)  # the data version is untouched
        with self.assertRaises(BadVersionError):
            alice.set_acls(self.p("n"), OPEN_ACL_UNSAFE, version=0)
        acls, st = alice.get_acls(self.p("n"))
        self.assertEqual(sorted(acls), sorted(new))
        self.assertEqual(st.aversion, 1)

        anon = self.client()
        anon.sync(self.p("n"))  # alice may be connected to another member
        self.assertEqual(anon.get(self.p("n"))[0], b"v")
        with self.assertRaises(NoAuthError):
            anon.set(self.p("n"), b"w")
        with self.assertRaises(NoAuthError):
            anon.set_acls(self.p("n"), OPEN_ACL_UNSAFE)

    def test_each_permission(self):
        c = self.client()
        c.ensure_path(self.root)
        cases = [
            # (acl perms, op name, op, allowed)
            (READ, "get", lambda p: c.get(p), True),
            (WRITE | CREATE | DELETE | ADMIN, "get", lambda p: c.get(p), False),
            (WRITE, "set", lambda p: c.set(p, b"x"), True),
            (READ | CREATE | DELETE | ADMIN, "set", lambda p: c.set(p, b"x"), False),
            (CREATE, "create child", lambda p: c.create(p + "/kid"), True),
            (READ | WRITE | DELETE | ADMIN, "create child", lambda p: c.create(p + "/kid"), False),
            (READ, "get_children", lambda p: c.get_children(p), True),
            (CREATE, "get_children", lambda p: c.get_children(p), False),
            (ADMIN, "set_acls", lambda p: c.set_acls(p, [world(READ)]), True),
            (READ | WRITE | CREATE | DELETE, "set_acls", lambda p: c.set_acls(p, [world(READ)]), False),
            # getACL needs READ or ADMIN.
            (ADMIN, "get_acls", lambda p: c.get_acls(p), True),
            (READ, "get_acls", lambda p: c.get_acls(p), True),
            (WRITE | CREATE | DELETE, "get_acls", lambda p: c.get_acls(p), False),
        ]
        for i, (perms, name, op, allowed) in enumerate(cases):
            path = self.p("perm%d" % i)
            c.create(path, b"d", acl=[world(perms)])
            with self.subTest(perms=perms, op=name):
                if allowed:
                    op(path)
                else:
                    with self.assertRaises(NoAuthError):
                        op(path)

    def test_delete_needs_delete_on_parent(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("nodel"), acl=[world(Permissions.ALL & ~DELETE)])
        c.create(self.p("nodel", "kid"), acl=[world(Permissions.ALL)])
        with self.assertRaises(NoAuthError):
            c.delete(self.p("nodel", "kid"))
        # The child's own ACL does not matter for its deletion.
        c.create(self.p("del"), acl=[world(DELETE | CREATE)])
        c.create(self.p("del", "kid"), acl=[world(READ)])
        c.delete(self.p("del", "kid"))
        self.assertIsNone(c.exists(self.p("del", "kid")))

    def test_auth_scheme_acl(self):
        bob = self.client(auth_data=[("digest", "bob:pw2")])
        bob.ensure_path(self.root)
        bob.create(self.p("mine"), b"m", acl=[make_acl("auth", "", all=True)])
        acls, _ = bob.get_acls(self.p("mine"))
        self.assertEqual(list(acls), [ACL(Permissions.ALL,
                                          Id("digest", make_digest_acl_credential("bob", "pw2")))])
        anon = self.client()
        anon.sync(self.p("mine"))  # bob may be connected to another member
        with self.assertRaises(NoAuthError):
            anon.get(self.p("mine"))
        # The auth scheme with no authenticated id is an invalid ACL.
        with self.assertRaises(InvalidACLError):
            anon.create(self.p("nobody"), acl=[make_acl("auth", "", all=True)])
        self.assertIsNone(anon.exists(self.p("nobody")))

    def test_invalid_acls(self):
        c = self.client()
        c.ensure_path(self.root)
        for acl in ([ACL(Permissions.ALL, Id("digest", "no-colon"))],
                    [ACL(Permissions.ALL, Id("ip", "not-an-address"))]):
            with self.subTest(acl=acl):
                with self.assertRaises(InvalidACLError):
                    c.create(self.p("bad"), acl=acl)
                self.assertIsNone(c.exists(self.p("bad")))

    def test_ip_acl(self):
        c = self.client()
        c.ensure_path(self.root)
        c.create(self.p("local"), b"l", acl=[make_acl("ip", "127.0.0.1", all=True)])
        c.create(self.p("net"), b"n", acl=[make_acl("ip", "127.0.0.0/8", read=True)])
        c.create(self.p("other"), b"o", acl=[make_acl("ip", "10.1.2.3", all=True)])
        self.assertEqual(c.get(self.p("local"))[0], b"l")
        self.assertEqual(c.get(self.p("net"))[0], b"n")
        with self.assertRaises(NoAuthError):
            c.set(self.p("net"), b"x")
        with self.assertRaises(NoAuthError):
            c.get(self.p("other"))


SUPER_DIGEST = "super:" + base64.b64encode(hashlib.sha1(b"super:s3cret").digest()).decode()


class SuperUserTest(KazooTestCase):
    """The super digest from zoo.cfg (the zookeeper.DigestAuthentication-
    Provider.superDigest property) skips every ACL check."""

    server_opts = {"extra_cfg": {"DigestAuthenticationProvider.superDigest": SUPER_DIGEST}}

    def test_super_skips_acls(self):
        alice = self.client(auth_data=[("digest", "alice:pw")])
        alice.ensure_path(self.root)
        alice.create(self.p("locked"), b"l", acl=[make_digest_acl("alice", "pw", read=True)])
        with self.assertRaises(NoAuthError):
            alice.set(self.p("locked"), b"x")
        root = self.client(auth_data=[("digest", "super:s3cret")])
        root.sync(self.p("locked"))  # alice may be connected to another member
        self.assertEqual(root.get(self.p("locked"))[0], b"l")
        root.set(self.p("locked"), b"by-super")
        root.set_acls(self.p("locked"), OPEN_ACL_UNSAFE)
        anon = self.client()
        anon.sync(self.p("locked"))  # root may be connected to another member
        self.assertEqual(anon.get(self.p("locked"))[0], b"by-super")
        wrong = self.client(auth_data=[("digest", "super:nope")])
        root.set_acls(self.p("locked"), [make_digest_acl("alice", "pw", read=True)])
        # Without a sync, wrong's member may still show the open ACL.
        wrong.sync(self.p("locked"))
        with self.assertRaises(NoAuthError):
            wrong.get(self.p("locked"))
