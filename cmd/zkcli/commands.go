package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/zkd/zkd/jute"
)

// command is one zkCli command: its option syntax, the usage text zkCli
// prints (after the name), and the function running it. run is nil for the
// shell commands dispatch handles itself.
type command struct {
	spec  optSpec
	usage string
	run   func(sh *Shell, p *parsedArgs) error
}

// commands is zkCli 3.8's command table.
var commands map[string]command

func init() {
	commands = map[string]command{
		"addWatch":             {optSpec{vals: "m"}, "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", cmdAddWatch},
		"addauth":              {optSpec{}, "scheme auth", cmdAddAuth},
		"close":                {optSpec{}, "", cmdClose},
		"config":               {optSpec{flags: "cws"}, "[-c] [-w] [-s]", cmdConfig},
		"connect":              {optSpec{}, "host:port", nil},
		"create":               {optSpec{flags: "sec", vals: "t"}, "[-s] [-e] [-c] [-t ttl] path [data] [acl]", cmdCreate},
		"delete":               {optSpec{vals: "v"}, "[-v version] path", cmdDelete},
		"deleteall":            {optSpec{vals: "b"}, "path [-b batch size]", cmdDeleteAll},
		"get":                  {optSpec{flags: "sw"}, "[-s] [-w] path", cmdGet},
		"getAcl":               {optSpec{flags: "s"}, "[-s] path", cmdGetACL},
		"getAllChildrenNumber": {optSpec{}, "path", cmdGetAllChildrenNumber},
		"getEphemerals":        {optSpec{}, "path", cmdGetEphemerals},
		"history":              {optSpec{}, "", nil},
		"ls":                   {optSpec{flags: "swR"}, "[-s] [-w] [-R] path", cmdLs},
		"printwatches":         {optSpec{}, "on|off", nil},
		"quit":                 {optSpec{}, "", nil},
		"reconfig":             {optSpec{flags: "s", vals: "v", words: []string{"file", "members", "add", "remove"}}, "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]", cmdReconfig},
		"redo":                 {optSpec{}, "cmdno", nil},
		"removewatches":        {optSpec{flags: "cdal"}, "path [-c|-d|-a] [-l]", cmdRemoveWatches},
		"set":                  {optSpec{flags: "s", vals: "v"}, "[-s] [-v version] path data", cmdSet},
		"setAcl":               {optSpec{flags: "sR", vals: "v"}, "[-s] [-v version] [-R] path acl", cmdSetACL},
		"stat":                 {optSpec{flags: "w"}, "[-w] path", cmdStat},
		"sync":                 {optSpec{}, "path", cmdSync},
		"version":              {optSpec{}, "", cmdVersion},
		"whoami":               {optSpec{}, "", cmdWhoAmI},
	}
}

// usageErr is the error zkCli gives for a malformed command: its usage line.
func usageErr(p *parsedArgs) error {
	name := p.args[0]
	return failf("%s %s", name, commands[name].usage)
}

// checkPath validates a path argument before it is sent.
func checkPath(path string) error { return validatePath(path, false) }

// zkErr turns an error from the session into the user's message for path.
func zkErr(err error, path string) error {
	var code jute.Code
	if errors.As(err, &code) {
		return failf("%s", keeperMessage(code, path))
	}
	return err
}

// parseVersion reads a -v value as zkCli does (an int).
func parseVersion(p *parsedArgs, def int32) (int32, error) {
	v, ok := p.opts["v"]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, failf("For input string: \"%s\"", v)
	}
	return int32(n), nil
}

// deprecatedWatch handles the old "cmd path watch" form: the extra argument
// asks for a watch, with zkCli's deprecation notice.
func deprecatedWatch(sh *Shell, p *parsedArgs, notice string) bool {
	if len(p.args) > 2 {
		fmt.Fprintln(sh.err, notice)
		return true
	}
	return p.has("w")
}

