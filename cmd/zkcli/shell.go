package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkd/zkd/jute"
)

// Exit codes, as zkCli's ExitCode and CliException use them.
const (
	exitOK          = 0
	exitFailed      = 1
	exitCmdNotFound = 127
)

// cliError is a failed command as zkCli reports it: msg is printed on stderr
// and exit becomes the shell's exit code.
type cliError struct {
	msg  string
	exit int
}

// Error returns the message printed to the user.
func (e *cliError) Error() string { return e.msg }

// failf returns a cliError with exit code 1.
func failf(format string, args ...any) error {
	return &cliError{msg: fmt.Sprintf(format, args...), exit: exitFailed}
}

// lockedWriter serializes whole writes to one stream, so that watch events
// arriving on go-zk's goroutines never split a command's output line.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write writes p while holding the shared lock.
func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Shell is a zkCli-compatible command interpreter bound to one session at a
// time. Execute runs one line; the caller decides where lines come from (a
// terminal, a script on stdin, or the command line).
type Shell struct {
	out, err io.Writer
	outMu    sync.Mutex

	timeout time.Duration
	host    string
	sess    *Session
	sasl    *saslCreds // SASL credentials every session authenticates with; nil: none

	// The fields above and these belong to the goroutine running commands.
	history      map[int]string
	commandCount int
	exitCode     int
	quit         bool

	// mu guards what the session's event goroutines read too.
	mu struct {
		sync.Mutex
		printWatches bool
		// eventHook, if set, prints watch events instead of out (the
		// line editor uses it to keep the prompt intact).
		eventHook func(text string)
	}
}

// NewShell returns a shell writing command output to out and errors to errw;
// it is not connected until Connect.
func NewShell(out, errw io.Writer, timeout time.Duration) *Shell {
	sh := &Shell{timeout: timeout, history: map[int]string{}}
	sh.out = lockedWriter{&sh.outMu, out}
	sh.err = lockedWriter{&sh.outMu, errw}
	sh.mu.printWatches = true
	return sh
}

// Connect closes the current session, if alive, and starts one with host.
func (sh *Shell) Connect(host string) error {
	if sh.sess != nil && sh.sess.Alive() {
		sh.sess.Close()
	}
	sh.host = host
	s, err := Dial(host, sh.timeout, sh.printEvent, sh.sasl)
	if err != nil {
		return err
	}
	sh.sess = s
	return nil
}

// Close ends the session, if any.
func (sh *Shell) Close() {
	if sh.sess != nil {
		sh.sess.Close()
	}
}

// printEvent is the session's default watcher: it prints every delivered
// event while printwatches is on.
func (sh *Shell) printEvent(ev jute.WatcherEvent) {
	sh.mu.Lock()
	on, hook := sh.mu.printWatches, sh.mu.eventHook
	sh.mu.Unlock()
	if !on {
		return
	}
	text := formatEvent(ev)
	if hook != nil {
		hook(text)
		return
	}
	io.WriteString(sh.out, text)
}

// setEventHook installs or (with nil) removes the event printer override.
func (sh *Shell) setEventHook(f func(string)) {
	sh.mu.Lock()
	sh.mu.eventHook = f
	sh.mu.Unlock()
}

// Prompt returns zkCli's prompt: "[zk: host(STATE) N] ".
func (sh *Shell) Prompt() string {
	state := stateClosed
	if sh.sess != nil {
		state = sh.sess.State()
	}
	return fmt.Sprintf("[zk: %s(%s) %d] ", sh.host, state, sh.commandCount)
}

// ExitCode returns the exit code of the last command run.
func (sh *Shell) ExitCode() int { return sh.exitCode }

// Quit reports whether the quit command ran.
func (sh *Shell) Quit() bool { return sh.quit }

// Execute runs one line typed at the prompt or read from a script: blank
// lines are ignored, others are recorded in the history and run. (zkCli
// re-runs the previous command for a line of spaces; zkcli ignores it.)
func (sh *Shell) Execute(line string) {
	words := tokenize(line)
	if len(words) == 0 {
		return
	}
	sh.history[sh.commandCount] = line
	sh.Run(words)
	sh.commandCount++
}

