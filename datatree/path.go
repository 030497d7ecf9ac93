package datatree

import (
	"strings"
	"unicode/utf8"
)

// ValidatePath reports whether path is a valid znode path by the rules of
// ZooKeeper's PathUtils.validatePath: it starts with "/", does not end with
// "/" (except the root), has no empty, "." or ".." segment, no NUL, and no
// character in the ranges ZooKeeper rejects (controls U+0001–U+001F,
// U+007F–U+009F, U+D800–U+F8FF, U+FFF0–U+FFFF, anything outside the BMP,
// which Java sees as surrogates, and invalid UTF-8, which Java decodes to
// U+FFFD).
func ValidatePath(path string) bool {
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	if len(path) == 1 {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	last := byte('/')
	for i := 1; i < len(path); {
		c := path[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0:
				return false
			case c == '/' && last == '/':
				return false
			case c == '.' && last == '.':
				if path[i-2] == '/' && (i+1 == len(path) || path[i+1] == '/') {
					return false
				}
			case c == '.':
				if path[i-1] == '/' && (i+1 == len(path) || path[i+1] == '/') {
					return false
				}
			case c <= 0x1f || c == 0x7f:
				return false
			}
			last = c
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(path[i:])
		if (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return false
		}
		last = 0x80 // any non-ASCII: neither '/' nor '.'
		i += size
	}
	return true
}

// parentOf splits path at its last '/' as ZooKeeper does: "/a/b" gives
// ("/a", "b"), "/a" gives ("", "a"); ok is false when there is no '/'.
func parentOf(path string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", "", false
	}
	return path[:i], path[i+1:], true
}

// isSpecialPath reports the paths ZooKeeper refuses to delete.
func isSpecialPath(path string) bool {
	return path == "/" || path == "/zookeeper" || path == "/zookeeper/quota" || path == "/zookeeper/config"
}

// FencingPath is zkd's virtual read-only subtree: the public key of the
// fencing tokens at the node itself and a token per lock node under it,
// served by package server and never stored in the tree. Writes to it or
// under it answer NoAuth, as ZooKeeper answers writes to /zookeeper/config
// (world read-only); creating the node itself answers NodeExists.
const FencingPath = "/zookeeper/fencing"

// fencingErr returns the error of a write to path if path is FencingPath
// or under it, else nil.
func fencingErr(path string, create bool) error {
	if !strings.HasPrefix(path, FencingPath) || (len(path) > len(FencingPath) && path[len(FencingPath)] != '/') {
		return nil
	}
	if create && path == FencingPath {
		return pathErr(ErrNodeExists, path)
	}
	return pathErr(ErrNoAuth, path)
}