// cmdLs lists children: ls [-s] [-w] [-R] path.
func cmdLs(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	watch := deprecatedWatch(sh, p, "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.")
	if err := checkPath(path); err != nil {
		return err
	}
	if p.has("R") {
		return lsRecursive(sh, path, watch)
	}
	var children []string
	var stat *jute.Stat
	if p.has("s") {
		resp := &jute.GetChildren2Response{}
		if err := sh.sess.Call(jute.OpGetChildren2, &jute.GetChildren2Request{Path: path, Watch: watch}, resp); err != nil {
			return zkErr(err, path)
		}
		children, stat = resp.Children, &resp.Stat
	} else {
		resp := &jute.GetChildrenResponse{}
		if err := sh.sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: path, Watch: watch}, resp); err != nil {
			return zkErr(err, path)
		}
		children = resp.Children
	}
	if watch {
		sh.sess.Watches.add(watchChild, path)
	}
	sort.Strings(children)
	var b strings.Builder
	b.WriteString(javaList(children) + "\n")
	if stat != nil {
		printStat(&b, stat)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// lsRecursive prints path and every descendant as zkCli's ls -R does
// (ZKUtil.visitSubTreeDFS): each node's children in sorted order, then the
// subtrees of those children in turn. Nodes removed during the walk are
// skipped.
func lsRecursive(sh *Shell, path string, watch bool) error {
	if err := sh.sess.Call(jute.OpGetData, &jute.GetDataRequest{Path: path, Watch: watch}, &jute.GetDataResponse{}); err != nil {
		return zkErr(err, path)
	}
	if watch {
		sh.sess.Watches.add(watchData, path)
	}
	fmt.Fprintln(sh.out, path)
	var visit func(string) error
	visit = func(p string) error {
		resp := &jute.GetChildrenResponse{}
		err := sh.sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: p, Watch: watch}, resp)
		if errors.Is(err, jute.CodeNoNode) {
			return nil
		}
		if err != nil {
			return zkErr(err, p)
		}
		if watch {
			sh.sess.Watches.add(watchChild, p)
		}
		sort.Strings(resp.Children)
		paths := make([]string, len(resp.Children))
		var b strings.Builder
		for i, c := range resp.Children {
			paths[i] = childPath(p, c)
			b.WriteString(paths[i] + "\n")
		}
		fmt.Fprint(sh.out, b.String())
		for _, cp := range paths {
			if err := visit(cp); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(path)
}

// childPath joins a parent path and a child name.
func childPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// cmdGet prints a znode's data: get [-s] [-w] path.
func cmdGet(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	watch := deprecatedWatch(sh, p, "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.")
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.GetDataResponse{}
	if err := sh.sess.Call(jute.OpGetData, &jute.GetDataRequest{Path: path, Watch: watch}, resp); err != nil {
		return zkErr(err, path)
	}
	if watch {
		sh.sess.Watches.add(watchData, path)
	}
	var b strings.Builder
	if resp.Data == nil {
		b.WriteString("null\n")
	} else {
		b.WriteString(javaString(resp.Data) + "\n")
	}
	if p.has("s") {
		printStat(&b, &resp.Stat)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// cmdStat prints a znode's Stat: stat [-w] path. A watch on a missing node
// is an exist watch, as in ZooKeeper.
func cmdStat(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	watch := deprecatedWatch(sh, p, "'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.")
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.ExistsResponse{}
	err := sh.sess.Call(jute.OpExists, &jute.ExistsRequest{Path: path, Watch: watch}, resp)
	if watch {
		switch {
		case err == nil:
			sh.sess.Watches.add(watchData, path)
		case errors.Is(err, jute.CodeNoNode):
			sh.sess.Watches.add(watchExist, path)
		}
	}
	if err != nil {
		return zkErr(err, path)
	}
	var b strings.Builder
	printStat(&b, &resp.Stat)
	fmt.Fprint(sh.out, b.String())
	return nil
}

// cmdSet writes a znode's data: set [-s] [-v version] path data.
func cmdSet(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 3 {
		return usageErr(p)
	}
	path, data := p.args[1], p.args[2]
	version, err := parseVersion(p, -1)
	if err != nil {
		return err
	}
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.SetDataResponse{}
	if err := sh.sess.Call(jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte(data), Version: version}, resp); err != nil {
		return zkErr(err, path)
	}
	if p.has("s") {
		var b strings.Builder
		printStat(&b, &resp.Stat)
		fmt.Fprint(sh.out, b.String())
	}
	return nil
}

// cmdCreate creates a znode: create [-s] [-e] [-c] [-t ttl] path [data] [acl].
// Like zkCli it prints "Created <path>" on stderr.
func cmdCreate(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	hasS, hasE, hasC, hasT := p.has("s"), p.has("e"), p.has("c"), p.has("t")
	if hasC && (hasE || hasS) {
		return failf("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if hasT {
		n, err := strconv.ParseInt(p.opts["t"], 10, 64)
		if err != nil {
			return failf("-t argument must be a long value")
		}
		ttl = n
	}
	if hasT && hasE {
		return failf("TTLs cannot be used with Ephemeral znodes")
	}
	if hasT && hasC {
		return failf("TTLs cannot be used with Container znodes")
	}
	var mode int32
	switch {
	case hasE && hasS:
		mode = jute.ModeEphemeralSequential
	case hasE:
		mode = jute.ModeEphemeral
	case hasS && hasT:
		mode = jute.ModePersistentSequentialWithTTL
	case hasS:
		mode = jute.ModePersistentSequential
	case hasC:
		mode = jute.ModeContainer
	case hasT:
		mode = jute.ModePersistentWithTTL
	default:
		mode = jute.ModePersistent
	}
	path := p.args[1]
	var data []byte
	if len(p.args) > 2 {
		data = []byte(p.args[2])
	}
	acl := openACL
	if len(p.args) > 3 {
		var warnings []string
		acl, warnings = parseACL(p.args[3])
		for _, w := range warnings {
			fmt.Fprintln(sh.err, w)
		}
	}
	if err := validatePath(path, hasS); err != nil {
		return err
	}
	if len(acl) == 0 {
		fmt.Fprintln(sh.err, keeperExceptionText(jute.CodeInvalidACL, ""))
		return zkErr(jute.CodeInvalidACL, "")
	}
	var created string
	var err error
	switch {
	case hasT:
		resp := &jute.Create2Response{}
		err = sh.sess.Call(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: path, Data: data, Acl: acl, Flags: mode, Ttl: ttl}, resp)
		created = resp.Path
	case hasC:
		resp := &jute.Create2Response{}
		err = sh.sess.Call(jute.OpCreateContainer, &jute.CreateRequest{Path: path, Data: data, Acl: acl, Flags: mode}, resp)
		created = resp.Path
	default:
		resp := &jute.CreateResponse{}
		err = sh.sess.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Data: data, Acl: acl, Flags: mode}, resp)
		created = resp.Path
	}
	if err != nil {
		return zkErr(err, path)
	}
	fmt.Fprintln(sh.err, "Created "+created)
	return nil
}

