//go:build !embedetcd

package etcdmember

import (
	"context"
	"errors"
)

const embeddedEtcd = false

// ErrNoEmbeddedEtcd: this binary was built without the embedded etcd.
var ErrNoEmbeddedEtcd = errors.New("etcdmember: this binary has no embedded etcd (build it with -tags embedetcd: go run -tags embedetcd ./cmd/afloat ...), or give --etcd ENDPOINTS of an etcd cluster")

// Member is a running embedded etcd member.
type Member struct {
	// ClientURL is where its clients connect.
	ClientURL string
}

// StartMember fails: see ErrNoEmbeddedEtcd.
func StartMember(ctx context.Context, cfg MemberConfig) (*Member, error) {
	return nil, ErrNoEmbeddedEtcd
}

// Close does nothing.
func (m *Member) Close() {}

// RunMember refuses what MemberConfig.Validate refuses, else fails: see
// ErrNoEmbeddedEtcd.
func RunMember(ctx context.Context, cfg MemberConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return ErrNoEmbeddedEtcd
}
