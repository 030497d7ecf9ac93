package quorum

import (
	"bufio"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// ParseConfigData parses /zookeeper/config text: server.N lines and a
// version=<hex> line. Empty data is an empty configuration, version 0.
func ParseConfigData(data []byte) (peers []Peer, version int64, err error) {
	return parseConfigData(data, ParsePeer)
}

// parseConfigData is ParseConfigData with parse for each server.N value.
func parseConfigData(data []byte, parse func(int64, string) (Peer, error)) (peers []Peer, version int64, err error) {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, 0, fmt.Errorf("quorum: config line %q: want key=value", line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if key == "version" {
			if version, err = strconv.ParseInt(val, 16, 64); err != nil {
				return nil, 0, fmt.Errorf("quorum: config version %q: %w", val, err)
			}
			continue
		}
		p, err := parseServerLine(key, val, parse)
		if err != nil {
			return nil, 0, err
		}
		peers = append(peers, p)
	}
	sortPeers(peers)
	return peers, version, nil
}

// errServerID is a server.N key whose N is not a number.
var errServerID = errors.New("quorum: server id is not a number")

func parseServerLine(key, val string, parse func(int64, string) (Peer, error)) (Peer, error) {
	n, ok := strings.CutPrefix(key, "server.")
	if !ok {
		return Peer{}, fmt.Errorf("quorum: config key %q: want server.N", key)
	}
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return Peer{}, fmt.Errorf("%w: %q", errServerID, key)
	}
	return parse(id, val)
}

func sortPeers(peers []Peer) {
	sort.Slice(peers, func(i, j int) bool { return peers[i].ID < peers[j].ID })
}

// Reconfig computes the configuration a reconfig request asks for, from
// the current /zookeeper/config data, and renders it with version zxid.
// It is deterministic (the log's apply calls it on every member) and
// decides in the order of ZooKeeper's PrepRequestProcessor: BadVersion
// when CurConfigId is neither -1 nor the current version; MarshallingError
// for a server id that is not a number; BadArguments for a malformed
// server string, a joiner without a client port, a duplicate address, or
// fewer than two voters left; then NoAuth unless authorized() (WRITE on
// /zookeeper/config); last, BadArguments for what ZooKeeper would take
// but zkd cannot run (a server id outside 1..254). NewMembers set means a
// non-incremental change (comma or newline separated server lines);
// otherwise LeavingServers (comma separated ids) are removed and
// JoiningServers (comma separated server.N=… specs) added or replaced.
func Reconfig(cur []byte, req *jute.ReconfigRequest, zxid int64, authorized func() bool) ([]byte, error) {
	peers, version, err := ParseConfigData(cur)
	if err != nil {
		return nil, jute.CodeBadArguments
	}
	if req.CurConfigId != -1 && req.CurConfigId != version {
		return nil, jute.CodeBadVersion
	}
	// A number ZooKeeper's Long.parseLong refuses fails the request with
	// MarshallingError there (an unexpected exception).
	badArgs := func(err error) error {
		if errors.Is(err, errServerID) {
			return jute.CodeMarshallingError
		}
		return jute.CodeBadArguments
	}
	var next []Peer
	if req.NewMembers != "" {
		text := strings.ReplaceAll(req.NewMembers, ",", "\n")
		if next, _, err = parseConfigData([]byte(text), parsePeerSpec); err != nil {
			return nil, badArgs(err)
		}
	} else {
		byID := map[int64]Peer{}
		for _, p := range peers {
			byID[p.ID] = p
		}
		for _, s := range splitList(req.LeavingServers) {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, jute.CodeMarshallingError
			}
			delete(byID, id)
		}
		for _, s := range splitList(req.JoiningServers) {
			key, val, ok := strings.Cut(s, "=")
			if !ok {
				return nil, jute.CodeBadArguments
			}
			p, err := parseServerLine(strings.TrimSpace(key), strings.TrimSpace(val), parsePeerSpec)
			if err != nil {
				return nil, badArgs(err)
			}
			if p.ClientAddr == "" {
				return nil, jute.CodeBadArguments
			}
			for _, q := range byID {
				if q.ID != p.ID && (q.QuorumAddr() == p.QuorumAddr() || q.ElectionAddr() == p.ElectionAddr() ||
					q.QuorumAddr() == p.ElectionAddr() || q.ElectionAddr() == p.QuorumAddr()) {
					return nil, jute.CodeBadArguments
				}
			}
			byID[p.ID] = p
		}
		for _, p := range byID {
			next = append(next, p)
		}
		sortPeers(next)
	}
	voters := 0
	for _, p := range next {
		if !p.Observer {
			voters++
		}
	}
	if voters < 2 {
		return nil, jute.CodeBadArguments
	}
	if !authorized() {
		return nil, jute.CodeNoAuth
	}
	for _, p := range next {
		if checkPeerID(p.ID) != nil {
			return nil, jute.CodeBadArguments
		}
	}
	return ConfigData(next, zxid), nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// voters returns the ids of the participants of a configuration.
func voters(peers []Peer) []int64 {
	var ids []int64
	for _, p := range peers {
		if !p.Observer {
			ids = append(ids, p.ID)
		}
	}
	return ids
}
