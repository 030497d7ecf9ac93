package quorum

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// ParseConfigData parses /zookeeper/config text: server.N lines and a
// version=<hex> line. Empty data is an empty configuration, version 0.
func ParseConfigData(data []byte) (peers []Peer, version int64, err error) {
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
		p, err := parseServerLine(key, val)
		if err != nil {
			return nil, 0, err
		}
		peers = append(peers, p)
	}
	sortPeers(peers)
	return peers, version, nil
}

func parseServerLine(key, val string) (Peer, error) {
	n, ok := strings.CutPrefix(key, "server.")
	if !ok {
		return Peer{}, fmt.Errorf("quorum: config key %q: want server.N", key)
	}
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return Peer{}, fmt.Errorf("quorum: config key %q: server id is not a number", key)
	}
	return ParsePeer(id, val)
}

func sortPeers(peers []Peer) {
	sort.Slice(peers, func(i, j int) bool { return peers[i].ID < peers[j].ID })
}

// Reconfig computes the configuration a reconfig request asks for, from
// the current /zookeeper/config data, and renders it with version zxid.
// It is deterministic (the log's apply calls it on every member) and
// decides as ZooKeeper's PrepRequestProcessor does: BadVersion when
// CurConfigId is neither -1 nor the current version; BadArguments for a
// malformed server string, a joiner without a client port, a duplicate
// address, or fewer than two voters left. NewMembers set means a
// non-incremental change (comma or newline separated server lines);
// otherwise LeavingServers (comma separated ids) are removed and
// JoiningServers (comma separated server.N=… specs) added or replaced.
func Reconfig(cur []byte, req *jute.ReconfigRequest, zxid int64) ([]byte, error) {
	peers, version, err := ParseConfigData(cur)
	if err != nil {
		return nil, jute.CodeBadArguments
	}
	if req.CurConfigId != -1 && req.CurConfigId != version {
		return nil, jute.CodeBadVersion
	}
	var next []Peer
	if req.NewMembers != "" {
		text := strings.ReplaceAll(req.NewMembers, ",", "\n")
		if next, _, err = ParseConfigData([]byte(text)); err != nil {
			return nil, jute.CodeBadArguments
		}
	} else {
		byID := map[int64]Peer{}
		for _, p := range peers {
			byID[p.ID] = p
		}
		for _, s := range splitList(req.LeavingServers) {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, jute.CodeBadArguments
			}
			delete(byID, id)
		}
		for _, s := range splitList(req.JoiningServers) {
			key, val, ok := strings.Cut(s, "=")
			if !ok {
				return nil, jute.CodeBadArguments
			}
			p, err := parseServerLine(strings.TrimSpace(key), strings.TrimSpace(val))
			if err != nil || p.ClientAddr == "" {
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
