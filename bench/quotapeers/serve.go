package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
	guber "github.com/gubernator-io/gubernator/v2"
	"github.com/sirupsen/logrus"
)

// serve runs one service of the throughput search in this process (the
// harness starts it as a child, pinned to one core): "afloat" — a region
// agent with its Envoy RLS gRPC endpoint and its HTTP decision API,
// leasing from a coordinator in memory beside it, as afloat quota region
// runs (GOGC from the environment: the harness sets agent.GCPercent) — or
// "gubernator", one Gubernator daemon that owns every key. It prints
// "grpc ADDR" (and "http ADDR") and serves until its standard input
// closes.
func serve(what string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch what {
	case "afloat":
		if err := serveAfloat(ctx); err != nil {
			return err
		}
	case "gubernator":
		log := logrus.New()
		log.SetOutput(io.Discard)
		d, err := guber.SpawnDaemon(ctx, guber.DaemonConfig{
			GRPCListenAddress: "127.0.0.1:0", HTTPListenAddress: "127.0.0.1:0", InstanceID: "solo", Logger: log,
		})
		if err != nil {
			return err
		}
		defer d.Close()
		addr := d.GRPCListeners[0].Addr().String()
		d.V1Server.SetPeers([]guber.PeerInfo{{GRPCAddress: addr, IsOwner: true}})
		fmt.Printf("grpc %s\n", addr)
	default:
		return fmt.Errorf("serve %q: want afloat or gubernator", what)
	}
	io.Copy(io.Discard, os.Stdin) // until the harness closes it
	return nil
}

// afloatConfig is the tenant in afloat's config: one region, and the RLS
// descriptor every service here is asked.
func afloatConfig(t tenant) string {
	return fmt.Sprintf(`regions:
  eu: {token: "bench-token-of-region-eu"}
tenants:
  - {name: %s, rate: %g, burst: %g}
envoy:
  domain: %s
  descriptors:
    - entries: [{key: tenant, value: %s}]
      tenant: %s
`, tenantName, t.Rate, t.Burst, rlsDomain, tenantName, tenantName)
}

func serveAfloat(ctx context.Context) error {
	t := tenant{Rate: 500, Burst: 6000}
	cfg, err := config.ParseConfig([]byte(afloatConfig(t)))
	if err != nil {
		return err
	}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		return err
	}
	go srv.Run(ctx)
	h, err := remote.Handler(remote.HandlerConfig{Tokens: cfg.Tokens(), Lead: func() (remote.Backend, string) { return srv, "" }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	gport, err := freePort()
	if err != nil {
		return err
	}
	ready := make(chan string, 1)
	a, err := agent.New(agent.Options{
		Config: cfg, Name: "eu", Coordinators: []string{"http://" + ln.Addr().String()},
		Listen: "127.0.0.1:0", GRPCListen: "127.0.0.1:" + strconv.Itoa(gport),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(addr string) { ready <- addr },
	})
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	select {
	case addr := <-ready:
		fmt.Printf("grpc 127.0.0.1:%d\nhttp %s\n", gport, addr)
		return nil
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("serve afloat: the agent did not serve in 10 s")
	}
}
