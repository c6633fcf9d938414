package scale

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one OS process of the cluster, started again as often as
// asked, its output appended to one file. Safe for concurrent use.
type Process struct {
	// Name says what it is: "etcd m0", "coordinator 1", "region eu".
	Name string
	// Log is the file its standard output and error are appended to.
	Log string

	bin  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// ErrNotRunning is returned by the signals when the process is not running.
var ErrNotRunning = errors.New("scale: process not running")

// Start starts the process; it is an error to start one that runs.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return fmt.Errorf("scale: %s already runs (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	f, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== scale: %s started %s: %s %s\n", p.Name, time.Now().UTC().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Should the harness die, its cluster dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("scale: %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // killed on purpose, or stopped
		f.Close()
		close(done)
	}()
	p.cmd, p.done, p.paused = cmd, done, false
	return nil
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Running says whether the process runs (a paused one does).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

// Pid is the running process's id, 0 when none runs.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited is closed when the current run of the process ends (nil before
// the first Start).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return ErrNotRunning
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// Kill sends SIGKILL (kill -9) and waits for the process to end; a
// process that does not run is left as it is.
func (p *Process) Kill() {
	if p.signal(syscall.SIGKILL) == nil {
		<-p.Exited()
	}
}

// Pause sends SIGSTOP: the process holds its sockets and answers nothing.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

// Term sends SIGTERM (after SIGCONT, should it be paused) and waits up to
// grace for the process to end, then kills it; the error says so.
func (p *Process) Term(grace time.Duration) error {
	p.mu.Lock()
	paused := p.paused
	p.mu.Unlock()
	if paused {
		p.Resume() //nolint:errcheck // ended meanwhile: Term says so below
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		if errors.Is(err, ErrNotRunning) {
			return nil
		}
		return err
	}
	select {
	case <-p.Exited():
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("scale: %s did not end within %v of SIGTERM: killed", p.Name, grace)
	}
}

// Usage is what /proc says of a process.
type Usage struct {
	// CPU is the user and system time the process has used.
	CPU time.Duration
	// RSS is its resident memory now, PeakRSS the most it held (VmHWM).
	RSS, PeakRSS int64
}

// Usage reads the running process's CPU time and memory from /proc.
func (p *Process) Usage() (Usage, error) {
	pid := p.Pid()
	if pid == 0 {
		return Usage{}, ErrNotRunning
	}
	return procUsage(pid)
}

// clockTicks is the kernel's USER_HZ, in which /proc/PID/stat counts CPU
// time: 100 on every Linux architecture Go runs on.
const clockTicks = 100

func procUsage(pid int) (Usage, error) {
	var u Usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted here start after its closing one (field 3, the state).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("scale: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("scale: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return u, fmt.Errorf("scale: /proc/%d/stat: %w", pid, err)
	}
	u.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return u, fmt.Errorf("scale: /proc/%d/status: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			u.RSS = kb << 10
		} else {
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// BusyLoops are CPU-bound processes (a shell's empty loop each) that
// compete with the cluster for the cores at the same priority, as other
// tenants of a shared machine do.
type BusyLoops struct{ procs []*Process }

// StartBusyLoops starts n busy loops, their output (none) in dir.
func StartBusyLoops(n int, dir string) (*BusyLoops, error) {
	b := &BusyLoops{}
	for i := range n {
		p := &Process{Name: fmt.Sprintf("busy loop %d", i), Log: fmt.Sprintf("%s/busy-%d.stderr", dir, i),
			bin: "/bin/sh", args: []string{"-c", "while :; do :; done"}}
		if err := p.Start(); err != nil {
			b.Stop()
			return nil, err
		}
		b.procs = append(b.procs, p)
	}
	return b, nil
}

// CPU is the CPU time the loops have used.
func (b *BusyLoops) CPU() time.Duration {
	var sum time.Duration
	for _, p := range b.procs {
		if u, err := p.Usage(); err == nil {
			sum += u.CPU
		}
	}
	return sum
}

// Stop kills the loops.
func (b *BusyLoops) Stop() {
	for _, p := range b.procs {
		p.Kill()
	}
}
