//go:build embedetcd

package etcdmember_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/afloat/afloat/quota/etcdmember"
)

// A member of its own, on a free loopback port, until Close.
func ExampleStartMember() {
	dir, err := os.MkdirTemp("", "etcdmember-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	m, err := etcdmember.StartMember(context.Background(), etcdmember.MemberConfig{DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	fmt.Println(etcdmember.EmbeddedEtcd, strings.HasPrefix(m.ClientURL, "http://127.0.0.1:"))
	// Output: true true
}