// cmdDelete deletes a znode: delete [-v version] path.
func cmdDelete(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	version, err := parseVersion(p, -1)
	if err != nil {
		return err
	}
	if len(p.args) > 2 {
		fmt.Fprintln(sh.err, "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.")
		n, err := strconv.ParseInt(p.args[2], 10, 32)
		if err != nil {
			return failf("For input string: \"%s\"", p.args[2])
		}
		version = int32(n)
	}
	if err := checkPath(path); err != nil {
		return err
	}
	if err := sh.sess.Call(jute.OpDelete, &jute.DeleteRequest{Path: path, Version: version}, nil); err != nil {
		return zkErr(err, path)
	}
	return nil
}

// cmdDeleteAll deletes a znode and its subtree: deleteall path [-b batch].
// Like ZooKeeper's ZKUtil.deleteRecursive it lists the tree breadth first
// and deletes it deepest first, in multi batches.
func cmdDeleteAll(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	batch := 1000
	if v, ok := p.opts["b"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return failf("-b argument must be an int value")
		}
		batch = n
	}
	if err := checkPath(path); err != nil {
		return err
	}
	tree := []string{path}
	for i := 0; i < len(tree); i++ {
		resp := &jute.GetChildrenResponse{}
		if err := sh.sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: tree[i]}, resp); err != nil {
			return zkErr(err, tree[i])
		}
		for _, c := range resp.Children {
			tree = append(tree, childPath(tree[i], c))
		}
	}
	for end := len(tree); end > 0; end -= batch {
		start := max(end-batch, 0)
		req := &jute.MultiRequest{}
		for i := end - 1; i >= start; i-- {
			req.Ops = append(req.Ops, jute.MultiOp{Type: jute.OpDelete, Req: &jute.DeleteRequest{Path: tree[i], Version: -1}})
		}
		resp := &jute.MultiResponse{}
		err := sh.sess.Call(jute.OpMulti, req, resp)
		if err == nil {
			for _, r := range resp.Results {
				if r.Type == jute.OpError && r.Err != jute.CodeOK {
					err = r.Err
					break
				}
			}
		}
		if err != nil {
			return failf("Failed to delete some node(s) in the subtree!")
		}
	}
	return nil
}

