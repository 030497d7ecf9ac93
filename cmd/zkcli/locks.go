package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkd/zkd/datatree"
	"github.com/zkd/zkd/jute"
	"github.com/zkd/zkd/server/lockview"
)

// init adds zkcli's own locks command to zkCli's table (filled by
// commands.go's init, which runs first: files initialise in name order).
func init() {
	commands["locks"] = command{optSpec{}, "[path] # lock recipes' holders and waiters at or under path (default /)", cmdLocks}
}

// cmdLocks prints the lock view: locks [path]. It works over the client
// protocol alone (getChildren and exists), so it runs against ZooKeeper 3.8
// as well as zkd: it walks the tree below path, and for each znode with
// children named as Curator's, Kazoo's or go-zk's lock recipes name them it
// reads their Stat and prints the holders and waiters in queue order, with
// each one's session, czxid (the fencing number; see fence.go), sequence
// and age. The walk costs one round trip per znode below path, so give the
// lock's parent on large trees. The client address of a session is not visible over the
// client protocol: zkd's admin command /commands/locks adds it.
func cmdLocks(sh *Shell, p *parsedArgs) error {
	path := "/"
	if len(p.args) > 1 {
		path = p.args[1]
	}
	if err := checkPath(path); err != nil {
		return err
	}
	groups, err := lockGroups(sh.sess, path)
	if err != nil {
		return zkErr(err, path)
	}
	locks := lockview.Build(groups, func(int64) string { return "" }, time.Now().UnixMilli())
	printLocks(sh.out, path, locks)
	return nil
}

// lockGroups walks the tree at and below root and returns, by parent, the
// ephemeral children that are named as lock nodes, with their Stat.
// Nodes that vanish or cannot be read during the walk are skipped; an error
// on root itself is returned.
func lockGroups(sess *Session, root string) ([]datatree.EphemeralGroup, error) {
	var out []datatree.EphemeralGroup
	stack := []string{root}
	for len(stack) > 0 {
		parent := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		resp := &jute.GetChildrenResponse{}
		if err := sess.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: parent}, resp); err != nil {
			if parent == root || errors.Is(err, errNotConnected) {
				return nil, err
			}
			continue
		}
		var g datatree.EphemeralGroup
		children := slices.Clone(resp.Children)
		slices.Sort(children)
		for i := len(children) - 1; i >= 0; i-- {
			name := children[i]
			child := strings.TrimSuffix(parent, "/") + "/" + name
			if _, _, ok := lockview.ParseName(name); !ok {
				stack = append(stack, child)
				continue
			}
			st := &jute.ExistsResponse{}
			if err := sess.Call(jute.OpExists, &jute.ExistsRequest{Path: child}, st); err != nil {
				if errors.Is(err, errNotConnected) {
					return nil, err
				}
				continue
			}
			if st.Stat.EphemeralOwner == 0 {
				stack = append(stack, child) // a persistent node that looks like one: not a contender
				continue
			}
			g.Children = append(g.Children, datatree.EphemeralChild{Name: name, Stat: st.Stat})
		}
		if len(g.Children) > 0 {
			g.Parent = parent
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b datatree.EphemeralGroup) int { return strings.Compare(a.Parent, b.Parent) })
	return out, nil
}

// printLocks writes the lock view as one table per lock path.
func printLocks(w io.Writer, root string, locks []lockview.Lock) {
	if len(locks) == 0 {
		fmt.Fprintf(w, "No locks at or under %s\n", root)
		return
	}
	for i, l := range locks {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s): %d holding, %d waiting\n", l.Path, l.Kind, len(l.Holders), len(l.Waiters))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ROLE\tMODE\tSEQUENCE\tCZXID\tSESSION\tAGE\tNODE")
		row := func(role string, n lockview.Node) {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t0x%x\t%s\t%s\t%s\n", role, n.Mode, n.Sequence, n.Czxid, n.Session,
				(time.Duration(n.AgeMs) * time.Millisecond).Round(time.Millisecond), n.Name)
		}
		for _, n := range l.Holders {
			row("holder", n)
		}
		for i, n := range l.Waiters {
			row(fmt.Sprintf("waiter %d", i+1), n)
		}
		tw.Flush()
	}
}
