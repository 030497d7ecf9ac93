#!/usr/bin/env python3
# Records testdata/zk380_one_seed*.jsonl: start a fresh ZooKeeper 3.8.0 (empty
# dataDir, extendedTypesEnabled=true) on 127.0.0.1:PORT, then run
#   python3 zk380_record.py SEED OPS [PORT] > zk380_one_seedSEED.jsonl
# It drives one session over the raw jute protocol with a seeded random op
# mix and prints each op with the replies and watch events it got.
import socket, struct, sys
class Raw:
    def __init__(s, port=int(sys.argv[3]) if len(sys.argv) > 3 else 2181):
        s.sock = socket.create_connection(('127.0.0.1', port)); s.xid = 0; s.events = []
        body = struct.pack('>iqiq', 0, 0, 30000, 0) + struct.pack('>i', 16) + b'\0'*16
        s._send(body); s._recv()
    def _send(s, body): s.sock.sendall(struct.pack('>i', len(body)) + body)
    def _recvn(s, n):
        b = b''
        while len(b) < n:
            c = s.sock.recv(n - len(b))
            if not c: raise EOFError
            b += c
        return b
    def _recv(s):
        n, = struct.unpack('>i', s._recvn(4)); return s._recvn(n)
    @staticmethod
    def st(x): x = x.encode(); return struct.pack('>i', len(x)) + x
    @staticmethod
    def buf(x):
        if x is None: return struct.pack('>i', -1)
        return struct.pack('>i', len(x)) + x
    def req(s, op, body):
        s.xid += 1
        s._send(struct.pack('>ii', s.xid, op) + body)
        while True:
            r = s._recv()
            xid, zxid, err = struct.unpack('>iqi', r[:16])
            if xid == -1:
                t, state, plen = struct.unpack('>iii', r[16:28]); s.events.append((t, r[28:28+plen].decode())); continue
            return err, r[16:]
    def drain(s, wait=0.3):
        s.sock.settimeout(wait)
        try:
            while True:
                r = s._recv(); xid, zxid, err = struct.unpack('>iqi', r[:16])
                if xid == -1:
                    t, state, plen = struct.unpack('>iii', r[16:28]); s.events.append((t, r[28:28+plen].decode()))
        except (socket.timeout, TimeoutError): pass
        s.sock.settimeout(None)
        ev = s.events; s.events = []
        names = {1:'created',2:'deleted',3:'changed',4:'children'}
        return [names.get(t,t)+':'+p for t,p in ev]
    OPEN = struct.pack('>i', 1) + struct.pack('>i', 31) + st.__func__('world') + st.__func__('anyone')
    def create(s, path, data=b'', flags=0, acl=None):
        return s.req(1, s.st(path) + s.buf(data) + (acl or s.OPEN) + struct.pack('>i', flags))[0]
    def delete(s, path, v=-1): return s.req(2, s.st(path) + struct.pack('>i', v))[0]
    def set(s, path, data=b'x', v=-1): return s.req(5, s.st(path) + s.buf(data) + struct.pack('>i', v))[0]
    def get(s, path, watch=False): return s.req(4, s.st(path) + struct.pack('>?', watch))[0]
    def exists(s, path, watch=False): return s.req(3, s.st(path) + struct.pack('>?', watch))[0]
    def children(s, path, watch=False): return s.req(8, s.st(path) + struct.pack('>?', watch))[0]
    def addwatch(s, path, mode): return s.req(106, s.st(path) + struct.pack('>i', mode))[0]
    def auth(s, scheme, cred):
        s._send(struct.pack('>ii', -4, 100) + struct.pack('>i', 0) + s.st(scheme) + s.buf(cred)); 
    def removew(s, path, typ): return s.req(18, s.st(path) + struct.pack('>i', typ))[0]
    def checkw(s, path, typ): return s.req(17, s.st(path) + struct.pack('>i', typ))[0]
# Drives a real ZooKeeper 3.8.0 with a seeded random op sequence over one
# session and prints one JSON line per op with the server's answers.
import json, random

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
c = Raw()
# session id from the connect response is not kept by Raw; ask via create of an ephemeral later
def stat(b):
    return list(struct.unpack('>qqqqiiiqiiq', b[:68]))
