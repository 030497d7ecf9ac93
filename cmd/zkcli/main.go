// Command zkcli is a ZooKeeper shell compatible with zkCli.sh 3.8: the same
// commands, flags, output and error texts, against zkd or any ZooKeeper
// server.
//
//	zkcli [-server host:port[,host:port...]] [-timeout ms] [cmd args...]
//
// With a command it runs that one command and exits with its status (0 on
// success, 1 on failure, 127 for an unknown command). Otherwise it reads
// commands from the terminal with line editing and history, or, when stdin
// is not a terminal, from stdin as a script; the exit status is then that of
// the last command.
//
// The session is go-zk's (github.com/go-zookeeper/zk); requests are sent
// as raw Jute frames on go-zk's connection so that every opcode is
// available, including those go-zk lacks (addWatch, removeWatches,
// getEphemerals, getAllChildrenNumber, whoAmI).
//
// Where zkcli knowingly differs from zkCli.sh 3.8:
//   - the quota commands (setquota, listquota, delquota) are not provided;
//   - output that zkCli.sh prints from its event thread (watch events, the
//     first SyncConnected) is printed in a fixed order: before the output
//     of the command that triggered it, and before the first prompt or
//     command;
//   - addauth waits for the server's answer, so a refused credential ends
//     the session before the next command runs (zkCli.sh may still run
//     it and report AuthFailed for it);
//   - deleteall exits 1 when some node could not be deleted;
//   - a one-shot command or a script that ends without quit closes its
//     session, so its ephemeral nodes go at once rather than at timeout;
//   - a line of only spaces is ignored (zkCli.sh re-runs the previous
//     command);
//   - -r (read-only) is accepted and ignored; -client-configuration and
//     CLIENT_JVMFLAGS are read for TLS (zookeeper.client.secure,
//     zookeeper.ssl.*).
//
// SASL is configured as for zkCli.sh: a JAAS file named by
// -Djava.security.auth.login.config in CLIENT_JVMFLAGS (or JVMFLAGS) whose
// Client section (-Dzookeeper.sasl.clientconfig) has a DigestLoginModule
// with username and password, or a Krb5LoginModule with a keytab or a
// credential cache (the KDC found through -Djava.security.krb5.conf);
// every connection then authenticates by DIGEST-MD5 or GSSAPI before
// other requests go out. The GSSAPI server principal follows
// zookeeper.sasl.client.username, zookeeper.sasl.client.canonicalize.hostname,
// zookeeper.server.principal and zookeeper.server.realm as in ZooKeeper 3.8.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// version is printed by the version command.
const version = "zkd zkcli, compatible with ZooKeeper 3.8"

// options are the command-line flags, parsed as zkCli parses them.
type options struct {
	server  string
	timeout time.Duration
	cmd     []string // the one-shot command and its arguments, if any
	// clientConfig is -client-configuration: a Java client properties
	// file, read for its TLS keys (zookeeper.client.secure, zookeeper.ssl.*).
	clientConfig string
}

// parseArgs reads zkCli's flags: -server, -timeout (ms), -r (read-only,
// accepted and ignored: go-zk cannot ask for read-only sessions) and
// -client-configuration file (read by clientProps). The first
// argument not starting with "-" begins the one-shot command.
func parseArgs(args []string) (*options, error) {
	o := &options{server: "localhost:2181", timeout: 30 * time.Second}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-client-configuration":
			if i+1 < len(args) {
				o.clientConfig = args[i+1]
			}
			i++
			continue
		case "-server", "-timeout":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("Error: no argument found for option %s", a)
			}
			i++
			if a == "-server" {
				o.server = args[i]
				continue
			}
			ms, err := strconv.Atoi(args[i])
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("Error: invalid timeout %q", args[i])
			}
			o.timeout = time.Duration(ms) * time.Millisecond
			continue
		case "-r":
			continue
		}
		if len(a) > 0 && a[0] != '-' {
			o.cmd = args[i:]
			break
		}
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program, with its streams passed in; it returns the exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	props, err := clientProps(os.Environ(), o.clientConfig)
	if err == nil {
		clientTLS, err = tlsFromProps(props)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	sh := NewShell(stdout, stderr, o.timeout)
	creds, warning, err := saslFromEnv(os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	if warning != "" {
		fmt.Fprintln(stderr, warning)
	}
	if creds != nil {
		creds.errOut = stderr
	}
	sh.sasl = creds
	fmt.Fprintln(sh.out, "Connecting to "+o.server)
	release := holdEvents(sh)
	if err := sh.Connect(o.server); err != nil {
		release()
		fmt.Fprintln(sh.err, err)
		return exitFailed
	}
	if o.cmd != nil {
		release()
		sh.waitSession()
		sh.Run(o.cmd)
		sh.closeQuietly()
		return sh.ExitCode()
	}
	fmt.Fprintln(sh.out, "Welcome to ZooKeeper!")
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		fmt.Fprintln(sh.out, "JLine support is enabled")
		release()
		sh.waitSession()
		return interactive(sh, f)
	}
	fmt.Fprintln(sh.out, "JLine support is disabled")
	release()
	sh.waitSession()
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		sh.Execute(sc.Text())
		if sh.Quit() {
			return sh.ExitCode()
		}
	}
	sh.closeQuietly()
	return sh.ExitCode()
}

// holdEvents keeps the watch events of a session being opened until the
// returned release is called, so that the banner zkCli prints before its
// first event comes first however fast the server answers. Events after
// release print as they arrive, in order.
func holdEvents(sh *Shell) (release func()) {
	var (
		mu       sync.Mutex
		held     []string
		released bool
	)
	sh.setEventHook(func(text string) {
		mu.Lock()
		defer mu.Unlock()
		if released {
			io.WriteString(sh.out, text)
			return
		}
		held = append(held, text)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if released {
			return
		}
		released = true
		for _, text := range held {
			io.WriteString(sh.out, text)
		}
		held = nil
	}
}
