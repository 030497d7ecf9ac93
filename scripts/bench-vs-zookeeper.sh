#!/usr/bin/env bash
# bench-vs-zookeeper.sh measures zkd and Apache ZooKeeper 3.8 (Debian's
# zookeeper package) side by side on this machine and prints each figure
# for both servers, their ratio (zkd / ZooKeeper) and each as a percentage
# of this machine's ceiling for such a server.
#
# Both servers run standalone with fsync on (ZooKeeper's forceSync default,
# a default JVM), on free loopback ports, with their data directories side
# by side under one directory (same disk). Every workload runs ROUNDS times,
# alternating which server goes first; the table shows the median round.
# Each round also measures the ceiling at the same CLIENTS (zkbench
# -workload ceiling): a minimal server and client answering at once (the
# limit of a read) and after a group-committed fdatasync in BENCH_DIR (the
# limit of a durable write). A write workload's ops/s are compared with the
# append ceiling in writes (create: 2 per op, the create and the delete;
# set: 1; lock: 2 per acquisition), get's with the answer ceiling.
# Then each server gets ZNODES znodes (RSS before and after, from ps -o rss)
# and is restarted, timing how long until a client can read the last one.
# ENSEMBLE=3 runs three members of each instead (same machine; the clients
# spread over them; RSS is the members' sum; restart restarts all and waits
# until every member serves the node).
#
# Knobs (environment): ROUNDS=3 DURATION=10s WARMUP=2s CLIENTS=16 SIZE=1024
# ZNODES=100000 FILL_SIZE=100 WORKLOADS="create set get lock:1 lock:$CLIENTS"
# (lock:L is the lock workload on L lock paths; L=CLIENTS is uncontended)
# CLIENT=gozk (the client of create, set and get: gozk, the go-zookeeper
# library, as its users see the servers; or raw, zkbench's minimal client,
# as lean as the ceiling's, to measure the servers rather than go-zk; lock
# always uses go-zk's recipe) SERVERS="zkd zookeeper" (each gets a column,
# and the first is compared with each other; zkdbase runs the binary
# ZKD_BASE_BIN, to compare a build with an earlier one) ENSEMBLE=1
# BENCH_DIR=<dir, default a fresh one in /var/tmp>
# KEEP=1 keeps BENCH_DIR and the raw JSON results.
set -euo pipefail
cd "$(dirname "$0")/.."
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-16}
SIZE=${SIZE:-1024}
ZNODES=${ZNODES:-100000}
FILL_SIZE=${FILL_SIZE:-100}
WORKLOADS=${WORKLOADS:-"create set get lock:1 lock:$CLIENTS"}
SERVERS=${SERVERS:-"zkd zookeeper"}
CLIENT=${CLIENT:-gozk}
case $CLIENT in
gozk | raw) ;;
*)
	echo "bench: CLIENT=$CLIENT: want gozk or raw" >&2
	exit 2
	;;
esac
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
BENCH_DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/var/tmp}/zkd-bench.XXXXXX")}
mkdir -p "$BENCH_DIR" bin

log() { echo "bench: $*" >&2; }

KNOBS="ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP CLIENTS=$CLIENTS SIZE=$SIZE ZNODES=$ZNODES FILL_SIZE=$FILL_SIZE"
KNOBS+=" WORKLOADS=\"$WORKLOADS\" CLIENT=$CLIENT SERVERS=\"$SERVERS\" ENSEMBLE=${ENSEMBLE:-1} BENCH_DIR=$BENCH_DIR"
log "$KNOBS"
log "load average at the start: $LOAD_START"

"$GO" build -o bin/zkbench ./cmd/zkbench
ZKBENCH=$PWD/bin/zkbench
if [[ " $SERVERS " == *" zkd "* ]]; then
	"$GO" build -o bin/zkd ./cmd/zkd
fi
if [[ " $SERVERS " == *" zkdbase "* ]] && [ ! -x "${ZKD_BASE_BIN:-}" ]; then
	echo "bench: SERVERS has zkdbase: set ZKD_BASE_BIN to the zkd binary to compare with" >&2
	exit 1
