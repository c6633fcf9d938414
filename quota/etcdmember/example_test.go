//go:build !embedetcd

package etcdmember_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/afloat/afloat/quota/etcdmember"
)

// A binary built without the tag embedetcd has no embedded member: the
// quota then needs an etcd cluster (--etcd).
func ExampleStartMember() {
	_, err := etcdmember.StartMember(context.Background(), etcdmember.MemberConfig{DataDir: "/nonexistent"})
	fmt.Println(etcdmember.EmbeddedEtcd, errors.Is(err, etcdmember.ErrNoEmbeddedEtcd))
	// Output: false true
}
