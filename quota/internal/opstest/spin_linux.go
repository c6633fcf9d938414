package opstest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Spin offers req to the server at addr, rate times a second for d, each
// send scheduled at start + i/rate, and measures every answer from its
// schedule (Sched) and from its send (Lat); whole says when a connection's
// bytes hold a complete answer (see HTTPWhole, PongWhole).
//
// It is a generator built not to be the slowest part of what it measures,
// which a goroutine-per-request generator is on a 2-core machine (its own
// sends ran 1–18 ms behind their schedule here). One goroutine on a locked
// thread spins on the clock instead of sleeping (the runtime's sleep and
// a thread's wake-up are each tens of µs late, more under a hypervisor),
// drives non-blocking sockets of its own through an epoll set it polls
// without waiting, allocates nothing per request and runs with the garbage
// collector off; so each request is sent within microseconds of its
// schedule and each answer read within microseconds of its arrival. It
// keeps a core busy: pin it (PinSelf) to a core the server does not use
// — and, so that none of this process's other goroutines runs on that
// core beside it, with GOMAXPROCS(1) when the server is another process.
//
// Connections are used as a client's pool uses them: the one freed last
// is taken first, and a new one is dialled only when every open one is
// waiting for an answer, up to conns; when all conns wait, the next
// request waits for the first free one, and its latency from the schedule
// says so. A server's idle timeout therefore meets no connection that
// was dialled and never used.
//
// Load.Gaps counts the times the loop itself did not run for over half a
// millisecond (the thread was descheduled, the hypervisor took the core):
// a latency measured across such a gap is the generator's, not the
// server's. Spin fails on a connection closed or refused, an answer whole
// rejects, or an answer 5 s late.
func Spin(addr string, req []byte, whole func([]byte) (int, error), conns int, rate float64, d time.Duration) (Load, error) {
	switch {
	case conns < 1:
		return Load{}, fmt.Errorf("opstest: spin: conns %d, want ≥ 1", conns)
	case !(rate > 0) || rate > 1e7:
		return Load{}, fmt.Errorf("opstest: spin: rate %v, want in (0, 1e7]", rate)
	case d <= 0:
		return Load{}, fmt.Errorf("opstest: spin: duration %v, want > 0", d)
	}
	sa, err := sockaddr(addr)
	if err != nil {
		return Load{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return Load{}, fmt.Errorf("opstest: spin: epoll: %w", err)
	}
	defer unix.Close(ep)
	s := &spinner{ep: ep, sa: sa, max: conns, whole: whole, byFd: map[int]*spinConn{}}
	defer s.close()

	n := int(rate * d.Seconds())
	period := float64(time.Second) / rate
	out := Load{Lat: make([]time.Duration, 0, n), Sched: make([]time.Duration, 0, n), Lag: make([]time.Duration, 0, n)}
	events := make([]unix.EpollEvent, 64)
	if err := s.dial(); err != nil { // one open before the clock starts
		return out, err
	}
	start := time.Now()
	var last, progress time.Duration
	next, waiting := 0, 0
	for next < n || waiting > 0 {
		now := time.Since(start)
		if g := now - last; g > 500*time.Microsecond && last > 0 {
			out.Gaps++
			out.MaxGap = max(out.MaxGap, g)
		}
		last = now
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
			if err := s.send(c, req); err != nil {
				return out, err
			}
			c.at, c.sent = at, sent
			if waiting == 0 {
				progress = sent // the 5 s a first answer has run from its send
			}
			out.Lag = append(out.Lag, sent-at)
			next++
			waiting++
		}
		k, err := unix.EpollWait(ep, events, 0)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return out, fmt.Errorf("opstest: spin: epoll: %w", err)
		}
		for _, ev := range events[:max(k, 0)] {
			c := s.byFd[int(ev.Fd)]
			done, err := s.read(c)
			if err != nil {
				return out, err
			}
			if !done {
				continue
			}
			t := time.Since(start)
			out.Sched = append(out.Sched, t-c.at)
			out.Lat = append(out.Lat, t-c.sent)
			s.free = append(s.free, c)
			waiting--
			progress = t
		}
		if waiting > 0 && now-progress > 5*time.Second {
			return out, fmt.Errorf("opstest: spin: %d requests without an answer for 5 s", waiting)
		}
	}
	out.Elapsed = time.Since(start)
	out.Conns = len(s.byFd)
	sortLoad(&out)
	return out, nil
}