fi
if [[ " $SERVERS " == *" zookeeper "* ]] && [ ! -f /usr/share/java/zookeeper.jar ]; then
	echo "bench: ZooKeeper 3.8 is not installed: sudo apt-get install -y zookeeper" >&2
	exit 1
fi

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Each server kind runs MEMBERS members; member i of kind s has client port
# CPORT[s.i], quorum and election ports QPORT/EPORT[s.i], and pid PID[s.i].
MEMBERS=${ENSEMBLE:-1}
declare -A CPORT QPORT EPORT PID
RESULTS=$BENCH_DIR/results.jsonl
: >"$RESULTS"

members() { seq 1 "$MEMBERS"; }

# addrs SERVER: the client address list of all its members.
addrs() {
	local s=$1 i out=()
	for i in $(members); do out+=("127.0.0.1:${CPORT[$s.$i]}"); done
	(IFS=,; echo "${out[*]}")
}

cleanup() {
	local k
	for k in "${!PID[@]}"; do
		if [ -n "${PID[$k]}" ] && kill -0 "${PID[$k]}" 2>/dev/null; then
			kill -TERM "${PID[$k]}" 2>/dev/null || true
			wait "${PID[$k]}" 2>/dev/null || true
		fi
	done
	if [ "${KEEP:-0}" = 1 ]; then
		log "kept $BENCH_DIR"
	else
		rm -rf "$BENCH_DIR"
	fi
}
trap cleanup EXIT

# write_cfg SERVER MEMBER: the same zoo.cfg for both kinds, apart from paths
# and ports.
write_cfg() {
	local s=$1 i=$2 dir=$BENCH_DIR/$1/$2 j
	mkdir -p "$dir/data"
	cat >"$dir/zoo.cfg" <<-EOF
		tickTime=2000
		initLimit=10
		syncLimit=5
		dataDir=$dir/data
		clientPort=${CPORT[$s.$i]}
		clientPortAddress=127.0.0.1
		maxClientCnxns=0
		admin.enableServer=false
		4lw.commands.whitelist=*
	EOF
	if [ "$MEMBERS" -gt 1 ]; then
		echo "$i" >"$dir/data/myid"
		for j in $(members); do
			echo "server.$j=127.0.0.1:${QPORT[$s.$j]}:${EPORT[$s.$j]};127.0.0.1:${CPORT[$s.$j]}" >>"$dir/zoo.cfg"
		done
	fi
}

# start SERVER MEMBER: launch in the background; PID is the server itself.
start() {
	local s=$1 i=$2 dir=$BENCH_DIR/$1/$2 main=org.apache.zookeeper.server.ZooKeeperServerMain
	[ "$MEMBERS" -gt 1 ] && main=org.apache.zookeeper.server.quorum.QuorumPeerMain
	case $s in
	zkd)
		bin/zkd "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 &
		;;
	zkdbase)
		"$ZKD_BASE_BIN" "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 &
		;;
	zookeeper)
		java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
			-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
			"$main" "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 &
		;;
	esac
	PID[$s.$i]=$!
}

start_all() { local i; for i in $(members); do start "$1" "$i"; done; }

# wait_readable SERVER PATH: block until PATH can be read through every
# member (120 s at most each).
wait_readable() {
	local s=$1 i
	for i in $(members); do
		if ! "$ZKBENCH" -servers "127.0.0.1:${CPORT[$s.$i]}" -workload wait -path "$2" -timeout 120s >/dev/null; then
			log "$s member $i did not serve $2; its log:"
			tail -n 40 "$BENCH_DIR/$s/$i/server.log" >&2
			exit 1
		fi
	done
}

stop_all() {
	local s=$1 i
	for i in $(members); do kill -TERM "${PID[$s.$i]}"; done
	for i in $(members); do
		wait "${PID[$s.$i]}" 2>/dev/null || true
		PID[$s.$i]=
	done
}