def s(x): return Raw.st(x)
NAMES = ['a', 'b', 'c']
def rpath():
    r = rng.random()
    if r < 0.04: return rng.choice(['/a/', '//a', '/a/.', '/', '/zookeeper', 'a', '/a/../b'])
    depth = rng.choice([1, 1, 2, 2, 3])
    return '/' + '/'.join(rng.choice(NAMES) for _ in range(depth))
def data(): return rng.choice([None, b'', b'x', b'hello'])
ACLS = {'open': Raw.OPEN, 'read': struct.pack('>i', 1) + struct.pack('>i', 1) + s('world') + s('anyone'),
        'nocreate': struct.pack('>i', 1) + struct.pack('>i', 27) + s('world') + s('anyone'), 'empty': struct.pack('>i', 0)}
out = []
def emit(rec, events):
    rec['events'] = events
    print(json.dumps(rec))
def call(op, body):
    c.events = []
    err, r = c.req(op, body)
    names = {1:'created',2:'deleted',3:'changed',4:'children'}
    ev = [names.get(t, t) + ':' + p for t, p in c.events]
    return err, r, ev
def lastzxid():
    return c.lastzxid
# patch Raw.req to remember reply zxid
orig = Raw.req
def req(self, op, body):
    self.xid += 1
    self._send(struct.pack('>ii', self.xid, op) + body)
    while True:
        r = self._recv()
        xid, zxid, err = struct.unpack('>iqi', r[:16])
        if xid == -1:
            t, state, plen = struct.unpack('>iii', r[16:28]); self.events.append((t, r[28:28+plen].decode())); continue
        self.lastzxid = zxid
        return err, r[16:]
