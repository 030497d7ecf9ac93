#!/bin/bash
# sc.sh BIN WL C: syscalls per op of a standalone BIN under zkbench WL: perf stat of its
# read, write, futex, nanosleep and epoll_pwait calls and context switches for 3 s, and the
# server's packet counts (srvr) before and after.
BIN=$1 WL=$2 C=${3:-64}
. "$(dirname "$0")/standalone.sh"
start_standalone "$BIN"
$ZB -servers 127.0.0.1:23181 -workload $WL -clients $C -duration 8s -warmup 1s -size 1024 -client raw -json > $DIR/out.json &
bp=$!
sleep 2
m() { /usr/bin/python3 -c "
import socket;s=socket.create_connection(('127.0.0.1',23181));s.sendall(b'srvr');b=b''
while True:
  d=s.recv(65536)
  if not d: break
  b+=d
print([l for l in b.decode().splitlines() if 'Sent' in l or 'Received' in l])"; }
m; perf stat -e syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_pwait,context-switches -p $pid -o $DIR/strace.txt -- sleep 3; m
wait $bp
cat $DIR/strace.txt | head -20