# rss_kb SERVER: resident memory of all its members, in KiB.
rss_kb() {
	local s=$1 i total=0
	for i in $(members); do total=$((total + $(ps -o rss= -p "${PID[$s.$i]}" | tr -d ' '))); done
	echo "$total"
}

now() { date +%s.%N; }

for s in $SERVERS; do
	for i in $(members); do
		CPORT[$s.$i]=$(free_port)
		QPORT[$s.$i]=$(free_port)
		EPORT[$s.$i]=$(free_port)
	done
	for i in $(members); do write_cfg "$s" "$i"; done
	start_all "$s"
	wait_readable "$s" /zookeeper
	log "$s up on $(addrs "$s")"
done

# record SERVER JSON-LINE: tag a zkbench result with its server.
record() { python3 -c 'import json,sys; r=json.loads(sys.argv[2]); r["server"]=sys.argv[1]; print(json.dumps(r))' "$1" "$2" >>"$RESULTS"; }

order=($SERVERS)
for ((round = 1; round <= ROUNDS; round++)); do
	# The machine's ceiling at the same load, data on the servers' disk.
	for mode in append answer; do
		log "round $round/$ROUNDS ceiling $mode"
		record ceiling "$("$ZKBENCH" -workload ceiling -ceiling "$mode" -ceiling-dir "$BENCH_DIR" -clients "$CLIENTS" \
			-duration "$DURATION" -warmup "$WARMUP" -json)"
	done
	for w in $WORKLOADS; do
		name=${w%%:*}
		args=(-workload "$name" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP" -size "$SIZE" -json)
		case $name in
		create | set | get) args+=(-client "$CLIENT") ;;
		lock)
			args+=(-locks "${w#lock:}")
			[ "$w" = lock ] && args[-1]=1
			;;
		esac
		for s in "${order[@]}"; do
			log "round $round/$ROUNDS $w on $s"
			record "$s" "$("$ZKBENCH" -servers "$(addrs "$s")" "${args[@]}")"
		done
	done
	order=($(printf '%s\n' "${order[@]}" | tac)) # alternate who goes first
done

# Memory with ZNODES znodes, then restart time with them.
last=$(printf '/zkbench-fill/n%08d' $((ZNODES - 1)))
for s in $SERVERS; do
	before=$(rss_kb "$s")
	log "$s: creating $ZNODES znodes of $FILL_SIZE bytes"
	fill=$("$ZKBENCH" -servers "$(addrs "$s")" -workload fill -count "$ZNODES" -size "$FILL_SIZE" -clients "$CLIENTS" -json)
	after=$(rss_kb "$s")
	stop_all "$s"
	t0=$(now)
	start_all "$s"
	wait_readable "$s" "$last"
	t1=$(now)
	restarted=$(rss_kb "$s")
	python3 -c 'import json,sys
f=json.loads(sys.argv[2])
print(json.dumps({"server":sys.argv[1],"workload":"znodes","rss_before_kb":int(sys.argv[3]),"rss_after_kb":int(sys.argv[4]),
 "rss_restarted_kb":int(sys.argv[5]),"restart_s":float(sys.argv[7])-float(sys.argv[6]),"fill_per_sec":f["ops_per_sec"]}))' \
		"$s" "$fill" "$before" "$after" "$restarted" "$t0" "$t1" >>"$RESULTS"
done

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average at the end: $LOAD_END"

echo "knobs: $KNOBS"
echo "load average (1, 5, 15 min) on $(nproc) CPUs: $LOAD_START at the start, $LOAD_END at the end"
echo
python3 - "$RESULTS" "$ZNODES" $SERVERS <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
znodes = int(sys.argv[2])
# Every server gets a column; the first is compared with each of the others.
servers = sys.argv[3:]
first, others = servers[0], servers[1:]
# The ceiling each workload is compared with, and its writes (or reads) per op.
per_op = {"create": ("append", 2), "set": ("append", 1), "lock": ("append", 2),
          "get": ("answer", 1), "token": ("answer", 1)}

def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"

def pct(a, b):
    return f"{100 * a / b:.1f}%" if a is not None and b else "-"

def fmt(v, unit=""):
    if v is None:
        return "-"
    return f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v:,}{unit}"

