package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/afloat/afloat/quota/internal/ops"
)

// fronts are the agent's other doors to its limiter: Envoy's rate-limit
// service over gRPC and the reverse proxy.
type fronts struct {
	mu        sync.Mutex
	grpc      *grpc.Server
	grpcAddr  string
	proxy     *http.Server
	proxyAddr string
}

// checkFronts refuses options the fronts cannot run with, before
// anything starts: a front without its config section, a bad upstream,
// a gRPC service open beyond loopback without a token. Its refusals wrap
// ErrOptions.
func (a *Agent) checkFronts() error {
	o := &a.o
	if e := &o.Config.Envoy; e.Configured() {
		a.envoy = newEnvoyIndex(e)
	}
	if o.GRPCListen != "" {
		if a.envoy == nil {
			return fmt.Errorf("%w: --grpc-listen: the config has no envoy section (docs/quota/config.md, \"envoy\")", ErrOptions)
		}
		if o.Config.Envoy.Token == "" && !isLoopback(o.GRPCListen) {
			return fmt.Errorf("%w: --grpc-listen %s: not a loopback address: set envoy.token (or token_file) so that only Envoy may spend the quota", ErrOptions, o.GRPCListen)
		}
	}
	switch {
	case o.Upstream == "" && o.ProxyListen != "":
		return fmt.Errorf("%w: --proxy-listen: the proxy needs --upstream URL", ErrOptions)
	case o.Upstream != "":
		if _, err := CheckUpstream(o.Upstream); err != nil {
			return err
		}
		if !o.Config.Proxy.Configured() {
			return fmt.Errorf("%w: --upstream: the config has no proxy section: routes or tenant_header (docs/quota/config.md, \"proxy\")", ErrOptions)
		}
	}
	return nil
}

// startFronts starts what the options ask for; each server's end is sent
// to serveErr.
func (a *Agent) startFronts(serveErr chan<- error) error {
	o := &a.o
	f := &a.front
	if o.GRPCListen != "" {
		gs, err := a.GRPCServer()
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", o.GRPCListen)
		if err != nil {
			return fmt.Errorf("agent: --grpc-listen %s: %w", o.GRPCListen, err)
		}
		if o.certs != nil {
			// gRPC over TLS: HTTP/2 is negotiated by ALPN, which a raw TLS
			// listener would not offer.
			cfg := o.certs.Config(tls.RequireAndVerifyClientCert)
			cfg.NextProtos = []string{"h2"}
			ln = tls.NewListener(ln, cfg)
		}
		f.mu.Lock()
		f.grpc, f.grpcAddr = gs, ln.Addr().String()
		f.mu.Unlock()
		go func() {
			if err := gs.Serve(ln); err != nil {
				serveErr <- fmt.Errorf("gRPC: %w", err)
			}
		}()
		o.Logger.Info("quota region: serving Envoy's rate-limit service", "grpc_listen", ln.Addr().String(), "domain", o.Config.Envoy.Domain, "tls", o.certs != nil)
		if w := ops.PlainWarning("quota region", "--grpc-listen", ln.Addr().String(), o.certs != nil); w != "" {
			o.Logger.Warn(w)
		}
	}
	if o.Upstream != "" {
		h, err := a.ProxyHandler(o.Upstream)
		if err != nil {
			a.stopFronts(context.Background())
			return err
		}
		ln, err := net.Listen("tcp", o.ProxyListen)
		if err != nil {
			a.stopFronts(context.Background())
			return fmt.Errorf("agent: --proxy-listen %s: %w", o.ProxyListen, err)
		}
		// No read or write timeout: the proxy streams bodies of any length
		// both ways; idle and header reads are bounded.
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 1 << 20,
			ErrorLog: ops.ServerLog(o.Logger)}
		if o.certs != nil {
			// The proxy serves end users: TLS, but no client certificate.
			ln = tls.NewListener(ln, o.certs.Config(tls.NoClientCert))
		}
		f.mu.Lock()
		f.proxy, f.proxyAddr = hs, ln.Addr().String()
		f.mu.Unlock()
		go func() {
			if err := hs.Serve(ln); err != http.ErrServerClosed {
				serveErr <- fmt.Errorf("proxy: %w", err)
			}
		}()
		u, _ := CheckUpstream(o.Upstream)
		o.Logger.Info("quota region: proxying", "proxy_listen", ln.Addr().String(), "upstream", u.Redacted(), "tls", o.certs != nil)
		if w := ops.PlainWarning("quota region", "--proxy-listen", ln.Addr().String(), o.certs != nil); w != "" {
			o.Logger.Warn(w)
		}
	}
	return nil
}

// stopFronts stops the fronts, letting calls under way finish until ctx
// ends.
func (a *Agent) stopFronts(ctx context.Context) {
	f := &a.front
	f.mu.Lock()
	gs, ps := f.grpc, f.proxy
	f.grpc, f.proxy = nil, nil
	f.mu.Unlock()
	if ps != nil {
		ps.Shutdown(ctx) //nolint:errcheck // then closed
		ps.Close()
	}
	if gs != nil {
		done := make(chan struct{})
		go func() { gs.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			gs.Stop()
		}
	}
}

// GRPCAddr is the address Envoy's rate-limit service listens on while Run
// serves it; "" otherwise.
func (a *Agent) GRPCAddr() string {
	a.front.mu.Lock()
	defer a.front.mu.Unlock()
	return a.front.grpcAddr
}

// ProxyAddr is the address the reverse proxy listens on while Run serves
// it; "" otherwise.
func (a *Agent) ProxyAddr() string {
	a.front.mu.Lock()
	defer a.front.mu.Unlock()
	return a.front.proxyAddr
}
