package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its loopback address to a target.
// It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
}

// New listens on a free loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	return Listen("127.0.0.1:0", target)
}

// Listen listens on addr (a loopback address) and forwards to target.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is http:// and the proxy's address.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// Cut drops every connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.done {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient accept error (too many files)
			continue
		}
		if !p.track(in) {
			continue
		}
		p.wg.Go(func() { p.serve(in) })
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.untrack(in)
	out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	if !p.track(out) {
		return
	}
	defer p.untrack(out)
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(out, in) //nolint:errcheck // a closed link ends the copy
		out.Close()
	})
	io.Copy(in, out) //nolint:errcheck
	in.Close()
	wg.Wait()
}