def median(rs, f):
    return statistics.median(f(r) for r in rs) if rs else None

ops = lambda r: r["ops_per_sec"]
quantiles = (("p50 ms", lambda r: r["latency_us"]["p50"] / 1000),
             ("p99 ms", lambda r: r["latency_us"]["p99"] / 1000),
             ("p999 ms", lambda r: r["latency_us"]["p999"] / 1000))

bench, ceiling = {}, {}
for r in rows:
    if r["workload"] == "znodes":
        continue
    if r["server"] == "ceiling":
        ceiling.setdefault(r["workload"].removeprefix("ceiling-"), []).append(r)
        continue
    key = r["workload"] + (f" locks={r['locks']}" if r["workload"] == "lock" else "")
    key += f" ({r.get('client', 'gozk')})"
    bench.setdefault(key, {}).setdefault(r["server"], []).append(r)

blank = [""] * (len(servers) + len(others))
head = ["figure"] + servers + [f"{first}/{o}" for o in others] + ["ceiling"] + [f"{s} % of ceiling" for s in servers]
lines = [tuple(head)]
for mode, what in (("append", "durable writes"), ("answer", "reads")):
    rs = ceiling.get(mode, [])
    lines.append(tuple([f"ceiling {mode} ops/s ({what})"] + blank + [fmt(median(rs, ops))] + [""] * len(servers)))
    for label, f in quantiles[:2]:
        lines.append(tuple([f"ceiling {mode} {label}"] + blank + [fmt(median(rs, f))] + [""] * len(servers)))
for key, by in bench.items():
    mode, n = per_op.get(key.split()[0], (None, 1))
    c = median(ceiling.get(mode, []), ops)
    c = c / n if c is not None else None
    v = [median(by.get(s, []), ops) for s in servers]
    lines.append(tuple([f"{key} ops/s"] + [fmt(x) for x in v] + [ratio(v[0], x) for x in v[1:]] + [fmt(c)] + [pct(x, c) for x in v]))
    for label, f in quantiles:
        v = [median(by.get(s, []), f) for s in servers]
        lines.append(tuple([f"{key} {label}"] + [fmt(x) for x in v] + [ratio(v[0], x) for x in v[1:]] + [""] * (1 + len(servers))))
    errs = [sum(r["errors"] for r in by.get(s, [])) for s in servers]
    if any(errs):
        lines.append(tuple([f"{key} errors"] + [fmt(e) for e in errs] + [""] * (len(others) + 1 + len(servers))))
mem = {r["server"]: r for r in rows if r["workload"] == "znodes"}
def m(s, k, scale=1.0):
    return mem[s][k] / scale if s in mem else None
for label, k, scale in (("RSS before fill MiB", "rss_before_kb", 1024.0),
                        (f"RSS with {znodes:,} znodes MiB", "rss_after_kb", 1024.0),
                        ("RSS after restart MiB", "rss_restarted_kb", 1024.0),
                        (f"restart with {znodes:,} znodes s", "restart_s", 1.0),
                        ("fill creates/s", "fill_per_sec", 1.0)):
    v = [m(s, k, scale) for s in servers]
    lines.append(tuple([label] + [fmt(x) for x in v] + [ratio(v[0], x) for x in v[1:]] + [""] * (1 + len(servers))))
w = [max(len(l[i]) for l in lines) for i in range(len(lines[0]))]
for i, l in enumerate(lines):
    print("  ".join([f"{l[0]:<{w[0]}}"] + [f"{v:>{x}}" for v, x in zip(l[1:], w[1:])]).rstrip())
    if i == 0:
        print("  ".join("-" * x for x in w))
print("""
ceiling: zkbench -workload ceiling, a minimal server and client at the same clients; append answers
after a group-committed fdatasync on the servers' disk, answer at once. On an ops/s row the ceiling
is in that workload's ops: the append ceiling over the writes per op (create 2, the create and the
delete; set 1; lock 2 per acquisition), or the answer ceiling for get. % of ceiling is the median
ops/s over it.""")
EOF
