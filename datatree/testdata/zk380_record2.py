#!/usr/bin/env python3
# Records testdata/zk380_two_seed*.jsonl: two sessions against a fresh
# ZooKeeper 3.8.0 on 127.0.0.1:PORT, A anonymous and B authenticated as
# digest alice:pw, with ACLs that hide nodes from A, ephemerals of both, and
# B's session closed and reopened now and then. Each line is one op with
# its replies and the watch events each connection got.
#   python3 zk380_record2.py SEED OPS PORT > zk380_two_seedSEED.jsonl
import json, random, select, socket, struct, sys

PORT = int(sys.argv[3]) if len(sys.argv) > 3 else 2181
NAMES = {1: 'created', 2: 'deleted', 3: 'changed', 4: 'children'}


def st(x):
    x = x.encode()
    return struct.pack('>i', len(x)) + x


def buf(x):
    return struct.pack('>i', -1) if x is None else struct.pack('>i', len(x)) + x


def acl1(perms, scheme, ident):
    return struct.pack('>ii', 1, perms) + st(scheme) + st(ident)


ACLS = {'open': acl1(31, 'world', 'anyone'), 'creator': acl1(31, 'auth', ''),
        'alice_read_world': struct.pack('>i', 2) + struct.pack('>i', 31) + st('auth') + st('') + struct.pack('>i', 1) + st('world') + st('anyone')}


class Conn:
    def __init__(self):
        self.sock = socket.create_connection(('127.0.0.1', PORT))
        self.xid = 0
        self.events = []
        self.send(struct.pack('>iqiq', 0, 0, 30000, 0) + buf(b'\0' * 16))
        r = self.recv()
        self.session = struct.unpack('>iiq', r[:16])[2]
        self.zxid = 0

    def send(self, body):
        self.sock.sendall(struct.pack('>i', len(body)) + body)

    def recvn(self, n):
        b = b''
        while len(b) < n:
            c = self.sock.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b

    def recv(self):
        n, = struct.unpack('>i', self.recvn(4))
        return self.recvn(n)

    def frame(self):
        r = self.recv()
        xid, zxid, err = struct.unpack('>iqi', r[:16])
        if xid == -1:
            t, _, n = struct.unpack('>iii', r[16:28])
            self.events.append(NAMES.get(t, str(t)) + ':' + r[28:28 + n].decode())
            return None
        return xid, zxid, err, r[16:]

    def req(self, op, body, xid=None):
        if xid is None:
            self.xid += 1
            xid = self.xid
        self.send(struct.pack('>ii', xid, op) + body)
        while True:
            f = self.frame()
            if f and f[0] == xid:
                self.zxid = f[1]
                return f[2], f[3]

    def drain(self):
        while select.select([self.sock], [], [], 0.03)[0]:
            self.frame()
        ev, self.events = self.events, []
        return ev


def stat(b):
    return list(struct.unpack('>qqqqiiiqiiq', b[:68]))


rng = random.Random(int(sys.argv[1]))
conns = {'A': Conn(), 'B': Conn()}
conns['B'].req(100, struct.pack('>i', 0) + st('digest') + buf(b'alice:pw'), xid=-4)
for k, c in conns.items():
    print(json.dumps({'op': 'session', 'conn': k, 'id': c.session}))


def rpath():
    return '/' + '/'.join(rng.choice('ab') for _ in range(rng.choice([1, 1, 2, 2, 3])))


for _ in range(int(sys.argv[2])):
    who = rng.choice('AB')
    c = conns[who]
    p = rpath()
    k = rng.random()
    rec = {'conn': who, 'path': p}
    if k < 0.03 and who == 'B':
        err, _ = c.req(-11, b'')
        rec.update(op='close', zxid=c.zxid, err=err)
        c.sock.close()
        rec['events'] = {'A': conns['A'].drain(), 'B': []}
        conns['B'] = Conn()
        conns['B'].req(100, struct.pack('>i', 0) + st('digest') + buf(b'alice:pw'), xid=-4)
        rec['newsession'] = conns['B'].session
        print(json.dumps(rec))
        continue
    if k < 0.33:
        mode = rng.choice([0, 0, 1, 2, 3])
        acl = rng.choice(['open', 'open', 'creator', 'alice_read_world'])
        err, r = c.req(15, st(p) + buf(b'd') + ACLS[acl] + struct.pack('>i', mode))
        rec.update(op='create', mode=mode, acl=acl, zxid=c.zxid, err=err)
        if err == 0:
            n, = struct.unpack('>i', r[:4])
            rec['rpath'] = r[4:4 + n].decode()
            rec['stat'] = stat(r[4 + n:])
    elif k < 0.45:
        err, _ = c.req(2, st(p) + struct.pack('>i', -1))
        rec.update(op='delete', zxid=c.zxid, err=err)
    elif k < 0.60:
        err, r = c.req(5, st(p) + buf(b'v') + struct.pack('>i', -1))
        rec.update(op='set', zxid=c.zxid, err=err)
        if err == 0:
            rec['stat'] = stat(r)
    elif k < 0.66:
        acl = rng.choice(['open', 'creator', 'alice_read_world'])
        err, r = c.req(7, st(p) + ACLS[acl] + struct.pack('>i', -1))
        rec.update(op='setacl', acl=acl, zxid=c.zxid, err=err)
    elif k < 0.76:
        err, r = c.req(4, st(p) + struct.pack('>?', True))
        rec.update(op='get', err=err)
    elif k < 0.84:
        err, r = c.req(3, st(p) + struct.pack('>?', True))
        rec.update(op='exists', err=err)
    elif k < 0.92:
        err, r = c.req(8, st(p) + struct.pack('>?', True))
        rec.update(op='children', err=err)
    else:
        m = rng.choice([0, 1])
        err, _ = c.req(106, st(p) + struct.pack('>i', m))
        rec.update(op='addwatch', mode=m, err=err)
    rec['events'] = {w: conns[w].drain() for w in 'AB'}
    print(json.dumps(rec))
