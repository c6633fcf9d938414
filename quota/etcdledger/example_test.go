//go:build embedetcd

package etcdledger_test

import (
	"context"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
)

// A coordinator on etcd: the server fences the ledger (wins the
// election), and every grant is written before it is answered.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "etcdledger-example")
	defer os.RemoveAll(dir)
	m, err := etcdmember.StartMember(ctx, etcdmember.MemberConfig{DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		panic(err)
	}
	defer cli.Close()

	ledger, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Cluster: "example", Candidate: "http://127.0.0.1:7070"})
	if err != nil {
		panic(err)
	}
	defer ledger.Close()
	tenant := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tenant}}, ledger)
	if err != nil {
		panic(err)
	}
	go srv.Run(ctx)
	g, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println("lease", g.Lease.ID, "durable at epoch > 0:", g.Lease.Epoch > 0)
	// Output: lease 1 durable at epoch > 0: true
}
