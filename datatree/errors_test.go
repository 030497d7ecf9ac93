package datatree

import (
	"errors"
	"testing"

	"github.com/zkd/zkd/jute"
)

func TestErrors(t *testing.T) {
	tr := New(DefaultConfig())
	_, _, err := tr.GetData("/missing", nil, nil)
	if err == nil || err.Error() != "datatree: no node: /missing" {
		t.Fatalf("message %v", err)
	}
	for _, target := range []error{ErrNoNode, jute.CodeNoNode} {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(%v, %v) = false", err, target)
		}
	}
	if errors.Is(err, ErrNodeExists) || errors.Is(err, jute.CodeNodeExists) {
		t.Error("matches the wrong sentinel")
	}
	var coded interface{ Code() jute.Code }
	if !errors.As(err, &coded) || coded.Code() != jute.CodeNoNode {
		t.Fatal("no Code()")
	}
	for _, tc := range []struct {
		err  *Error
		code jute.Code
	}{
		{ErrNoNode, jute.CodeNoNode},
		{ErrNodeExists, jute.CodeNodeExists},
		{ErrNotEmpty, jute.CodeNotEmpty},
		{ErrBadVersion, jute.CodeBadVersion},
		{ErrNoChildrenForEphemerals, jute.CodeNoChildrenForEphemerals},
		{ErrBadArguments, jute.CodeBadArguments},
		{ErrInvalidACL, jute.CodeInvalidACL},
		{ErrNoAuth, jute.CodeNoAuth},
		{ErrUnimplemented, jute.CodeUnimplemented},
		{ErrNoWatcher, jute.CodeNoWatcher},
		{ErrRuntimeInconsistency, jute.CodeRuntimeInconsistency},
	} {
		if tc.err.Code() != tc.code || !errors.Is(tc.err, tc.code) {
			t.Errorf("%v: code %d, want %d", tc.err, tc.err.Code(), tc.code)
		}
	}
}
