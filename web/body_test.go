package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// slowPost starts a POST whose body comes from a pipe that the test
// feeds (or not), and sends its status on answers once answered. Its
// length is unknown (chunked), unless declared is given.
func slowPost(h http.Handler, path string, answers chan<- int, declared ...int64) *io.PipeWriter {
	pr, pw := io.Pipe()
	req := localRequest("POST", path, pr)
	req.Header.Set("Content-Type", "application/json")
	if len(declared) > 0 {
		req.ContentLength = declared[0]
	}
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		answers <- rec.Code
	}()
	return pw
}

// TestSlowBodiesDoNotHoldTheBulkhead: clients that send their bodies
// slowly wait outside the bulkhead, so another request is still served
// (before, the body was read inside it: eight slow clients made every API
// request wait and get 503).
func TestSlowBodiesDoNotHoldTheBulkhead(t *testing.T) {
	const body = `{"scenario": "steady", "to": 1}`
	// Chunked bodies, and bodies of declared length (as curl sends).
	for _, declared := range [][]int64{nil, {int64(len(body))}} {
		slowBodies(t, body, declared)
	}
}

func slowBodies(t *testing.T, body string, declared []int64) {
	synctest.Test(t, func(t *testing.T) {
		c := DefaultConfig()
		c.MaxInFlight, c.MaxQueued = 2, 0
		h, lab := newHandler(c)
		defer lab.stop()
		answers := make(chan int, 8)
		var slow []*io.PipeWriter
		for range 8 {
			slow = append(slow, slowPost(h, "/api/run", answers, declared...))
		}
		synctest.Wait() // every slow request waits for its body
		early := 0
		for len(answers) > 0 {
			t.Errorf("a request still sending its body was answered %d", <-answers)
			early++
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("GET", "/api/run?scenario=steady&to=1", nil))
		if rec.Code != 200 {
			t.Errorf("a request while 8 bodies arrive slowly (2 in flight allowed, no queue): %d %s; want 200", rec.Code, rec.Body)
		}
		// Each slow body arrives in the end, and its request is served.
		for i, pw := range slow {
			go func() {
				io.WriteString(pw, body)
				pw.Close()
			}()
			synctest.Wait()
			select {
			case code := <-answers:
				if code != 200 {
					t.Errorf("step %d: a slow body, once arrived: %d, want 200", i, code)
				}
			default:
				if early == 0 {
					t.Errorf("step %d: a slow body arrived, and its request is not answered", i)
				}
				pw.CloseWithError(io.ErrClosedPipe) // nobody reads it
			}
		}
		synctest.Wait()
	})
}

// TestBodyBudget: the bytes of the bodies held at once are bounded; a
// body that finds them spent is answered 503 with Retry-After at once,
// and a body over the limit 413, both before the bulkhead.
func TestBodyBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := DefaultConfig()
		c.MaxBodyBytes = 4096 // a budget of bodyBudgetBodies × 4096 bytes
		h, lab := newHandler(c)
		defer lab.stop()
		answers := make(chan int, bodyBudgetBodies)
		var held []*io.PipeWriter
		for range bodyBudgetBodies {
			pw := slowPost(h, "/api/run", answers)
			go pw.Write([]byte(strings.Repeat(" ", 4096))) // all it may send, but not the end
			held = append(held, pw)
		}
		synctest.Wait()
		post := func(body string) *httptest.ResponseRecorder {
			req := localRequest("POST", "/api/run", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		if rec := post(`{"scenario": "steady", "to": 1}`); rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "request bodies") {
			t.Errorf("a body with the budget spent: %d %q %s; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		held[0].CloseWithError(errors.New("the client went away"))
		if code := <-answers; code != 400 {
			t.Errorf("a body cut short: %d, want 400", code)
		}
		if rec := post(`{"scenario": "steady", "to": 1}`); rec.Code != 200 {
			t.Errorf("a body once one was given back: %d %s; want 200", rec.Code, rec.Body)
		}
		if rec := post(`{"scenario": "steady", "seed": 1` + strings.Repeat(" ", 4096) + `}`); rec.Code != 413 {
			t.Errorf("a body over the limit: %d, want 413", rec.Code)
		}
		for _, pw := range held[1:] {
			pw.Close()
			<-answers
		}

		// A body of declared length takes all of it before a byte is
		// read; one declared over the limit is refused unread.
		held = held[:0]
		for range bodyBudgetBodies {
			held = append(held, slowPost(h, "/api/run", answers, 4096)) // sends nothing
		}
		synctest.Wait()
		if rec := post(`{"scenario": "steady", "to": 1}`); rec.Code != 503 {
			t.Errorf("a body while declared ones hold the budget: %d, want 503", rec.Code)
		}
		over := slowPost(h, "/api/run", answers, 4097)
		if code := <-answers; code != 413 {
			t.Errorf("a body declared over the limit: %d, want 413 before it is read", code)
		}
		over.Close()
		for _, pw := range held {
			pw.CloseWithError(errors.New("the client went away"))
			<-answers
		}
		if rec := post(`{"scenario": "steady", "to": 1}`); rec.Code != 200 {
			t.Errorf("a body once the declared ones are gone: %d %s; want 200", rec.Code, rec.Body)
		}
	})
}

// TestBodyWithinTheReadTimeout: a body that does not arrive within the
// server's read timeout is answered 408, with a JSON error.
func TestBodyWithinTheReadTimeout(t *testing.T) {
	c := DefaultConfig()
	c.ReadTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, c) }()
	defer func() { stop(); <-done }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", ln.Addr())
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body that never arrives: %v", err)
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), "read timeout") {
		t.Errorf("a body that never arrives: %d %s; want 408", res.StatusCode, raw)
	}
}
