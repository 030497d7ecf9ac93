package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// subcommand runs `zkd version` and `zkd status [zoo.cfg]`; ok is false for
// any other arguments, which start the server.
func subcommand(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "version":
		if len(args) != 1 {
			return 0, false
		}
		fmt.Fprintf(stdout, "zkd %s (answers as ZooKeeper %s), %s %s/%s\n", version, zkVersion,
			runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0, true
	case "status":
		if len(args) > 2 {
			return 0, false
		}
		cfgPath := ""
		if len(args) == 2 {
			cfgPath = args[1]
		}
		return status(cfgPath, stdout, stderr), true
	}
	return 0, false
}

// status prints the member's mode as `zkServer.sh status` does: the client
// port and address found in the configuration, then the Mode line of srvr,
// or "Error contacting service. It is probably not running." and exit
// status 1.
func status(cfgPath string, stdout, stderr io.Writer) int {
	c := defaultZooCfg()
	c.DataDir = "zkd-data"
	if cfgPath != "" {
		var err error
		if c, err = parseZooCfg(cfgPath, os.Environ()); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintf(stderr, "Using config: %s\n", cfgPath)
	}
	_, _, sc, err := configs(c, zap.NewNop())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	host, port, err := net.SplitHostPort(sc.ClientAddr)
	if err != nil {
		fmt.Fprintln(stderr, "zkd: client address:", err)
		return 2
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	fmt.Fprintf(stdout, "Client port found: %s. Client address: %s. Client SSL: false.\n", port, host)
	mode, err := srvrMode(net.JoinHostPort(host, port), 5*time.Second)
	if err != nil {
		fmt.Fprintln(stdout, "Error contacting service. It is probably not running.")
		return 1
	}
	fmt.Fprintln(stdout, mode)
	return 0
}

// srvrMode sends srvr to addr and returns its "Mode: …" line.
func srvrMode(addr string, timeout time.Duration) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write([]byte("srvr")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		return "", err
	}
	for l := range strings.Lines(string(b)) {
		if strings.HasPrefix(l, "Mode: ") {
			return strings.TrimSpace(l), nil
		}
	}
	return "", fmt.Errorf("zkd: srvr on %s answered no mode: %s", addr, strconv.Quote(string(b)))
}
