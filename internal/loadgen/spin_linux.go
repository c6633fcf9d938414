package loadgen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Spin offers wire's requests to the server at addr, rate a second for d,
// each send scheduled at start + i/rate, and measures every answer from
// its schedule (Sched) and from its send (Lat).
//
// It is a generator built not to be the slowest part of what it measures,
// which a goroutine-per-request generator is on a 2-core machine (its own
// sends ran 1–18 ms behind their schedule here). One goroutine on a locked
// thread spins on the clock instead of sleeping (the runtime's sleep and
// a thread's wake-up are each tens of µs late, more under a hypervisor),
// drives non-blocking sockets of its own through an epoll set it polls
// without waiting, allocates little per request and runs with the garbage
// collector off; so each request is sent within microseconds of its
// schedule and each answer read within microseconds of its arrival. It
// keeps a core busy: pin it (PinSelf) to a core the server does not use
// — and, so that none of this process's other goroutines runs on that
// core beside it, with GOMAXPROCS(1) when the server is another process.
//
// Connections are used as a client's pool uses them: one request awaits
// its answer on a connection at a time; the connection freed last is
// taken first, and a new one is dialled only when every open one is
// waiting for an answer, up to conns; when all conns wait, the next
// request waits for the first free one, and its latency from the schedule
// says so. A server's idle timeout therefore meets no connection that
// was dialled and never used.
//
// Spin fails on a connection closed or refused, an answer the wire
// rejects, or no answer for 5 s.
func Spin(addr string, wire Wire, conns int, rate float64, d time.Duration) (Result, error) {
	switch {
	case conns < 1:
		return Result{}, fmt.Errorf("loadgen: conns %d, want ≥ 1", conns)
	case !(rate > 0) || rate > 1e7:
		return Result{}, fmt.Errorf("loadgen: rate %v, want in (0, 1e7]", rate)
	case d <= 0 || d > time.Hour:
		return Result{}, fmt.Errorf("loadgen: duration %v, want in (0, 1h]", d)
	}
	sa, err := sockaddr(addr)
	if err != nil {
		return Result{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return Result{}, fmt.Errorf("loadgen: epoll: %w", err)
	}
	defer unix.Close(ep)
	s := &spinner{ep: ep, sa: sa, max: conns, wire: wire, byFd: map[int]*spinConn{}}
	defer s.close()

	n := int(rate * d.Seconds())
	period := float64(time.Second) / rate
	out := Result{Lat: make([]time.Duration, 0, n), Sched: make([]time.Duration, 0, n), Lag: make([]time.Duration, 0, n), Own: make([]time.Duration, 0, n)}
	events := make([]unix.EpollEvent, 64)
	if err := s.dial(); err != nil { // one open before the clock starts
		return out, err
	}
	steal0 := Steal()
	start := time.Now()
	var last, progress time.Duration
	next, waiting, due := 0, 0, 0
	for next < n || waiting > 0 {
		now := time.Since(start)
		if g := now - last; g > 500*time.Microsecond && last > 0 {
			out.Gaps++
			out.MaxGap = max(out.MaxGap, g)
		}
		last = now
		for ; due < n; due++ { // the requests this loop sees due for the first time
			at := time.Duration(float64(due) * period)
			if at > now {
				break
			}
			out.Own = append(out.Own, now-at)
		}
		for next < n {
			at := time.Duration(float64(next) * period)
			if at > now {
				break
			}
			c, err := s.take()
			if err != nil {
				return out, err
			}
			if c == nil {
				break // every connection waits: the request waits with them
			}
			sent := time.Since(start)
			if err := s.write(c, c.wc.Request()); err != nil {
				return out, err
			}
			if waiting == 0 {
				progress = sent // the 5 s a first answer has run from its send
			}
			c.at, c.sent, c.waiting = at, sent, true
			out.Lag = append(out.Lag, sent-at)
			next++
			waiting++
		}
		k, err := unix.EpollWait(ep, events, 0)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return out, fmt.Errorf("loadgen: epoll: %w", err)
		}
		for _, ev := range events[:max(k, 0)] {
			c := s.byFd[int(ev.Fd)]
			answered, err := s.read(c)
			if err != nil {
				return out, err
			}
			if !answered {
				continue
			}
			t := time.Since(start)
			out.Sched = append(out.Sched, t-c.at)
			out.Lat = append(out.Lat, t-c.sent)
			c.waiting = false
			s.free = append(s.free, c)
			waiting--
			progress = t
		}
		if waiting > 0 && now-progress > 5*time.Second {
			return out, fmt.Errorf("loadgen: %d requests without an answer for 5 s", waiting)
		}
	}
	out.Elapsed = time.Since(start)
	out.Conns = len(s.byFd)
	if steal1 := Steal(); len(steal1) == len(steal0) {
		for i := range steal1 {
			out.Steal = append(out.Steal, steal1[i]-steal0[i])
		}
	}
	out.sort()
	return out, nil
}

// Steal is each CPU's steal time so far — the time a hypervisor ran
// something else while that CPU had work — from /proc/stat, indexed by
// CPU number (an offline CPU reads 0); nil when the file cannot be read
// or has no such column (an old kernel).
func Steal() []time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	return parseSteal(string(b))
}

