package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// makeRaw puts the terminal in a raw input mode (no echo, no line
// buffering, no signals from keys) and returns the previous settings.
// Output processing stays on, so "\n" still moves to the line start.
func makeRaw(fd int) (*unix.Termios, error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return old, nil
}

// restoreTerm puts back settings saved by makeRaw.
func restoreTerm(fd int, t *unix.Termios) {
	unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// editor is a small line editor for the interactive shell: emacs-style
// cursor keys (arrows, Home/End, Ctrl-A/E/B/F/K/U/W/L), history (up/down,
// Ctrl-P/N) and completion of command names and znode paths with Tab. Lines the shell prints
// while the user is typing (watch events) appear above the line being
// edited.
type editor struct {
	fd  int
	in  *bufio.Reader
	out io.Writer

	history []string

	// paths, if set, returns the children of a znode for completion.
	paths func(parent string) []string

	mu      sync.Mutex // guards the fields below and writes to out
	editing bool
	prompt  string
	buf     []rune
	pos     int
}

// newEditor returns an editor reading keys from in and drawing on out.
func newEditor(in *os.File, out io.Writer) *editor {
	return &editor{fd: int(in.Fd()), in: bufio.NewReader(in), out: out}
}

// addHistory appends a line to the history, skipping repeats.
func (e *editor) addHistory(line string) {
	if line == "" || (len(e.history) > 0 && e.history[len(e.history)-1] == line) {
		return
	}
	e.history = append(e.history, line)
}

// printAbove prints text (which ends in a newline) above the line being
// edited and redraws it; when not editing it just prints.
func (e *editor) printAbove(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.editing {
		io.WriteString(e.out, text)
		return
	}
	io.WriteString(e.out, "\r\x1b[K"+text)
	e.redrawLocked()
}

// redrawLocked draws the prompt and buffer and places the cursor.
func (e *editor) redrawLocked() {
	s := "\r" + e.prompt + string(e.buf) + "\x1b[K"
	if back := len(e.buf) - e.pos; back > 0 {
		s += fmt.Sprintf("\x1b[%dD", back)
	}
	io.WriteString(e.out, s)
}

// edit runs f on the line state with the lock held and redraws.
func (e *editor) edit(f func()) {
	e.mu.Lock()
	f()
	e.redrawLocked()
	e.mu.Unlock()
}

// readLine shows prompt and returns the line the user enters, or io.EOF
// when they press Ctrl-D on an empty line or input ends.
func (e *editor) readLine(prompt string) (string, error) {
	old, err := makeRaw(e.fd)
	if err != nil {
		return "", err
	}
	defer restoreTerm(e.fd, old)

	e.mu.Lock()
	e.editing, e.prompt, e.buf, e.pos = true, prompt, nil, 0
	e.redrawLocked()
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.editing = false
		e.mu.Unlock()
	}()

	hist := len(e.history) // index into history; len means the new line
	var saved []rune       // the new line while browsing history
	browse := func(to int) {
		if to < 0 || to > len(e.history) || to == hist {
			return
		}
		e.edit(func() {
			if hist == len(e.history) {
				saved = append([]rune(nil), e.buf...)
			}
			hist = to
			if to == len(e.history) {
				e.buf = append([]rune(nil), saved...)
			} else {
				e.buf = []rune(e.history[to])
			}
			e.pos = len(e.buf)
		})
	}

	for {
		r, _, err := e.in.ReadRune()
		if err != nil {
			io.WriteString(e.out, "\n")
			return "", io.EOF
		}
		switch r {
		case '\r', '\n':
			e.mu.Lock()
			line := string(e.buf)
			e.pos = len(e.buf)
			e.redrawLocked()
			io.WriteString(e.out, "\n")
			e.mu.Unlock()
			return line, nil
		case 3: // Ctrl-C: drop the line
			e.edit(func() {
				io.WriteString(e.out, "^C\n")
				e.buf, e.pos = nil, 0
			})
			hist = len(e.history)
		case 4: // Ctrl-D: end of input on an empty line, else delete
			e.mu.Lock()
			empty := len(e.buf) == 0
			e.mu.Unlock()
			if empty {
				io.WriteString(e.out, "\n")
				return "", io.EOF
			}
			e.edit(e.deleteAtLocked)
		case 127, 8:
			e.edit(func() {
				if e.pos > 0 {
					e.buf = append(e.buf[:e.pos-1], e.buf[e.pos:]...)
					e.pos--
				}
			})
		case 1:
			e.edit(func() { e.pos = 0 })
		case 5:
			e.edit(func() { e.pos = len(e.buf) })
		case 2:
			e.edit(e.leftLocked)
		case 6:
			e.edit(e.rightLocked)
		case 11:
			e.edit(func() { e.buf = e.buf[:e.pos] })
		case 21:
			e.edit(func() { e.buf, e.pos = append([]rune(nil), e.buf[e.pos:]...), 0 })
		case 23:
			e.edit(e.deleteWordLocked)
		case 12:
			e.edit(func() { io.WriteString(e.out, "\x1b[H\x1b[2J") })
		case 16:
			browse(hist - 1)
		case 14:
			browse(hist + 1)
		case '\t':
			e.complete()
		case 27:
			e.escape(browse, &hist)
		default:
			if r >= 32 && r != utf8.RuneError {
				e.edit(func() {
					e.buf = append(e.buf[:e.pos], append([]rune{r}, e.buf[e.pos:]...)...)
					e.pos++
				})
			}
		}
	}
}

