package web

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var screenshotDir = flag.String("screenshots", "", "folder for the screenshots the browser tests take along the way (default: none are taken, but for a failed step's, kept in a temporary folder the failure names)")

// startConsole serves the console on a free loopback port for the length
// of the test and returns its base URL. AFLOAT_CONSOLE_URL points the test
// at a console that already runs instead (go run ./cmd/afloat, say), to try
// the real binary.
func startConsole(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("AFLOAT_CONSOLE_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	return serveConsole(t, DefaultConfig())
}

// serveConsole serves the console configured as c on a free loopback
// port for the length of the test and returns its base URL.
func serveConsole(t testing.TB, c Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, c) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// findChromium returns the browser to drive: AFLOAT_CHROMIUM, or
// Chromium's headless shell (Debian's chromium-headless-shell, which make
// test installs: the same engine without the desktop browser, and
// lighter), or a full Chromium. Without one, the test is skipped — unless
// AFLOAT_REQUIRE_BROWSER is set, as make test sets it, so that CI cannot
// pass by skipping.
func findChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("AFLOAT_CHROMIUM"), "chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("AFLOAT_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH and AFLOAT_REQUIRE_BROWSER is set (make test installs Debian's chromium-headless-shell)")
	}
	t.Skip("no chromium on PATH: run make test, which installs it, or set AFLOAT_CHROMIUM")
	return ""
}

// browser is a headless Chromium driven by chromedp, with the console's
// JavaScript errors and exceptions collected.
type browser struct {
	t        testing.TB
	ctx      context.Context
	shots    string
	mu       sync.Mutex
	problems []string
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	parent := sharedChromium(t)
	// Each test has a browser context of its own (like a new profile:
	// its own storage, cookies and cache) in the one Chromium: starting
	// a Chromium costs about two CPU-seconds, a browser context almost
	// nothing, and make test's browser tests were a tenth Chromium
	// start-ups.
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("a new browser context: %v", err)
	}
	b := &browser{t: t, ctx: ctx}
	b.watch(ctx)
	return b
}

// chromium is the one headless Chromium the package's browser tests
// share, started by the first test that needs it and stopped by TestMain.
var chromium struct {
	once   sync.Once
	ctx    context.Context // its first tab: the parent of the tests' contexts
	err    error
	dir    string // its profile and temporary files
	cancel func()
}

// sharedChromium starts the shared Chromium on first use and returns the
// context of its first tab.
func sharedChromium(t testing.TB) context.Context {
	t.Helper()
	path := findChromium(t)
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "afloat-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		chromium.dir = dir
		profile, tmp := filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
		for _, d := range []string{profile, tmp} {
			if err := os.Mkdir(d, 0o700); err != nil {
				chromium.err = err
				return
			}
		}
		// The flags keep Chromium off the network: this machine reaches
		// only loopback, and background services would stall on refused
		// connections.
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(profile),
			chromedp.WindowSize(1400, 1000),
			// Chromium's own temporary files go with its folder, not
			// into the machine's /tmp, where they outlived every run.
			chromedp.Env("TMPDIR="+tmp),
		)
		// Not --single-process, although the headless shell spends about
		// a tenth less CPU so: it is a debugging mode Chromium does not
		// support, and the first CI run with it hung one language switch
		// for 30 s with no error on the page, which no run without it has
		// done.
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		chromium.ctx = ctx
		chromium.cancel = func() { cancelCtx(); cancelAlloc() }
		chromium.err = chromedp.Do(ctx)
	})
	if chromium.err != nil {
		t.Fatalf("starting chromium: %v", chromium.err)
	}
	return chromium.ctx
}

// stopChromium stops the shared Chromium, if one started, and removes its
// folder.
func stopChromium() error {
	if chromium.cancel != nil {
		chromium.cancel()
	}
	if chromium.dir == "" {
		return nil
	}
	return removeChromiumDir(chromium.dir)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopChromium(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// removeChromiumDir removes Chromium's folder, trying again for up to
// five seconds while its last helper processes exit (a helper may still
// be writing in the profile just after the browser itself has exited:
// "directory not empty").
func removeChromiumDir(dir string) error {
	var err error
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("removing Chromium's folder: %w", err)
	}
	return nil
}

// watch records uncaught exceptions and console errors of a tab.
func (b *browser) watch(ctx context.Context) {
	messages := chromedp.Console(ctx)
	go func() {
		for msg, err := range messages {
			if err != nil {
				return
			}
			if msg.Type == chromedp.ConsoleError || msg.IsException() {
				b.problem(msg.String())
			}
		}
	}()
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, s)
}

// newTab opens a fresh tab in the same browser.
func (b *browser) newTab() context.Context {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("new tab: %v", err)
	}
	b.watch(ctx)
	return ctx
}

// do runs chromedp steps with a deadline, failing the test on error.
func (b *browser) do(ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			b.failureShot(ctx, what)
		}
		b.t.Fatalf("%s: %v (browser problems: %v)", what, err, b.problems)
	}
}

// evaluate runs a JavaScript expression and decodes its value.
func evaluate[T any](b *browser, ctx context.Context, expr string) T {
	b.t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %.60s: %v (browser problems: %v)", expr, err, b.problems)
	}
	return v
}

// text returns the text of the first element matching a CSS selector.
func (b *browser) text(ctx context.Context, css string) string {
	b.t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", css, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is true, asking every 30 ms:
// at every 10 ms the asking alone cost Chromium about a twentieth of the
// browser tests' CPU.
func waitFor(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(30*time.Millisecond))(ctx, t)
		return err
	})
}

// shotDir returns the screenshot folder, made on first use: -screenshots,
// or a temporary folder for a failure's screenshot, removed when the test
// passes after all and kept, and named, when it fails.
func (b *browser) shotDir() string {
	b.t.Helper()
	if b.shots != "" {
		return b.shots
	}
	dir := *screenshotDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "afloat-screens-"); err != nil {
			b.t.Fatal(err)
		}
		b.t.Cleanup(func() {
			if b.t.Failed() {
				b.t.Logf("screenshots kept in %s", dir)
				return
			}
			os.RemoveAll(dir)
		})
	} else {
		b.t.Logf("screenshots in %s", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	b.shots = dir
	return dir
}

// shot saves a full-page screenshot as NAME.png in the -screenshots
// folder; without one it takes none: a full-page PNG costs the browser
// more than most steps of a test, and nobody looks at the pictures of a
// run that passed.
func (b *browser) shot(ctx context.Context, name string) {
	b.t.Helper()
	if *screenshotDir != "" {
		b.save(ctx, name)
	}
}

// failureShot saves the page as it stands when a step failed.
func (b *browser) failureShot(ctx context.Context, what string) {
	b.t.Helper()
	b.save(ctx, "failure-"+strings.ReplaceAll(what, " ", "-"))
}

func (b *browser) save(ctx context.Context, name string) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shotDir(), name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// someLanguages returns the languages given, or only the first when short
// (make test runs with -short): each of the longest browser tests walks
// its pages in one language there, a different one first in different
// tests so that make test plays English, Welsh and Tagalog all, and in
// every language in make test-long. A language changes the words, not
// the page's code; the catalogues are checked complete in every language
// by the unit tests either way, and the assignment lab's language
// switches run in all three.
func someLanguages(short bool, langs ...string) []string {
	if !short {
		return langs
	}
	return langs[:1]
}

// noProblems fails the test if a page threw or logged an error.
func (b *browser) noProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Fatalf("the page reported problems: %s", strings.Join(b.problems, "; "))
	}
}
