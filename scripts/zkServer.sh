#!/usr/bin/env bash
# zkServer.sh for zkd: the commands and arguments of ZooKeeper 3.8's
# bin/zkServer.sh, so that scripts and runbooks written for it work with
# zkd unchanged:
#
#   zkServer.sh [--config <conf-dir>] {start|start-foreground|stop|version|restart|status|print-cmd} [zoo.cfg]
#
# The configuration is $ZOOCFGDIR/zoo.cfg (ZOOCFGDIR defaults to ../conf
# beside this script, --config overrides it); a second argument names
# another file in that directory, or any path. The pid file is
# $ZOOPIDFILE, default <dataDir>/zookeeper_server.pid. The log goes to
# $ZOO_LOG_DIR/zkd.log (default ../logs beside this script), rotated by
# zkd; start sends zkd's stdout and stderr to
# $ZOO_LOG_DIR/zookeeper-$USER-server-$HOSTNAME.out, as ZooKeeper's does.
# The zkd binary is $ZKD_BIN, else zkd beside this script, else zkd on
# PATH. SERVER_JVMFLAGS may carry -Dzookeeper.* properties, which zkd
# reads as zoo.cfg keys.

ZOOBIN="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ "$1" = "--config" ]; then
  shift
  ZOOCFGDIR="$1"
  shift
fi
ZOOCFGDIR="${ZOOCFGDIR:-$ZOOBIN/../conf}"
export ZOOCFGDIR # restart runs this script again
ZOOCFG="$ZOOCFGDIR/zoo.cfg"
if [ -n "$2" ]; then
  ZOOCFG="$ZOOCFGDIR/$2"
  # A path with a directory of its own is taken as it is.
  if [ "$(dirname "$ZOOCFG")" != "$ZOOCFGDIR" ]; then
    ZOOCFG="$2"
  fi
fi

if [ -n "$ZKD_BIN" ]; then
  ZKD="$ZKD_BIN"
elif [ -x "$ZOOBIN/zkd" ]; then
  ZKD="$ZOOBIN/zkd"
else
  ZKD="$(command -v zkd)"
fi
if [ -z "$ZKD" ] || [ ! -x "$ZKD" ]; then
  echo "zkd binary not found: set ZKD_BIN, or put zkd beside $0 or on PATH" >&2
  exit 1
fi

ZOO_LOG_DIR="${ZOO_LOG_DIR:-$ZOOBIN/../logs}"
export ZOO_LOG_DIR
if [ "$1" != "version" ] && [ "$1" != "status" ]; then
  echo "Using config: $ZOOCFG" >&2
fi

ZOO_DATADIR="$(grep "^[[:space:]]*dataDir" "$ZOOCFG" 2>/dev/null | sed -e 's/.*=//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')"
if [ -z "$ZOOPIDFILE" ]; then
  if [ -n "$ZOO_DATADIR" ] && [ ! -d "$ZOO_DATADIR" ]; then
    mkdir -p "$ZOO_DATADIR"
  fi
  ZOOPIDFILE="${ZOO_DATADIR:-.}/zookeeper_server.pid"
else
  mkdir -p "$(dirname "$ZOOPIDFILE")"
fi
mkdir -p "$ZOO_LOG_DIR"
_ZOO_DAEMON_OUT="$ZOO_LOG_DIR/zookeeper-$USER-server-$HOSTNAME.out"

# SERVER_JVMFLAGS -D properties reach zkd through its environment, as zkd
# reads them from there like zoo.cfg keys.
export SERVER_JVMFLAGS

case $1 in
start)
  echo -n "Starting zookeeper ... "
  if [ -f "$ZOOPIDFILE" ] && kill -0 "$(cat "$ZOOPIDFILE")" >/dev/null 2>&1; then
    echo "zookeeper already running as process $(cat "$ZOOPIDFILE")."
    exit 1
  fi
  nohup "$ZKD" "$ZOOCFG" >"$_ZOO_DAEMON_OUT" 2>&1 </dev/null &
  pid=$!
  if ! echo -n "$pid" >"$ZOOPIDFILE"; then
    echo FAILED TO WRITE PID
    exit 1
  fi
  sleep 1
  if ps -p "$pid" >/dev/null 2>&1; then
    echo STARTED
  else
    echo FAILED TO START
    exit 1
  fi
  ;;
start-foreground)
  if [ -n "$ZOO_NOEXEC" ]; then
    "$ZKD" "$ZOOCFG"
  else
    exec "$ZKD" "$ZOOCFG"
  fi
  ;;
print-cmd)
  echo "\"$ZKD\" \"$ZOOCFG\" > \"$_ZOO_DAEMON_OUT\" 2>&1 < /dev/null"
  ;;
stop)
  echo -n "Stopping zookeeper ... "
  if [ ! -f "$ZOOPIDFILE" ]; then
    echo "no zookeeper to stop (could not find file $ZOOPIDFILE)"
  else
    pid="$(cat "$ZOOPIDFILE")"
    kill "$pid" 2>/dev/null
    rm "$ZOOPIDFILE"
    # zkd snapshots at shutdown: wait (up to a minute) so that a restart
    # finds the port and the data directory free.
    for _ in $(seq 600); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    echo STOPPED
  fi
  exit 0
  ;;
version)
  "$ZKD" version
  ;;
restart)
  shift
  "$0" stop "$@"
  sleep 1
  "$0" start "$@"
  ;;
status)
  exec "$ZKD" status "$ZOOCFG"
  ;;
*)
  echo "Usage: $0 [--config <conf-dir>] {start|start-foreground|stop|version|restart|status|print-cmd}" >&2
  ;;
esac
