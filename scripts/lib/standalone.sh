# Shared by the *-vs-zookeeper.sh benchmark scripts; source it, do not run
# it. It starts one standalone server, zkd or Apache ZooKeeper 3.8
# (Debian's zookeeper package), the same way for every script, so that
# their figures compare like with like.

# free_port prints a free TCP port on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_standalone KIND DIR PORT writes DIR/zoo.cfg (data in DIR/data,
# clients on 127.0.0.1:PORT, no connection limit, admin server off, every
# four-letter word allowed), starts a standalone server of KIND (zkd, run
# from $ZKD, or zookeeper) in the background with its output in
# DIR/server.log, sets STARTED_PID to its pid, and waits until it serves
# (bin/zkbench must be built).
start_standalone() {
	local kind=$1 dir=$2 port=$3
	mkdir -p "$dir/data"
	printf '%s\n' tickTime=2000 "dataDir=$dir/data" "clientPort=$port" clientPortAddress=127.0.0.1 \
		maxClientCnxns=0 admin.enableServer=false '4lw.commands.whitelist=*' >"$dir/zoo.cfg"
	case $kind in
	zkd) "$ZKD" "$dir/zoo.cfg" >"$dir/server.log" 2>&1 & ;;
	zookeeper)
		java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
			-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
			org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" >"$dir/server.log" 2>&1 &
		;;
	*)
		echo "start_standalone: unknown server kind $kind (zkd or zookeeper)" >&2
		return 1
		;;
	esac
	STARTED_PID=$!
	bin/zkbench -servers "127.0.0.1:$port" -workload wait -path / -timeout 120s >/dev/null
}