// cmdGetACL prints a znode's ACL: getAcl [-s] path.
func cmdGetACL(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.GetACLResponse{}
	if err := sh.sess.Call(jute.OpGetACL, &jute.GetACLRequest{Path: path}, resp); err != nil {
		return zkErr(err, path)
	}
	var b strings.Builder
	printACLs(&b, resp.Acl)
	if p.has("s") {
		printStat(&b, &resp.Stat)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// cmdSetACL replaces a znode's ACL: setAcl [-s] [-v version] [-R] path acl.
// With -R every node of the subtree gets the ACL.
func cmdSetACL(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 3 {
		return usageErr(p)
	}
	path := p.args[1]
	acl, warnings := parseACL(p.args[2])
	for _, w := range warnings {
		fmt.Fprintln(sh.err, w)
	}
	version, err := parseVersion(p, -1)
	if err != nil {
		return err
	}
	if err := checkPath(path); err != nil {
		return err
	}
	if len(acl) == 0 {
		return zkErr(jute.CodeInvalidACL, "") // the Java client's check names no path
	}
	set := func(target string) (*jute.Stat, error) {
		resp := &jute.SetACLResponse{}
		if err := sh.sess.Call(jute.OpSetACL, &jute.SetACLRequest{Path: target, Acl: acl, Version: version}, resp); err != nil {
			return nil, zkErr(err, target)
		}
		return &resp.Stat, nil
	}
	if p.has("R") {
		var visit func(string) error
		visit = func(q string) error {
			if _, err := set(q); err != nil {
				return err
			}
			resp := &jute.GetChildrenResponse{}
			if err := sh.sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: q}, resp); err != nil {
				return zkErr(err, q)
			}
			sort.Strings(resp.Children)
			for _, c := range resp.Children {
				if err := visit(childPath(q, c)); err != nil {
					return err
				}
			}
			return nil
		}
		return visit(path)
	}
	stat, err := set(path)
	if err != nil {
		return err
	}
	if p.has("s") {
		var b strings.Builder
		printStat(&b, stat)
		fmt.Fprint(sh.out, b.String())
	}
	return nil
}

// cmdAddAuth adds credentials to the session: addauth scheme auth. A refused
// credential shows as an AuthFailed event and ends the session, as in zkCli.
func cmdAddAuth(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	var auth []byte
	if len(p.args) > 2 {
		auth = []byte(p.args[2])
	}
	err := sh.sess.AddAuth(p.args[1], auth)
	if err == nil || errors.Is(err, jute.CodeAuthFailed) {
		return nil
	}
	return zkErr(err, "")
}

// cmdSync syncs the server with the leader: sync path.
func cmdSync(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	if err := checkPath(path); err != nil {
		return err
	}
	err := sh.sess.Call(jute.OpSync, &jute.SyncRequest{Path: path}, &jute.SyncResponse{})
	var code jute.Code
	switch {
	case err == nil:
		fmt.Fprintln(sh.out, "Sync is OK")
	case errors.As(err, &code):
		fmt.Fprintf(sh.out, "Sync has failed. rc=%d\n", int32(code))
	default:
		return err
	}
	return nil
}