// escape handles an escape sequence: arrows, Home, End and Delete.
func (e *editor) escape(browse func(int), hist *int) {
	b, err := e.in.ReadByte()
	if err != nil || (b != '[' && b != 'O') {
		return
	}
	var num []byte
	for {
		c, err := e.in.ReadByte()
		if err != nil {
			return
		}
		if c >= '0' && c <= '9' || c == ';' {
			num = append(num, c)
			continue
		}
		switch c {
		case 'A':
			browse(*hist - 1)
		case 'B':
			browse(*hist + 1)
		case 'C':
			e.edit(e.rightLocked)
		case 'D':
			e.edit(e.leftLocked)
		case 'H':
			e.edit(func() { e.pos = 0 })
		case 'F':
			e.edit(func() { e.pos = len(e.buf) })
		case '~':
			switch string(num) {
			case "1", "7":
				e.edit(func() { e.pos = 0 })
			case "4", "8":
				e.edit(func() { e.pos = len(e.buf) })
			case "3":
				e.edit(e.deleteAtLocked)
			}
		}
		return
	}
}

// leftLocked moves the cursor one rune left.
func (e *editor) leftLocked() {
	if e.pos > 0 {
		e.pos--
	}
}

// rightLocked moves the cursor one rune right.
func (e *editor) rightLocked() {
	if e.pos < len(e.buf) {
		e.pos++
	}
}

// deleteAtLocked deletes the rune under the cursor.
func (e *editor) deleteAtLocked() {
	if e.pos < len(e.buf) {
		e.buf = append(e.buf[:e.pos], e.buf[e.pos+1:]...)
	}
}

// deleteWordLocked deletes the word before the cursor (Ctrl-W).
func (e *editor) deleteWordLocked() {
	i := e.pos
	for i > 0 && e.buf[i-1] == ' ' {
		i--
	}
	for i > 0 && e.buf[i-1] != ' ' {
		i--
	}
	e.buf = append(e.buf[:i], e.buf[e.pos:]...)
	e.pos = i
}

// complete completes the word before the cursor: a command name at the
// start of the line, or a znode path (a word starting with "/") from the
// children the paths function returns, as zkCli's JLine completer does. It
// extends the word to the longest prefix its candidates share. paths is
// called without the editor's lock held, since it may wait on the network.
func (e *editor) complete() {
	e.mu.Lock()
	line := string(e.buf[:e.pos])
	e.mu.Unlock()
	start := strings.LastIndexByte(line, ' ') + 1
	word := line[start:]
	var candidates []string
	switch {
	case start == 0:
		for name := range commands {
			candidates = append(candidates, name)
		}
	case strings.HasPrefix(word, "/") && e.paths != nil:
		dir := word[:strings.LastIndexByte(word, '/')+1]
		parent := strings.TrimSuffix(dir, "/")
		if parent == "" {
			parent = "/"
		}
		for _, child := range e.paths(parent) {
			candidates = append(candidates, dir+child)
		}
	}
	add := completion(word, candidates)
	if add == "" {
		return
	}
	e.edit(func() {
		if string(e.buf[:e.pos]) != line { // edited meanwhile
			return
		}
		r := []rune(add)
		e.buf = append(e.buf[:e.pos], append(r, e.buf[e.pos:]...)...)
		e.pos += len(r)
	})
}

// completion returns what to append to word: the rest of the longest prefix
// shared by the candidates that start with word, plus a space after a
// command name that is the only match.
func completion(word string, candidates []string) string {
	var matches []string
	for _, c := range candidates {
		if strings.HasPrefix(c, word) {
			matches = append(matches, c)
		}
	}
	if len(matches) == 0 {
		return ""
	}
	sort.Strings(matches)
	common := matches[0]
	for _, m := range matches[1:] {
		for !strings.HasPrefix(m, common) {
			common = common[:len(common)-1]
		}
	}
	add := common[len(word):]
	if len(matches) == 1 && !strings.HasPrefix(word, "/") {
		add += " "
	}
	return add
}

// interactive runs the shell on a terminal until quit or end of input.
func interactive(sh *Shell, in *os.File) int {
	ed := newEditor(in, os.Stdout)
	ed.paths = sh.children
	sh.setEventHook(func(text string) {
		sh.outMu.Lock()
		defer sh.outMu.Unlock()
		ed.printAbove(text)
	})
	for {
		line, err := ed.readLine(sh.Prompt())
		if err != nil {
			break
		}
		ed.addHistory(line)
		sh.Execute(line)
		if sh.Quit() {
			return sh.ExitCode()
		}
	}
	sh.closeQuietly()
	return sh.ExitCode()
}
