package assigntest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server child process. Its methods are safe for
// concurrent use.
type Server struct {
	Addr string // 127.0.0.1:PORT
	URL  string // redis://127.0.0.1:PORT
	Dir  string // its working folder, where SHUTDOWN SAVE writes dump.rdb

	t        testing.TB
	bin      string
	args     []string
	password string // --requirepass, sent by Do
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	log      *bytes.Buffer
}

// RedisServer finds redis-server, or skips (fails under
// AFLOAT_REQUIRE_REDIS) the test.
func RedisServer(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AFLOAT_REDIS_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	if os.Getenv("AFLOAT_REQUIRE_REDIS") != "" {
		t.Fatal("no redis-server on PATH and AFLOAT_REQUIRE_REDIS is set (make test installs Debian's redis-server)")
	}
	t.Skip("no redis-server on PATH: run make test, which installs it, or set AFLOAT_REDIS_SERVER")
	return ""
}

// Start starts a redis-server on a free loopback port and stops it when
// the test ends. Extra arguments are passed on (say "--enable-debug-command",
// "yes").
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := RedisServer(t)
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, Dir: dir}
	for i, a := range extra {
		if a == "--requirepass" && i+1 < len(extra) {
			s.password = extra[i+1]
		}
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.Addr = "127.0.0.1:" + strconv.Itoa(port)
		s.URL = "redis://" + s.Addr
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--protected-mode", "yes", "--loglevel", "warning",
		}, extra...)
		err = s.start()
		if err == nil {
			break
		}
		if attempt == 4 {
			t.Fatalf("redis-server would not start: %v", err)
		}
		// Another process took the port between our probe and the start.
	}
	t.Cleanup(s.Stop)
	return s
}

// freePort asks the kernel for a free loopback port. (redis-server has no
// --port 0.) Another process could take it before redis-server binds it;
// Start tries again then.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done, s.log = cmd, done, &log
	// Polling until the server answers is waiting for it to be up, not
	// measuring time.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := s.ping(); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %s", log.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer PING within 10 s: %s", log.String())
		}
	}
}

// Pid is the process id of the running redis-server, 0 when it is
// stopped; a load benchmark pins it to a core with it.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	select {
	case <-s.done:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

// ping sends PING and expects PONG.
func (s *Server) ping() error {
	out, err := s.raw("PING")
	if err != nil {
		return err
	}
	// A server started with --requirepass answers NOAUTH: it is up.
	if out != "+PONG" && !strings.HasPrefix(out, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", out)
	}
	return nil
}

// Do sends one command on a fresh connection and returns the first line of
// the answer ("+OK", ":3", "-ERR …", "$5" for a bulk string). It is for
// administration in tests (SCRIPT FLUSH, CLIENT KILL, DEBUG SLEEP), not
// for the code under test, which uses a real client.
func (s *Server) Do(args ...string) (string, error) { return s.raw(args...) }

func (s *Server) raw(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	command := func(args ...string) {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	if s.password != "" {
		command("AUTH", s.password)
	}
	command(args...)
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	if s.password != "" {
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			return strings.TrimRight(line, "\r\n"), err
		}
	}
	line, err := r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// MustDo is Do that fails the test on a network error or an error reply.
func (s *Server) MustDo(args ...string) string {
	s.t.Helper()
	out, err := s.raw(args...)
	if err != nil || strings.HasPrefix(out, "-") {
		s.t.Fatalf("redis %v: %q %v", args, out, err)
	}
	return out
}

// Restart shuts the server down with SHUTDOWN SAVE (so the data survive in
// dump.rdb, and the script cache does not) and starts it again on the same
// port.
func (s *Server) Restart() {
	s.t.Helper()
	s.shutdown(true)
	if err := s.start(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

// Stop shuts the server down without saving. It is safe to call twice.
func (s *Server) Stop() { s.shutdown(false) }

func (s *Server) shutdown(save bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	mode := "NOSAVE"
	if save {
		mode = "SAVE"
	}
	s.raw("SHUTDOWN", mode) // the connection closes without an answer
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	if save {
		if _, err := os.Stat(filepath.Join(s.Dir, "dump.rdb")); err != nil {
			s.t.Errorf("SHUTDOWN SAVE left no dump.rdb: %v; log: %s", err, s.log)
		}
	}
	s.cmd = nil
}

// Context returns a context for one test step: cancelled after d or when
// the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
