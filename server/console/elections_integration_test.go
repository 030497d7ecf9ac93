package console_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/zkd/zkd/compat/zkproc"
)

// TestIntegration_ConsoleElectionsKept: a restarted member of an ensemble
// still lists on its Ensemble page the elections it saw before, and says
// it has been recording since its first start.
func TestIntegration_ConsoleElectionsKept(t *testing.T) {
	s := zkproc.StartZkdEnsemble(t, 3, zkproc.Options{AdminServer: true, TickTime: 200})[0]
	type view struct {
		Since     int64 `json:"elections_since"`
		Elections []struct {
			At int64 `json:"at"`
		} `json:"elections"`
	}
	ensemble := func() (view, error) {
		var v view
		res, err := http.Get("http://" + s.AdminAddr + "/console/api/ensemble")
		if err != nil {
			return v, err
		}
		defer res.Body.Close()
		return v, json.NewDecoder(res.Body).Decode(&v)
	}
	var before view
	// The member's own start-up election is recorded at the first sample.
	waitFor(t, "the start-up election on the Ensemble page", func() bool {
		v, err := ensemble()
		before = v
		return err == nil && len(v.Elections) >= 1
	})
	s.Restart(t)
	var after view
	waitFor(t, "the restarted member's start-up election", func() bool {
		v, err := ensemble()
		after = v
		return err == nil && len(v.Elections) > len(before.Elections)
	})
	if after.Since != before.Since || after.Elections[0].At != before.Elections[0].At {
		t.Errorf("after a restart: since %d, first election at %d; before: %d, %d", after.Since, after.Elections[0].At, before.Since, before.Elections[0].At)
	}
}