// Run runs one command given as words, recording its exit code and printing
// its error, as zkCli's processCmd does.
func (sh *Shell) Run(words []string) {
	err := sh.dispatch(words)
	if sh.quit {
		return // zkCli exits with the status of the command before quit
	}
	if err == nil {
		sh.exitCode = exitOK
		return
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		ce = &cliError{msg: err.Error(), exit: exitFailed}
	}
	sh.exitCode = ce.exit
	fmt.Fprintln(sh.err, ce.msg)
}

// dispatch finds and runs a command. The shell commands (quit, redo,
// history, printwatches, connect) run without a live session; then, as in
// zkCli, every command but quit prints "Not connected" when the session is
// closed, and the others run only on a live session.
func (sh *Shell) dispatch(words []string) error {
	if len(words) == 0 {
		sh.usage()
		return failf("No command entered")
	}
	name := words[0]
	cmd, ok := commands[name]
	if !ok {
		sh.usage()
		return &cliError{msg: "Command not found: Command not found " + name, exit: exitCmdNotFound}
	}
	switch name {
	case "quit":
		sh.Close()
		sh.quit = true
		return nil
	case "redo":
		if len(words) >= 2 {
			if err := sh.redo(words[1]); err != nil {
				return err
			}
		}
	case "history":
		for i := sh.commandCount - 10; i <= sh.commandCount; i++ {
			if i >= 0 {
				fmt.Fprintf(sh.out, "%d - %s\n", i, sh.history[i])
			}
		}
	case "printwatches":
		sh.mu.Lock()
		if len(words) == 1 {
			state := "off"
			if sh.mu.printWatches {
				state = "on"
			}
			fmt.Fprintf(sh.out, "printwatches is %s\n", state)
		} else {
			sh.mu.printWatches = words[1] == "on"
		}
		sh.mu.Unlock()
	case "connect":
		host := sh.host
		if len(words) >= 2 {
			host = words[1]
		}
		if err := sh.Connect(host); err != nil {
			return failf("%v", err)
		}
	}
	if sh.sess == nil || !sh.sess.Alive() {
		fmt.Fprintln(sh.out, "Not connected")
		return nil
	}
	if cmd.run == nil {
		return nil
	}
	p, err := parseOpts(words, cmd.spec)
	if err != nil {
		return err
	}
	err = cmd.run(sh, p)
	if errors.Is(err, errNotConnected) {
		fmt.Fprintln(sh.out, "Not connected")
		return nil
	}
	return err
}

// redo re-runs history entry n, as zkCli's redo does.
func (sh *Shell) redo(arg string) error {
	n, err := strconv.ParseInt(arg, 0, 32)
	if err != nil {
		return failf("For input string: \"%s\"", arg)
	}
	i := int(n)
	if sh.commandCount <= i || i < 0 {
		return failf("Command index out of range")
	}
	line := sh.history[i]
	words := tokenize(line)
	if len(words) > 0 && words[0] == "redo" {
		return failf("No redoing redos")
	}
	sh.history[sh.commandCount] = line
	sh.Run(words)
	return nil
}

// usage prints the command list zkCli prints for an unknown command.
func (sh *Shell) usage() {
	var b strings.Builder
	b.WriteString("ZooKeeper -server host:port -client-configuration properties-file cmd args\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %s\n", n, commands[n].usage)
	}
	io.WriteString(sh.err, b.String())
}

// waitSession waits, at most the session timeout, for the first session to
// be established, so that its SyncConnected event comes before the first
// command's output, as it does in practice with zkCli.
func (sh *Shell) waitSession() {
	if sh.sess != nil {
		sh.sess.ready()
	}
}

// closeQuietly ends the session without reporting the Closed event: zkCli
// exits without closing at the end of a script or a one-shot command, but
// closing frees the session's ephemerals at once.
func (sh *Shell) closeQuietly() {
	if sh.sess == nil {
		return
	}
	sh.mu.Lock()
	sh.mu.printWatches = false
	sh.mu.Unlock()
	sh.sess.Close()
}

// children lists a znode's children for path completion; it returns nothing
// when the session is down or the node is gone. It does not set watches.
func (sh *Shell) children(path string) []string {
	if sh.sess == nil || sh.sess.State() != stateConnected {
		return nil
	}
	resp := &jute.GetChildrenResponse{}
	if err := sh.sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: path}, resp); err != nil {
		return nil
	}
	return resp.Children
}
