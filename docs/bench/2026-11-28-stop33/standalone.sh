# standalone.sh, sourced by this folder's probes: start_standalone BIN
# [FLAGS...] starts BIN (a zkd) with FLAGS on a fresh data directory, client
# port 23181, waits until it serves, and stops it and removes the directory
# at exit. Sets DIR (the directory), pid (the server's) and ZB (zkbench:
# $ZKBENCH, default /var/tmp/b32/zkbench).
ZB=${ZKBENCH:-/var/tmp/b32/zkbench}
start_standalone() {
	local bin=$1
	shift
	DIR=$(mktemp -d /var/tmp/probe.XXXXXX)
	printf '%s\n' tickTime=2000 "dataDir=$DIR/data" clientPort=23181 clientPortAddress=127.0.0.1 \
		maxClientCnxns=0 admin.enableServer=false '4lw.commands.whitelist=*' >"$DIR/zoo.cfg"
	"$bin" "$@" "$DIR/zoo.cfg" >"$DIR/log" 2>&1 &
	pid=$!
	trap 'kill $pid 2>/dev/null; wait; rm -rf $DIR' EXIT
	$ZB -servers 127.0.0.1:23181 -workload wait -path / -timeout 60s >/dev/null || exit 1
}
