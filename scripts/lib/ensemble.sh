# Shared by the ensemble benchmark scripts (scale-ensemble-vs-zookeeper.sh,
# fleet-vs-zookeeper.sh); source it, do not run it. It starts an ensemble
# of zkd (from $ZKD) or Apache ZooKeeper 3.8 (Debian's zookeeper package)
# the same way for every script: 3 voters and $OBSERVERS (default 0)
# observers, clients on 127.0.0.1, no connection limit, admin server off,
# every four-letter word allowed. bin/zkbench must be built.

# prepare_bench PREFIX: sets GO and BENCH_DIR (default a fresh
# ${TMPDIR:-/var/tmp}/PREFIX.XXXXXX), builds bin/zkbench and, unless ZKD
# names one, bin/zkd (ZKD then points at it), and raises the soft
# descriptor limit to the hard one.
prepare_bench() {
	GO=${GO:-go}
	command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
	BENCH_DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/var/tmp}/$1.XXXXXX")}
	mkdir -p "$BENCH_DIR" bin
	"$GO" build -o bin/zkbench ./cmd/zkbench
	if [ -z "${ZKD:-}" ]; then
		"$GO" build -o bin/zkd ./cmd/zkd
		ZKD=$PWD/bin/zkd
	fi
	ulimit -Sn "$(ulimit -Hn)"
}

# free_ports N: N free loopback ports below the ephemeral range, so that
# none is taken by one of the sessions' outgoing connections.
free_ports() {
	python3 - "$1" <<-'PY'
		import random, socket, sys
		lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
		got = set()
		while len(got) < int(sys.argv[1]):
		    p = random.randint(10000, lo - 1)
		    s = socket.socket()
		    try:
		        s.bind(("127.0.0.1", p)); got.add(p)
		    except OSError:
		        pass
		    finally:
		        s.close()
		print(" ".join(map(str, got)))
	PY
}

# start_ensemble KIND DIR: 3 voters and OBSERVERS observers of KIND under
# DIR (member i in DIR/mi, its log in DIR/mi/server.log); sets MEMBERS,
# PIDS and ADDRS (voters first) and waits until every member serves.
start_ensemble() {
	local kind=$1 dir=$2 ports i j role
	MEMBERS=$((3 + ${OBSERVERS:-0}))
	read -ra ports <<<"$(free_ports $((3 * MEMBERS)))"
	PIDS=()
	ADDRS=()
	for i in $(seq 1 "$MEMBERS"); do
		mkdir -p "$dir/m$i/data"
		echo "$i" >"$dir/m$i/data/myid"
		{
			printf '%s\n' tickTime=2000 initLimit=10 syncLimit=5 "dataDir=$dir/m$i/data" \
				"clientPort=${ports[3 * (i - 1)]}" clientPortAddress=127.0.0.1 maxClientCnxns=0 \
				admin.enableServer=false '4lw.commands.whitelist=*'
			[ "$i" -gt 3 ] && echo peerType=observer
			for j in $(seq 1 "$MEMBERS"); do
				role=
				[ "$j" -gt 3 ] && role=:observer
				echo "server.$j=127.0.0.1:${ports[3 * (j - 1) + 1]}:${ports[3 * (j - 1) + 2]}$role;127.0.0.1:${ports[3 * (j - 1)]}"
			done
		} >"$dir/m$i/zoo.cfg"
		ADDRS+=("127.0.0.1:${ports[3 * (i - 1)]}")
	done
	for i in $(seq 1 "$MEMBERS"); do
		if [ "$kind" = zkd ]; then
			"$ZKD" "$dir/m$i/zoo.cfg" >"$dir/m$i/server.log" 2>&1 &
		else
			java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dzookeeper.jmx.log4j.disable=true \
				-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-codec.jar \
				org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/m$i/zoo.cfg" >"$dir/m$i/server.log" 2>&1 &
		fi
		PIDS+=($!)
	done
	for a in "${ADDRS[@]}"; do
		bin/zkbench -servers "$a" -workload wait -path / -timeout 120s >/dev/null
	done
}

stop_ensemble() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}

servers_csv() { local IFS=,; echo "${ADDRS[*]}"; }
pids_csv() { local IFS=,; echo "${PIDS[*]}"; }