// cmdGetEphemerals lists the session's ephemeral nodes under a path prefix:
// getEphemerals [path] ("/" when omitted).
func cmdGetEphemerals(sh *Shell, p *parsedArgs) error {
	path := "/"
	if len(p.args) > 1 {
		path = p.args[1]
	}
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.GetEphemeralsResponse{}
	if err := sh.sess.Call(jute.OpGetEphemerals, &jute.GetEphemeralsRequest{PrefixPath: path}, resp); err != nil {
		return zkErr(err, path)
	}
	fmt.Fprintln(sh.out, javaList(resp.Ephemerals))
	return nil
}

// cmdGetAllChildrenNumber prints the number of descendants of a path:
// getAllChildrenNumber path.
func cmdGetAllChildrenNumber(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	if err := checkPath(path); err != nil {
		return err
	}
	resp := &jute.GetAllChildrenNumberResponse{}
	if err := sh.sess.Call(jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: path}, resp); err != nil {
		return zkErr(err, path)
	}
	fmt.Fprintln(sh.out, resp.TotalNumber)
	return nil
}

// addWatchModes are the modes addWatch -m accepts.
var addWatchModes = map[string]int32{
	"PERSISTENT":           jute.AddWatchModePersistent,
	"PERSISTENT_RECURSIVE": jute.AddWatchModePersistentRecursive,
}

// cmdAddWatch adds a persistent watch: addWatch [-m mode] path.
func cmdAddWatch(sh *Shell, p *parsedArgs) error {
	if len(p.args) != 2 {
		return usageErr(p)
	}
	mode := jute.AddWatchModePersistentRecursive
	if m, ok := p.opts["m"]; ok {
		v, known := addWatchModes[m]
		if !known {
			return usageErr(p)
		}
		mode = v
	}
	path := p.args[1]
	if err := checkPath(path); err != nil {
		return err
	}
	if err := sh.sess.Call(jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode}, nil); err != nil {
		return zkErr(err, path)
	}
	if mode == jute.AddWatchModePersistent {
		sh.sess.Watches.add(watchPersistent, path)
	} else {
		sh.sess.Watches.add(watchRecursive, path)
	}
	return nil
}

// cmdRemoveWatches removes the session's watches on a path:
// removewatches path [-c|-d|-a] [-l]. -l removes them only locally, leaving
// the server's registration (whose events are then dropped). Each kind of
// watch removed is reported as a *WatchRemoved event, as the Java client does.
func cmdRemoveWatches(sh *Shell, p *parsedArgs) error {
	if len(p.args) < 2 {
		return usageErr(p)
	}
	path := p.args[1]
	wtype := jute.WatcherTypeAny
	switch {
	case p.has("c"):
		wtype = jute.WatcherTypeChildren
	case p.has("d"):
		wtype = jute.WatcherTypeData
	}
	if err := checkPath(path); err != nil {
		return err
	}
	if len(sh.sess.Watches.remove(path, wtype, true)) == 0 {
		return failf("%s", keeperExceptionText(jute.CodeNoWatcher, path))
	}
	if !p.has("l") {
		if err := sh.sess.Call(jute.OpRemoveWatches, &jute.RemoveWatchesRequest{Path: path, Type: wtype}, nil); err != nil {
			return zkErr(err, path)
		}
	}
	for _, t := range sh.sess.Watches.remove(path, wtype, false) {
		sh.printEvent(jute.WatcherEvent{Type: t, State: jute.StateSyncConnected, Path: path})
	}
	return nil
}