Raw.req = req
# learn the session id: create an ephemeral and read its owner
err, r, ev = call(15, s('/sess') + Raw.buf(b'') + Raw.OPEN + struct.pack('>i', 1))
z1 = c.lastzxid
st1 = stat(r[4+len('/sess'):])
sess = st1[7]
print(json.dumps({'op': 'session', 'id': sess}))
emit({'op': 'create', 'opcode': 15, 'path': '/sess', 'mode': 1, 'acl': 'open', 'data': '', 'zxid': z1, 'err': err, 'rpath': '/sess', 'stat': st1}, ev)
err, r, ev = call(2, s('/sess') + struct.pack('>i', -1))
emit({'op': 'delete', 'path': '/sess', 'version': -1, 'zxid': c.lastzxid, 'err': err}, ev)
for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 400):
    k = rng.random()
    p = rpath()
    if k < 0.30:
        mode = rng.choice([0, 0, 0, 1, 2, 3, 4])
        acl = rng.choice(['open'] * 8 + ['read', 'nocreate', 'empty'])
        d = data()
        op = 19 if mode == 4 else 15
        err, r, ev = call(op, s(p) + Raw.buf(d) + ACLS[acl] + struct.pack('>i', mode))
        rec = {'op': 'create', 'opcode': op, 'path': p, 'mode': mode, 'acl': acl, 'data': None if d is None else d.decode(), 'zxid': c.lastzxid, 'err': err}
        if err == 0:
            n, = struct.unpack('>i', r[:4]); rec['rpath'] = r[4:4+n].decode(); rec['stat'] = stat(r[4+n:])
        emit(rec, ev)
    elif k < 0.42:
        v = rng.choice([-1, -1, 0, 1])
        err, r, ev = call(2, s(p) + struct.pack('>i', v))
        emit({'op': 'delete', 'path': p, 'version': v, 'zxid': c.lastzxid, 'err': err}, ev)
    elif k < 0.54:
        v = rng.choice([-1, -1, 0, 1, 2]); d = data()
        err, r, ev = call(5, s(p) + Raw.buf(d) + struct.pack('>i', v))
        rec = {'op': 'set', 'path': p, 'version': v, 'data': None if d is None else d.decode(), 'zxid': c.lastzxid, 'err': err}
        if err == 0: rec['stat'] = stat(r)
        emit(rec, ev)
    elif k < 0.60:
        if p in ('/', '/zookeeper'): p = '/a'
        acl = rng.choice(['open', 'open', 'open', 'read', 'empty']); v = rng.choice([-1, -1, 0])
        err, r, ev = call(7, s(p) + ACLS[acl] + struct.pack('>i', v))
        rec = {'op': 'setacl', 'path': p, 'acl': acl, 'version': v, 'zxid': c.lastzxid, 'err': err}
        if err == 0: rec['stat'] = stat(r)
        emit(rec, ev)
    elif k < 0.70:
        w = rng.random() < 0.7
        err, r, ev = call(3, s(p) + struct.pack('>?', w))
        rec = {'op': 'exists', 'path': p, 'watch': w, 'err': err}
        if err == 0: rec['stat'] = stat(r)
        emit(rec, ev)
    elif k < 0.80:
        w = rng.random() < 0.7
        err, r, ev = call(4, s(p) + struct.pack('>?', w))
        rec = {'op': 'get', 'path': p, 'watch': w, 'err': err}
        if err == 0:
            n, = struct.unpack('>i', r[:4])
            rec['data'] = None if n < 0 else r[4:4+n].decode(); rec['stat'] = stat(r[4+max(n,0):])
        emit(rec, ev)
    elif k < 0.85:
        kind = rng.choice(['add', 'add', 'check', 'remove'])
        if kind == 'add':
            m = rng.choice([0, 1])
            err, r, ev = call(106, s(p) + struct.pack('>i', m))
            emit({'op': 'addwatch', 'path': p, 'mode': m, 'err': err}, ev)
        else:
            t = rng.choice([1, 2, 3])
            err, r, ev = call(17 if kind == 'check' else 18, s(p) + struct.pack('>i', t))
            emit({'op': kind + 'watches', 'path': p, 'mode': t, 'err': err}, ev)
    elif k < 0.92:
        w = rng.random() < 0.7
        err, r, ev = call(12, s(p) + struct.pack('>?', w))
        rec = {'op': 'children', 'path': p, 'watch': w, 'err': err}
        if err == 0:
            n, = struct.unpack('>i', r[:4]); off = 4; kids = []
            for _ in range(n):
                m, = struct.unpack('>i', r[off:off+4]); kids.append(r[off+4:off+4+m].decode()); off += 4 + m
            rec['children'] = sorted(kids); rec['stat'] = stat(r[off:])
        emit(rec, ev)
    else:
        ops = []; body = b''
        for j in range(rng.randint(1, 4)):
            q = rpath(); t = rng.choice([1, 15, 2, 5, 13])
            if t in (1, 15):
                mode = rng.choice([0, 0, 2, 1])
                body += struct.pack('>i?i', t, False, -1) + s(q) + Raw.buf(b'm') + Raw.OPEN + struct.pack('>i', mode)
                ops.append({'type': t, 'path': q, 'mode': mode})
            elif t == 2:
                body += struct.pack('>i?i', t, False, -1) + s(q) + struct.pack('>i', -1); ops.append({'type': t, 'path': q})
            elif t == 5:
                body += struct.pack('>i?i', t, False, -1) + s(q) + Raw.buf(b'mm') + struct.pack('>i', -1); ops.append({'type': t, 'path': q})
            else:
                v = rng.choice([-1, 0]); body += struct.pack('>i?i', t, False, -1) + s(q) + struct.pack('>i', v); ops.append({'type': t, 'path': q, 'version': v})
        body += struct.pack('>i?i', -1, True, -1)
        err, r, ev = call(14, body)
        res = []; off = 0
        while True:
            t, done, e = struct.unpack('>i?i', r[off:off+9]); off += 9
            if done: break
            if t == -1:
                code, = struct.unpack('>i', r[off:off+4]); off += 4; res.append({'type': -1, 'err': code})
            elif t == 1:
                n, = struct.unpack('>i', r[off:off+4]); res.append({'type': 1, 'path': r[off+4:off+4+n].decode()}); off += 4 + n
            elif t == 15:
                n, = struct.unpack('>i', r[off:off+4]); p2 = r[off+4:off+4+n].decode(); off += 4 + n
                res.append({'type': 15, 'path': p2, 'stat': stat(r[off:])}); off += 68
            elif t == 5:
                res.append({'type': 5, 'stat': stat(r[off:])}); off += 68
            else:
                res.append({'type': t})
        emit({'op': 'multi', 'ops': ops, 'zxid': c.lastzxid, 'err': err, 'results': res}, ev)
