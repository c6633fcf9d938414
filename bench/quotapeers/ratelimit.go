package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	rlsv3common "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The Envoy rate-limit (RLS) request every RLS service here is asked: one
// descriptor naming the tenant, in one domain, one hit.
const rlsDomain = "afloat-bench"

func rlsRequest() *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{
		Domain: rlsDomain,
		Descriptors: []*rlsv3common.RateLimitDescriptor{{
			Entries: []*rlsv3common.RateLimitDescriptor_Entry{{Key: "tenant", Value: tenantName}},
		}},
		HitsAddend: 1,
	}
}

// rlsSystem drives one RLS service per region over gRPC: envoyproxy/ratelimit
// and afloat's region agent speak the same protocol, so one client serves
// both. A call that fails (an error or no answer within callTimeout) is a
// refusal, as Envoy's filter with failure_mode_deny: true treats it.
type rlsSystem struct {
	conns   []*grpc.ClientConn
	clients []rlsv3.RateLimitServiceClient
	req     *rlsv3.RateLimitRequest
	cut     func(r int, cut bool)
	closers []func()
}

// callTimeout bounds one decision in the bound run: a region cut off from
// its store waits no longer than this for an answer.
const callTimeout = 2 * time.Second

func dialRLS(addr string) (*grpc.ClientConn, rlsv3.RateLimitServiceClient, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return cc, rlsv3.NewRateLimitServiceClient(cc), nil
}

func (s *rlsSystem) add(addr string) error {
	cc, c, err := dialRLS(addr)
	if err != nil {
		return err
	}
	s.conns = append(s.conns, cc)
	s.clients = append(s.clients, c)
	return nil
}

func (s *rlsSystem) allow(ctx context.Context, r int) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := s.clients[r].ShouldRateLimit(ctx, s.req)
	return err == nil && resp.GetOverallCode() == rlsv3.RateLimitResponse_OK
}

func (s *rlsSystem) partition(r int, cut bool) {
	if s.cut != nil {
		s.cut(r, cut)
	}
}

