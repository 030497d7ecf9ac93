package quorum

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkd/zkd/jute"
)

const threeMembers = "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
	"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
	"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
	"version=0"

func TestReconfig(t *testing.T) {
	tests := []struct {
		name   string
		req    jute.ReconfigRequest
		want   string
		unauth bool // the client may not write /zookeeper/config
		err    jute.Code
	}{
		{
			name: "remove one",
			req:  jute.ReconfigRequest{LeavingServers: "3", CurConfigId: -1},
			want: "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
				"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\nversion=1a00000005",
		},
		{
			name: "add an observer and a participant, current version given",
			req:  jute.ReconfigRequest{JoiningServers: "server.5=127.0.0.1:2005:3005:observer;4005,server.4=127.0.0.1:2004:3004;127.0.0.1:4004", CurConfigId: 0},
			want: strings.TrimSuffix(threeMembers, "version=0") +
				"server.4=127.0.0.1:2004:3004:participant;127.0.0.1:4004\n" +
				"server.5=127.0.0.1:2005:3005:observer;0.0.0.0:4005\nversion=1a00000005",
		},
		{
			name: "replace a member's addresses",
			req:  jute.ReconfigRequest{JoiningServers: "server.3=127.0.0.1:2013:3013;4013", LeavingServers: "", CurConfigId: -1},
			want: strings.Replace(strings.TrimSuffix(threeMembers, "version=0"), "2003:3003:participant;127.0.0.1:4003", "2013:3013:participant;0.0.0.0:4013", 1) + "version=1a00000005",
		},
		{
			name: "non-incremental, comma separated",
			req:  jute.ReconfigRequest{NewMembers: "server.1=127.0.0.1:2001:3001;4001,server.2=127.0.0.1:2002:3002;4002", CurConfigId: -1},
			want: "server.1=127.0.0.1:2001:3001:participant;0.0.0.0:4001\n" +
				"server.2=127.0.0.1:2002:3002:participant;0.0.0.0:4002\nversion=1a00000005",
		},
		{name: "stale version", req: jute.ReconfigRequest{LeavingServers: "3", CurConfigId: 7}, err: jute.CodeBadVersion},
		{name: "one voter left", req: jute.ReconfigRequest{LeavingServers: "2,3", CurConfigId: -1}, err: jute.CodeBadArguments},
		{name: "joiner without client port", req: jute.ReconfigRequest{JoiningServers: "server.4=127.0.0.1:2004:3004", CurConfigId: -1}, err: jute.CodeBadArguments},
		{name: "joiner without =", req: jute.ReconfigRequest{JoiningServers: "server.4", CurConfigId: -1}, err: jute.CodeBadArguments},
		{name: "joiner reusing an address", req: jute.ReconfigRequest{JoiningServers: "server.4=127.0.0.1:2001:3004;4004", CurConfigId: -1}, err: jute.CodeBadArguments},
		{name: "leaving id not a number", req: jute.ReconfigRequest{LeavingServers: "x", CurConfigId: -1}, err: jute.CodeMarshallingError},
		{name: "joining id not a number", req: jute.ReconfigRequest{JoiningServers: "server.x=127.0.0.1:2004:3004;4004", CurConfigId: -1}, err: jute.CodeMarshallingError},
		{name: "id zkd cannot run", req: jute.ReconfigRequest{JoiningServers: "server.999=0.0.0.0:1234:2345:observer;3456", CurConfigId: -1}, err: jute.CodeBadArguments},
		{name: "unauthorized, arguments fine", req: jute.ReconfigRequest{LeavingServers: "3", CurConfigId: -1}, unauth: true, err: jute.CodeNoAuth},
		{name: "unauthorized, id zkd cannot run", req: jute.ReconfigRequest{JoiningServers: "server.999=0.0.0.0:1234:2345:observer;3456", CurConfigId: -1}, unauth: true, err: jute.CodeNoAuth},
		{name: "unauthorized, malformed joiner", req: jute.ReconfigRequest{JoiningServers: "server.4=nonsense", CurConfigId: -1}, unauth: true, err: jute.CodeBadArguments},
		{name: "unauthorized, stale version", req: jute.ReconfigRequest{LeavingServers: "3", CurConfigId: 7}, unauth: true, err: jute.CodeBadVersion},
		{name: "bad new members", req: jute.ReconfigRequest{NewMembers: "server.1=nonsense", CurConfigId: -1}, err: jute.CodeBadArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Reconfig([]byte(threeMembers), &tt.req, 0x1a00000005, func() bool { return !tt.unauth })
			if tt.err != 0 {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
			peers, version, err := ParseConfigData(got)
			if err != nil || version != 0x1a00000005 || len(peers) == 0 {
				t.Fatalf("result does not parse back: %v %x %v", peers, version, err)
			}
		})
	}
}
