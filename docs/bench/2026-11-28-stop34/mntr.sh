# mntr.sh, sourced by this folder's probes: mntr [PORT] prints the mntr
# four-letter word's answer of the server on 127.0.0.1:PORT (default 23181).
mntr() {
	/usr/bin/python3 - "${1:-23181}" <<'PY'
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'mntr')
b = b''
while True:
    d = s.recv(65536)
    if not d:
        break
    b += d
print(b.decode())
PY
}
