package main

import (
	"io"
	"net"
	"sync"
)

// faultProxy forwards TCP connections to one target until it is cut. A cut
// is a partition as a network shows one, not a refusal: the connections in
// use are dropped and new ones are accepted and then held silent — what a
// sender sees when packets vanish — until the cut heals, when the held ones
// are closed so that the sender reconnects.
type faultProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	live  map[net.Conn]struct{} // both ends of forwarded connections
	held  map[net.Conn]struct{} // accepted during a cut
	close bool
}

func newFaultProxy(target string) (*faultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &faultProxy{ln: ln, target: target, live: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
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
	go func() { io.Copy(up, c); done <- struct{}{} }()
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