func (s *rlsSystem) close() {
	for _, c := range s.conns {
		c.Close()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// waitRLS calls the service until it answers OK or 15 s pass (it loads its
// config and connects to its store after it listens).
func waitRLS(ctx context.Context, c rlsv3.RateLimitServiceClient) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := c.ShouldRateLimit(cctx, rlsRequest())
		cancel()
		if err == nil && resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("overall code %v", resp.GetOverallCode())
			}
			return fmt.Errorf("no answer in 15 s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a free loopback port: listened on, then closed for the child
// that will listen on it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// process is a child process the harness started; stop ends it (and only
// it) and waits.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	tail []string // its last lines of output, for errors
}

// startProcess starts argv, pinned to cpus (taskset -c) when cpus is not
// empty.
func startProcess(argv []string, env []string, cpus string) (*process, error) {
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.tail = append(p.tail, sc.Text())
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
		}
		cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

func (p *process) stop() {
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// redisServer starts a redis-server on a free loopback port, without
// persistence, pinned to cpus if not empty.
func redisServer(cpus string) (*process, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	p, err := startProcess([]string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes"}, nil, cpus)
	if err != nil {
		return nil, "", fmt.Errorf("redis-server: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p, addr, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, "", fmt.Errorf("redis-server: not listening in 10 s: %s", p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildRatelimit builds envoyproxy/ratelimit's service (its
// src/service_cmd, at the version ratelimitd/go.mod pins: a module of its
// own, as its dependencies' versions differ from Gubernator's) into dir.
func buildRatelimit(dir string) (string, error) {
	if p := os.Getenv("QUOTAPEERS_RATELIMIT"); p != "" {
		return p, nil // a binary built before, for repeated runs
	}
	exe := filepath.Join(dir, "ratelimit")
	cmd := exec.Command("go", "build", "-o", exe, "github.com/envoyproxy/ratelimit/src/service_cmd")
	cmd.Dir = "ratelimitd"
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building envoyproxy/ratelimit (in bench/quotapeers/ratelimitd): %w: %s", err, out)
	}
	return exe, nil
}

// ratelimitConfig is the tenant in envoyproxy/ratelimit's config: a fixed
// window of one second holding perSecond requests.
func ratelimitConfig(perSecond int) string {
	return fmt.Sprintf(`domain: %s
descriptors:
  - key: tenant
    value: %s
    rate_limit:
      unit: second
      requests_per_unit: %d
`, rlsDomain, tenantName, perSecond)
}

// startRatelimit runs one envoyproxy/ratelimit service on redisAddr with the
// tenant at perSecond, every listener on a free loopback port, stats off
// (no statsd to send to), pinned to cpus if not empty; it returns the
// service and its gRPC address once it answers.
func startRatelimit(ctx context.Context, exe, dir, redisAddr string, perSecond, pool int, cpus string) (*process, string, error) {
	root := filepath.Join(dir, "runtime")
	sub, err := os.MkdirTemp(dir, "rl")
	if err != nil {
		return nil, "", err
	}
	name := filepath.Base(sub)
	if err := os.MkdirAll(filepath.Join(root, name, "config"), 0o755); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(root, name, "config", "bench.yaml"), []byte(ratelimitConfig(perSecond)), 0o644); err != nil {
		return nil, "", err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, "", err
		}
	}
	env := []string{
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(ports[0]),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(ports[1]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(ports[2]),
		"USE_STATSD=false", "DISABLE_STATS=true", "USE_PROMETHEUS=false", "TRACING_ENABLED=false",
		"LOG_LEVEL=warn",
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=" + name, "RUNTIME_APPDIRECTORY=config", "RUNTIME_WATCH_ROOT=false",
		"BACKEND_TYPE=redis", "REDIS_SOCKET_TYPE=tcp", "REDIS_TYPE=SINGLE", "REDIS_URL=" + redisAddr,
		"REDIS_POOL_SIZE=" + strconv.Itoa(pool), "REDIS_TIMEOUT=" + callTimeout.String(),
	}
	p, err := startProcess([]string{exe}, env, cpus)
	if err != nil {
		return nil, "", fmt.Errorf("ratelimit: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	cc, c, err := dialRLS(addr)
	if err != nil {
		p.stop()
		return nil, "", err
	}
	defer cc.Close()
	if err := waitRLS(ctx, c); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("ratelimit: %w; its output: %s", err, p.output())
	}
	return p, addr, nil
}

// ratelimitDeployment is how the three regions' ratelimit services share
// Redis.
type ratelimitDeployment int

const (
	// rlShared: one Redis, in the owner's region; the other regions reach
	// it through a proxy that adds the cross-region delay, and the cut
	// region's proxy is what the partition cuts. Consistent: one counter.
	rlShared ratelimitDeployment = iota
	// rlPerRegion: a Redis per region, each service at R/3 — that
	// ecosystem's naive split; the partition changes nothing.
	rlPerRegion
)

// crossRegion is the delay put on the path from a region to a store in
// another region (each way's bytes toward the store are held this long, so
// a round trip takes at least this).
const crossRegion = 30 * time.Millisecond

// redisPool: connections from each ratelimit service to Redis. Its default
// (10) holds a region 30 ms from Redis to 10/30 ms = 333 decisions a
// second, below the hot region's demand; a user would raise it.
const redisPool = 64

func newRatelimit(ctx context.Context, exe, dir string, t tenant, names []string, owner int, dep ratelimitDeployment) (*rlsSystem, error) {
	s := &rlsSystem{req: rlsRequest()}
	fail := func(err error) (*rlsSystem, error) { s.close(); return nil, fmt.Errorf("ratelimit: %w", err) }
	switch dep {
	case rlShared:
		rp, raddr, err := redisServer("")
		if err != nil {
			return fail(err)
		}
		s.closers = append(s.closers, rp.stop)
		proxies := make([]*faultProxy, len(names))
		for r := range names {
			target := raddr
			if r != owner {
				p, err := newDelayProxy(raddr, crossRegion)
				if err != nil {
					return fail(err)
				}
				s.closers = append(s.closers, p.shutdown)
				proxies[r] = p
				target = p.addr()
			}
			sp, addr, err := startRatelimit(ctx, exe, dir, target, int(t.Rate), redisPool, "")
			if err != nil {
				return fail(err)
			}
			s.closers = append(s.closers, sp.stop)
			if err := s.add(addr); err != nil {
				return fail(err)
			}
		}
		s.cut = func(r int, cut bool) {
			if proxies[r] != nil {
				proxies[r].setCut(cut)
			}
		}
	case rlPerRegion:
		for range names {
			rp, raddr, err := redisServer("")
			if err != nil {
				return fail(err)
			}
			s.closers = append(s.closers, rp.stop)
			sp, addr, err := startRatelimit(ctx, exe, dir, raddr, int(t.Rate)/len(names), redisPool, "")
			if err != nil {
				return fail(err)
			}
			s.closers = append(s.closers, sp.stop)
			if err := s.add(addr); err != nil {
				return fail(err)
			}
		}
	default:
		return fail(errors.New("unknown deployment"))
	}
	return s, nil
}

// ratelimitVersion is the envoyproxy/ratelimit version ratelimitd/go.mod
// pins.
const ratelimitVersion = "v1.4.1-0.20260122083618-3fb702589d36"
