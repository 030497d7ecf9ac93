#!/bin/bash
# mntr.sh BIN WL C: a fresh standalone BIN, zkbench WL for 5 s; mntr before and after: fsyncs and entries per second, requests per entry.
BIN=$1 WL=$2 C=${3:-64}
. "$(dirname "$0")/standalone.sh"
start_standalone "$BIN"
m() { /usr/bin/python3 -c "
import socket;s=socket.create_connection(('127.0.0.1',23181));s.sendall(b'mntr');b=b''
while True:
  d=s.recv(65536)
  if not d: break
  b+=d
print(b.decode())"; }
$ZB -servers 127.0.0.1:23181 -workload $WL -clients $C -duration 6s -warmup 1s -size 1024 -client raw -json > $DIR/out.json &
bp=$!
sleep 2; m > $DIR/m0; sleep 3; m > $DIR/m1
wait $bp
python3 - $DIR/m0 $DIR/m1 $DIR/out.json <<'PY'
import sys,json
def rd(f): return {l.split('\t')[0]:l.split('\t')[1] for l in open(f) if '\t' in l}
a,b=rd(sys.argv[1]),rd(sys.argv[2])
for k in sorted(b):
    try:
        d=float(b[k])-float(a[k])
    except: continue
    if d and any(x in k for x in ('sync','append','batch','entr','propos','wal')): print(k, d/3, '/s')
r=json.load(open(sys.argv[3])); print('ops/s', int(r['ops_per_sec']))
PY