// parseSteal reads the steal column (the eighth number) of every cpuN
// line of a /proc/stat, in USER_HZ ticks, which Linux fixes at 100 a
// second for user space whatever the kernel's own HZ. Anything it does
// not understand makes it answer nil rather than a wrong figure.
func parseSteal(stat string) []time.Duration {
	var out []time.Duration
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(f[0][3:])
		if err != nil || cpu < 0 || cpu >= 1<<16 || len(f) < 9 {
			return nil
		}
		ticks, err := strconv.ParseUint(f[8], 10, 36) // 21 years; more would overflow a Duration
		if err != nil {
			return nil
		}
		if cpu >= len(out) {
			out = append(out, make([]time.Duration, cpu+1-len(out))...)
		}
		out[cpu] = time.Duration(ticks) * 10 * time.Millisecond
	}
	return out
}

// spinConn is one of Spin's connections: its socket, its wire's state,
// the bytes received and not yet consumed, and the schedule and send of
// the request it waits for.
type spinConn struct {
	fd       int
	wc       Conn
	buf      [32 << 10]byte
	n        int
	at, sent time.Duration
	waiting  bool
}

type spinner struct {
	ep   int
	sa   unix.Sockaddr
	max  int
	wire Wire
	byFd map[int]*spinConn
	free []*spinConn // LIFO: the one freed last is taken first
}

// take returns a free connection, dialling one when none is free and
// fewer than max are open, or nil when all max wait for answers.
func (s *spinner) take() (*spinConn, error) {
	if len(s.free) == 0 {
		if len(s.byFd) >= s.max {
			return nil, nil
		}
		if err := s.dial(); err != nil {
			return nil, err
		}
	}
	c := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return c, nil
}

// dial opens a connection (a blocking connect: on loopback it is
// answered at once), writes the wire's hello, and adds it, non-blocking,
// to the free ones.
func (s *spinner) dial() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loadgen: socket: %w", err)
	}
	c := &spinConn{fd: fd, wc: s.wire.NewConn()}
	if err := s.open(c); err != nil {
		unix.Close(fd)
		return err
	}
	s.byFd[fd] = c
	s.free = append(s.free, c)
	return nil
}

func (s *spinner) open(c *spinConn) error {
	if err := unix.Connect(c.fd, s.sa); err != nil {
		return fmt.Errorf("loadgen: connect: %w", err)
	}
	if err := unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return fmt.Errorf("loadgen: nodelay: %w", err)
	}
	if err := unix.SetNonblock(c.fd, true); err != nil {
		return fmt.Errorf("loadgen: nonblock: %w", err)
	}
	if err := unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)}); err != nil {
		return fmt.Errorf("loadgen: epoll add: %w", err)
	}
	if h := c.wc.Hello(); len(h) > 0 {
		return s.write(c, h)
	}
	return nil
}

// write writes b whole; a few dozen bytes on a connection whose peer
// reads go in one write.
func (s *spinner) write(c *spinConn, b []byte) error {
	w, err := unix.Write(c.fd, b)
	if err != nil {
		return fmt.Errorf("loadgen: write: %w", err)
	}
	if w != len(b) {
		return fmt.Errorf("loadgen: write: %d of %d bytes", w, len(b))
	}
	return nil
}

// read takes what the socket holds, hands it to the wire, writes back
// what the wire answers, and reports whether the answer the connection
// waits for is whole.
func (s *spinner) read(c *spinConn) (bool, error) {
	r, err := unix.Read(c.fd, c.buf[c.n:])
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("loadgen: read: %w", err)
	case r == 0:
		return false, errors.New("loadgen: the server closed a connection")
	}
	c.n += r
	used, answered, reply, err := c.wc.Read(c.buf[:c.n], c.waiting)
	if err != nil {
		return false, err
	}
	if len(reply) > 0 {
		if err := s.write(c, reply); err != nil {
			return false, err
		}
	}
	c.n = copy(c.buf[:], c.buf[used:c.n])
	if c.n == len(c.buf) {
		return false, fmt.Errorf("loadgen: an answer over %d bytes", len(c.buf))
	}
	return answered, nil
}

func (s *spinner) close() {
	for fd := range s.byFd {
		unix.Close(fd)
	}
}

// sockaddr resolves an IPv4 loopback host:port for Spin's own sockets.
func sockaddr(addr string) (unix.Sockaddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("loadgen: address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("loadgen: address %q: port, want 1–65535", addr)
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("loadgen: address %q: want an IPv4 loopback address", addr)
	}
	sa := &unix.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	return sa, nil
}

// PinSelf binds every thread of this process to cpu and returns what
// undoes it for those threads. New threads inherit the binding of the one
// that starts them, so the runtime's later threads stay on cpu too (and
// keep it after restore; a benchmark process that pins itself ends soon).
func PinSelf(cpu int) (restore func(), err error) {
	return pin(os.Getpid(), cpu)
}

// PinProcess binds every thread of process pid to cpu.
func PinProcess(pid, cpu int) error {
	_, err := pin(pid, cpu)
	return err
}

func pin(pid, cpu int) (func(), error) {
	if cpu < 0 || cpu >= runtime.NumCPU() {
		return nil, fmt.Errorf("loadgen: pin: cpu %d, want 0–%d", cpu, runtime.NumCPU()-1)
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, fmt.Errorf("loadgen: pin: %w", err)
	}
	var one unix.CPUSet
	one.Set(cpu)
	saved := map[int]unix.CPUSet{}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var was unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &was); err != nil {
			continue // the thread has ended
		}
		if err := unix.SchedSetaffinity(tid, &one); err != nil {
			return nil, fmt.Errorf("loadgen: pin: thread %d: %w", tid, err)
		}
		saved[tid] = was
	}
	return func() {
		for tid, was := range saved {
			unix.SchedSetaffinity(tid, &was) //nolint:errcheck // a thread that ended needs nothing undone
		}
	}, nil
}
