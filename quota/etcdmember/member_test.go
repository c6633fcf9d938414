package etcdmember

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestValidate: a member needs a data directory, with the embedded etcd
// or without; RunMember refuses one without before anything else.
func TestValidate(t *testing.T) {
	if err := (MemberConfig{DataDir: "d"}).Validate(); err != nil {
		t.Errorf("Validate with a data directory: %v", err)
	}
	for _, err := range []error{(MemberConfig{}).Validate(), RunMember(context.Background(), MemberConfig{Name: "m"})} {
		if !errors.Is(err, ErrConfig) || !strings.HasSuffix(err.Error(), "--data-dir is required") {
			t.Errorf("no data directory: %v; want ErrConfig naming --data-dir", err)
		}
	}
}