// spinConn is one of Spin's connections: its socket, what it has read of
// the answer it waits for, and that request's schedule and send.
type spinConn struct {
	fd        int
	buf       [8192]byte
	n         int
	at, sent  time.Duration
	answering bool
}

type spinner struct {
	ep    int
	sa    unix.Sockaddr
	max   int
	whole func([]byte) (int, error)
	byFd  map[int]*spinConn
	free  []*spinConn // LIFO: the one freed last is taken first
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
// answered at once) and adds it, non-blocking, to the free ones.
func (s *spinner) dial() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opstest: spin: socket: %w", err)
	}
	if err := unix.Connect(fd, s.sa); err != nil {
		unix.Close(fd)
		return fmt.Errorf("opstest: spin: connect: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return fmt.Errorf("opstest: spin: nodelay: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fmt.Errorf("opstest: spin: nonblock: %w", err)
	}
	if err := unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("opstest: spin: epoll add: %w", err)
	}
	c := &spinConn{fd: fd}
	s.byFd[fd] = c
	s.free = append(s.free, c)
	return nil
}

// send writes the whole request; a request far smaller than a socket's
// buffer on an idle connection goes in one write.
func (s *spinner) send(c *spinConn, req []byte) error {
	w, err := unix.Write(c.fd, req)
	if err != nil {
		return fmt.Errorf("opstest: spin: write: %w", err)
	}
	if w != len(req) {
		return fmt.Errorf("opstest: spin: write: %d of %d bytes", w, len(req))
	}
	c.answering = true
	return nil
}

// read takes what the socket holds and reports whether it completes the
// answer the connection waits for.
func (s *spinner) read(c *spinConn) (bool, error) {
	r, err := unix.Read(c.fd, c.buf[c.n:])
	switch {
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("opstest: spin: read: %w", err)
	case r == 0:
		return false, errors.New("opstest: spin: the server closed a connection")
	case !c.answering:
		return false, fmt.Errorf("opstest: spin: %d bytes unasked for: %q", r, c.buf[:r])
	}
	c.n += r
	m, err := s.whole(c.buf[:c.n])
	switch {
	case err != nil:
		return false, fmt.Errorf("opstest: spin: answer: %w", err)
	case m == 0 && c.n == len(c.buf):
		return false, fmt.Errorf("opstest: spin: answer over %d bytes", len(c.buf))
	case m == 0:
		return false, nil
	case m != c.n:
		return false, fmt.Errorf("opstest: spin: %d bytes after the answer", c.n-m)
	}
	c.n, c.answering = 0, false
	return true, nil
}

func (s *spinner) close() {
	for fd := range s.byFd {
		unix.Close(fd)
	}
}

// sockaddr resolves a loopback host:port for Spin's own sockets.
func sockaddr(addr string) (unix.Sockaddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("opstest: spin: address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("opstest: spin: address %q: port, want 1–65535", addr)
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("opstest: spin: address %q: want an IPv4 loopback address", addr)
	}
	sa := &unix.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	return sa, nil
}

// PinSelf binds every thread of this process to cpu and returns what
// undoes it for those threads. New threads inherit the binding of the one
// that starts them, so the runtime's later threads stay on cpu too (and
// keep it after restore; a test process that pins itself ends soon).
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
		return nil, fmt.Errorf("opstest: pin: cpu %d, want 0–%d", cpu, runtime.NumCPU()-1)
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, fmt.Errorf("opstest: pin: %w", err)
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
			return nil, fmt.Errorf("opstest: pin: thread %d: %w", tid, err)
		}
		saved[tid] = was
	}
	return func() {
		for tid, was := range saved {
			unix.SchedSetaffinity(tid, &was) //nolint:errcheck // a thread that ended needs nothing undone
		}
	}, nil
}
