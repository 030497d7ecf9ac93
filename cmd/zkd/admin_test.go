package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_EnsembleAdminCommands: on a 3-member ensemble every
// member's /commands/leader names the same leader, exactly one says it
// leads, voting_view lists the three voters, and zabstate, observers,
// initial_configuration and system_properties answer with ZooKeeper's
// fields.
func TestIntegration_EnsembleAdminCommands(t *testing.T) {
	members := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{AdminServer: true, TickTime: 200,
		ExtraCfg: map[string]string{"extendedTypesEnabled": "true"}})
	get := func(addr, cmd string) map[string]any {
		t.Helper()
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/commands/" + cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m["error"] != nil {
			t.Fatalf("%s on %s: %v", cmd, addr, m["error"])
		}
		return m
	}
	leaders, ids, digests := 0, map[float64]bool{}, map[float64]any{}
	for _, s := range members {
		if s.AdminAddr == "" {
			t.Fatal("admin server not enabled")
		}
		m := get(s.AdminAddr, "leader")
		if m["is_leader"] == true {
			leaders++
		}
		id, _ := m["leader_id"].(float64)
		ids[id] = true
		if m["leader_ip"] != "127.0.0.1" {
			t.Errorf("leader_ip %v", m["leader_ip"])
		}
		view, _ := get(s.AdminAddr, "voting_view")["current_config"].(map[string]any)
		if len(view) != 3 {
			t.Errorf("voting_view %v", view)
		}
		if z := get(s.AdminAddr, "zabstate"); z["zabstate"] != "broadcast" || z["voting"] != true {
			t.Errorf("zabstate %v", z)
		}
		if o := get(s.AdminAddr, "observers"); o["synced_observers"] != float64(0) {
			t.Errorf("observers %v", o)
		}
		if ic, _ := get(s.AdminAddr, "initial_configuration")["initial_configuration"].(string); strings.Count(ic, "server.") != 3 {
			t.Errorf("initial_configuration %q", ic)
		}
		if ls := get(s.AdminAddr, "last_snapshot"); ls["zxid"] == nil || ls["timestamp"] == nil {
			t.Errorf("last_snapshot %v", ls)
		}
		d, _ := get(s.AdminAddr, "hash")["digests"].([]any)
		if len(d) == 0 {
			t.Errorf("hash %v", d)
		}
		for _, e := range d {
			// ZooKeeper's digest (version 2); members agree at a zxid.
			m, _ := e.(map[string]any)
			z, _ := m["zxid"].(float64)
			if m["digestVersion"] != float64(2) || (digests[z] != nil && digests[z] != m["digest"]) {
				t.Errorf("hash entry %v; another member had digest %v at that zxid", m, digests[z])
			}
			digests[z] = m["digest"]
		}
		if sp := get(s.AdminAddr, "system_properties"); sp["zookeeper.extendedTypesEnabled"] != "true" {
			t.Errorf("system_properties %v", sp)
		}
	}
	if leaders != 1 || len(ids) != 1 || ids[0] {
		t.Fatalf("%d members lead; leader ids %v", leaders, ids)
	}
}
