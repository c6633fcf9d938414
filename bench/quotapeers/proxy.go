package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// faultProxy forwards TCP connections to one target until it is cut, each
// byte sent toward the target held for delay first (a one-way latency put
// in the path: the round trip of a region far from the target). A cut
// is a partition as a network shows one, not a refusal: the connections in
// use are dropped and new ones are accepted and then held silent — what a
// sender sees when packets vanish — until the cut heals, when the held ones
// are closed so that the sender reconnects.
type faultProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu    sync.Mutex
	cut   bool
	live  map[net.Conn]struct{} // both ends of forwarded connections
	held  map[net.Conn]struct{} // accepted during a cut
	close bool
}

func newFaultProxy(target string) (*faultProxy, error) { return newDelayProxy(target, 0) }

// newDelayProxy is a faultProxy that holds each byte toward the target for
// delay before it sends it.
func newDelayProxy(target string, delay time.Duration) (*faultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &faultProxy{ln: ln, target: target, delay: delay, live: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *faultProxy) handle(c net.Conn) {
	p.mu.Lock()
	if p.close {
		p.mu.Unlock()
		c.Close()
		return
	}
	if p.cut {
		p.held[c] = struct{}{}
		p.mu.Unlock()
		io.Copy(io.Discard, c) // silent: read and drop until closed
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut || p.close {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.live[c] = struct{}{}
	p.live[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.forward(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.live, c)
	delete(p.live, up)
	p.mu.Unlock()
}

// forward copies src to dst, each chunk delay after it was read, in order.
func (p *faultProxy) forward(dst io.Writer, src io.Reader) {
	if p.delay == 0 {
		io.Copy(dst, src)
		return
	}
	type chunk struct {
		at time.Time
		b  []byte
	}
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{time.Now().Add(p.delay), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			for range q { // drain, so that the reader ends
			}
			return
		}
	}
}

// setCut cuts (true) or heals (false) the link.
func (p *faultProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.live {
			c.Close()
		}
		return
	}
	for c := range p.held {
		c.Close()
		delete(p.held, c)
	}
}

func (p *faultProxy) shutdown() {
	p.mu.Lock()
	p.close = true
	for c := range p.live {
		c.Close()
	}
	for c := range p.held {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
}
