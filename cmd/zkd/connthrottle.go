package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkd/zkd/server"
)

// connThrottleConfig reads ZooKeeper 3.8's connection throttle
// (BlueThrottle) properties, zookeeper.connection_throttle_*. ZooKeeper
// quietly replaces a weight that is not positive, or below the local
// session weight, with another; zkd refuses such a setting at start
// instead, naming it, as it refuses a value that is not a number (where
// ZooKeeper's Integer.getInteger falls back to the default).
func connThrottleConfig(c *zooCfg) (server.ConnThrottleConfig, error) {
	tc := server.DefaultConnThrottle()
	const p = "zookeeper.connection_throttle_"
	ints := []struct {
		key string
		def int64
		dst *int64
	}{
		{"tokens", 0, new(int64)},
		{"fill_time", 1, new(int64)},
		{"fill_count", 1, new(int64)},
		{"freeze_time", -1, new(int64)},
		{"global_session_weight", 3, new(int64)},
		{"local_session_weight", 1, new(int64)},
		{"renew_session_weight", 2, new(int64)},
	}
	for _, k := range ints {
		v, err := c.propInt(p+k.key, k.def)
		if err != nil {
			return tc, err
		}
		if v != int64(int32(v)) {
			return tc, fmt.Errorf("zkd: property %s%s=%d does not fit in an int", p, k.key, v)
		}
		*k.dst = v
	}
	floats := []struct {
		key string
		dst *float64
	}{
		{"drop_increase", &tc.DropIncrease},
		{"drop_decrease", &tc.DropDecrease},
		{"decrease_ratio", &tc.DecreaseRatio},
	}
	for _, k := range floats {
		v, ok := c.prop(p + k.key)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return tc, fmt.Errorf("zkd: property %s%s=%q is not a number", p, k.key, v)
		}
		*k.dst = f
	}
	tc.Tokens = int(*ints[0].dst)
	tc.FillTime = time.Duration(*ints[1].dst) * time.Millisecond
	tc.FillCount = int(*ints[2].dst)
	tc.FreezeTime = time.Duration(*ints[3].dst) * time.Millisecond
	if *ints[3].dst == -1 {
		tc.FreezeTime = -1
	}
	tc.WeightEnabled = c.propBool(p + "weight_enabled")
	global, local, renew := *ints[4].dst, *ints[5].dst, *ints[6].dst
	tc.GlobalWeight, tc.RenewWeight = int(global), int(renew)
	switch {
	case tc.Tokens < 0:
		return tc, fmt.Errorf("zkd: %stokens=%d must not be negative", p, tc.Tokens)
	case tc.Tokens > 0 && tc.FillTime <= 0:
		return tc, fmt.Errorf("zkd: %sfill_time=%d must be positive (ms)", p, *ints[1].dst)
	case *ints[3].dst < -1:
		// ZooKeeper turns random dropping off for -1 only; another negative
		// value would adjust the drop probability at every connect.
		return tc, fmt.Errorf("zkd: %sfreeze_time=%d: want -1 (off) or a time in ms", p, *ints[3].dst)
	case tc.Tokens > 0 && tc.FillCount < 0:
		return tc, fmt.Errorf("zkd: %sfill_count=%d must not be negative", p, tc.FillCount)
	case global <= 0 || local <= 0 || renew <= 0:
		return tc, fmt.Errorf("zkd: %sglobal_session_weight=%d, _local_session_weight=%d and _renew_session_weight=%d must be positive",
			p, global, local, renew)
	case global < local || renew < local:
		return tc, fmt.Errorf("zkd: %sglobal_session_weight=%d and _renew_session_weight=%d must not be below _local_session_weight=%d",
			p, global, renew, local)
	}
	return tc, nil
}