// cmdWhoAmI prints the session's authenticated identities: whoami.
func cmdWhoAmI(sh *Shell, p *parsedArgs) error {
	resp := &jute.WhoAmIResponse{}
	if err := sh.sess.Call(jute.OpWhoAmI, nil, resp); err != nil {
		return zkErr(err, "")
	}
	var b strings.Builder
	b.WriteString("Auth scheme: User\n")
	for _, c := range resp.ClientInfo {
		fmt.Fprintf(&b, "%s: %s\n", c.AuthScheme, c.User)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// configPath is the znode holding the ensemble configuration.
const configPath = "/zookeeper/config"

// cmdConfig prints the ensemble configuration: config [-c] [-w] [-s]. With
// -c only the version and the client addresses are printed.
func cmdConfig(sh *Shell, p *parsedArgs) error {
	watch := p.has("w")
	resp := &jute.GetDataResponse{}
	if err := sh.sess.Call(jute.OpGetData, &jute.GetDataRequest{Path: configPath, Watch: watch}, resp); err != nil {
		return zkErr(err, configPath)
	}
	if watch {
		sh.sess.Watches.add(watchData, configPath)
	}
	data := "null"
	if resp.Data != nil {
		data = javaString(resp.Data)
	}
	var b strings.Builder
	if p.has("c") {
		b.WriteString(clientConfig(data) + "\n")
	} else {
		b.WriteString(data + "\n")
	}
	if p.has("s") {
		printStat(&b, &resp.Stat)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// clientConfig reduces a dynamic configuration to "version host:port,...",
// as ZooKeeper's ConfigUtils.getClientConfigStr does: the client address of
// each server.N line (0.0.0.0 when only a port is given), in server order.
func clientConfig(data string) string {
	version := ""
	type server struct {
		id   int
		addr string
	}
	var servers []server
	for _, line := range strings.Split(data, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "version" {
			version = value
		}
		id, isServer := strings.CutPrefix(key, "server.")
		if !isServer {
			continue
		}
		_, client, ok := strings.Cut(value, ";")
		if !ok {
			continue
		}
		if !strings.Contains(client, ":") {
			client = "0.0.0.0:" + client
		}
		n, _ := strconv.Atoi(id)
		servers = append(servers, server{n, client})
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].id < servers[j].id })
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.addr
	}
	return version + " " + strings.Join(addrs, ",")
}

// cmdReconfig asks the ensemble to change membership: incremental with -add
// and -remove, or a new member list with -members or -file. Standalone
// servers refuse it and the error is printed.
func cmdReconfig(sh *Shell, p *parsedArgs) error {
	req := &jute.ReconfigRequest{CurConfigId: -1}
	if v, ok := p.opts["v"]; ok {
		n, err := strconv.ParseInt(v, 16, 64)
		if err != nil {
			return failf("-v must be followed by a long (configuration version)")
		}
		req.CurConfigId = n
	}
	hasFile, hasMembers := p.has("file"), p.has("members")
	hasAdd, hasRemove := p.has("add"), p.has("remove")
	switch {
	case hasFile && hasMembers:
		return failf("Can't use -file and -members together (conflicting non-incremental modes)")
	case (hasFile || hasMembers) && (hasAdd || hasRemove):
		return failf("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)")
	case !hasFile && !hasMembers && !hasAdd && !hasRemove:
		return usageErr(p)
	}
	req.JoiningServers = p.opts["add"]
	req.LeavingServers = p.opts["remove"]
	req.NewMembers = p.opts["members"]
	if hasFile {
		b, err := os.ReadFile(p.opts["file"])
		if err != nil {
			return failf("%v", err)
		}
		var members []string
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "server.") {
				members = append(members, line)
			}
		}
		req.NewMembers = strings.Join(members, ",")
	}
	resp := &jute.GetDataResponse{}
	if err := sh.sess.Call(jute.OpReconfig, req, resp); err != nil {
		return zkErr(err, "")
	}
	var b strings.Builder
	b.WriteString("Committed new configuration:\n" + javaString(resp.Data) + "\n")
	if p.has("s") {
		printStat(&b, &resp.Stat)
	}
	fmt.Fprint(sh.out, b.String())
	return nil
}

// cmdClose ends the session; later commands print "Not connected".
func cmdClose(sh *Shell, p *parsedArgs) error {
	sh.sess.Close()
	return nil
}

// cmdVersion prints the shell's version line.
func cmdVersion(sh *Shell, p *parsedArgs) error {
	fmt.Fprintln(sh.out, "ZooKeeper CLI version: "+version)
	return nil
}
