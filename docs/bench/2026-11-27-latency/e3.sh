#!/bin/bash
# e3.sh BIN WL [CLIENTS] [D] [LOCKS]: 3 members of BIN (env passes through), zkbench WL over all three;
# prints ops/s, latency, CPU of each member (% of a core), and per-member fsyncs/s and avg packed writes.
BIN=$1 WL=$2 C=${3:-16} D=${4:-8s} LOCKS=${5:-4}
ZB=/var/tmp/b29/zkbench
DIR=$(mktemp -d /var/tmp/e3.XXXXXX); pids=()
for i in 1 2 3; do
	mkdir -p $DIR/$i/data; echo $i > $DIR/$i/data/myid
	cat > $DIR/$i/zoo.cfg <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$DIR/$i/data
clientPort=2518$i
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
server.1=127.0.0.1:25281:25381;127.0.0.1:25181
server.2=127.0.0.1:25282:25382;127.0.0.1:25182
server.3=127.0.0.1:25283:25383;127.0.0.1:25183
CFG
	$BIN $DIR/$i/zoo.cfg > $DIR/$i/log 2>&1 & pids+=($!)
done
trap 'kill ${pids[*]} 2>/dev/null; wait; rm -rf $DIR' EXIT
for i in 1 2 3; do $ZB -servers 127.0.0.1:2518$i -workload wait -path / -timeout 60s >/dev/null || exit 1; done
mntr() { python3 -c "
import socket,sys;s=socket.create_connection(('127.0.0.1',int(sys.argv[1])));s.sendall(b'mntr');d=b''
while True:
  b=s.recv(65536)
  if not b: break
  d+=b
print(d.decode())" $1; }
args=(-workload $WL -clients $C -duration $D -warmup 1s -size 1024 -json)
[ $WL = lock ] && args+=(-locks $LOCKS)
$ZB -servers 127.0.0.1:25181,127.0.0.1:25182,127.0.0.1:25183 "${args[@]}" > $DIR/out.json &
bp=$!
sleep 2.5
for i in 1 2 3; do mntr 2518$i > $DIR/m0.$i; done
for i in 0 1 2; do c0[$i]=$(awk '{print $14+$15}' /proc/${pids[$i]}/stat); done
t0=$(date +%s.%N); sleep 4
for i in 0 1 2; do c1[$i]=$(awk '{print $14+$15}' /proc/${pids[$i]}/stat); done
for i in 1 2 3; do mntr 2518$i > $DIR/m1.$i; done
t1=$(date +%s.%N)
wait $bp
python3 - "$DIR" "$t0" "$t1" "${c0[*]}" "${c1[*]}" "$BIN" "$WL" "$C" <<'PY'
import json,sys
d,t0,t1=sys.argv[1],float(sys.argv[2]),float(sys.argv[3]); dt=t1-t0
c0=[int(x) for x in sys.argv[4].split()]; c1=[int(x) for x in sys.argv[5].split()]
r=json.load(open(d+'/out.json'))
def m(f):
    out={}
    for l in open(f):
        p=l.rstrip('\n').split('\t')
        if len(p)==2:
            try: out[p[0]]=float(p[1])
            except: out[p[0]]=p[1]
    return out
parts=[]
for i in (1,2,3):
    a,b=m(f'{d}/m0.{i}'),m(f'{d}/m1.{i}')
    g=lambda k:b.get(k,0)-a.get(k,0)
    st=b.get('zk_server_state','?')[0]
    pk=g('zk_sum_packed_writes')/max(1,g('zk_cnt_packed_writes'))
    parts.append(f"{i}{st} cpu={100*(c1[i-1]-c0[i-1])/100/dt:3.0f}% fsync/s={g('zk_cnt_fsynctime')/dt:5.0f} packed={pk:4.1f}")
print(f"{sys.argv[6].split('/')[-1]:10} {sys.argv[7]:5} c={sys.argv[8]:3} ops/s={r['ops_per_sec']:7.0f} p50={r['latency_us']['p50']/1000:.2f} p99={r['latency_us']['p99']/1000:.2f} | "+' | '.join(parts))
PY
