package zkproc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// modulePath is the module BuildZkd builds from.
const modulePath = "github.com/zkd/zkd"

var build struct {
	once sync.Once
	path string
	err  error
}

// builds holds BuildCmd's binaries, by command name.
var builds struct {
	sync.Mutex
	m map[string]*builtCmd
}

type builtCmd struct {
	once sync.Once
	path string
	err  error
}

// BuildCmd builds ./cmd/<name> (zkbench, zkcli) once per test process,
// with a plain go build (no -race even when the test has it: a load
// generator in a child process then costs the machine what it would
// outside a test), as BuildZkd does, and returns the binary's path.
func BuildCmd(t testing.TB, name string) string {
	t.Helper()
	builds.Lock()
	if builds.m == nil {
		builds.m = map[string]*builtCmd{}
	}
	b := builds.m[name]
	if b == nil {
		b = &builtCmd{}
		builds.m[name] = b
	}
	builds.Unlock()
	b.once.Do(func() { b.path, b.err = buildCmd(name, nil) })
	if b.err != nil {
		t.Fatalf("zkproc: %v", b.err)
	}
	return b.path
}

// BuildZkd builds ./cmd/zkd once per test process (plain go build, using
// Go's build cache) and returns the binary's path. The binary lives in a
// per-checkout directory under the user cache dir, replaced atomically, so
// concurrent test processes never see half a file and nothing piles up.
// The environment variable ZKD_BIN, if set, names a prebuilt binary to use
// instead; ZKD_BUILDFLAGS adds flags to go build (e.g. "-race").
func BuildZkd(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ZKD_BIN"); p != "" {
		return p
	}
	build.once.Do(func() { build.path, build.err = buildCmd("zkd", strings.Fields(os.Getenv("ZKD_BUILDFLAGS"))) })
	if build.err != nil {
		t.Fatalf("zkproc: %v", build.err)
	}
	return build.path
}

// buildCmd builds ./cmd/name with flags into a per-checkout directory
// under the user cache dir, replacing the binary atomically.
func buildCmd(name string, flags []string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "zkd-zkproc", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	final := filepath.Join(dir, name)
	tmp := filepath.Join(dir, name+".tmp-"+strconv.Itoa(os.Getpid()))
	args := append([]string{"build"}, flags...)
	cmd := exec.Command(goTool(), append(args, "-o", tmp, "./cmd/"+name)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	return final, nil
}

// moduleRoot finds the directory of zkd's go.mod, upwards from the working
// directory (a test's working directory is its package directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("build zkd: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modFileIs(b, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("build zkd: no go.mod of " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

func modFileIs(gomod []byte, module string) bool {
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == module {
			return true
		}
	}
	return false
}

// goTool finds the go command even when PATH lacks it.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	for _, root := range []string{os.Getenv("GOROOT"), runtime.GOROOT(), "/usr/local/go"} {
		if root == "" {
			continue
		}
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
