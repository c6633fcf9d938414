package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// readBodies reads a request's whole body before the request takes a
// place in the API's bulkhead (inFlight), so that a client sending its
// body slowly — a byte a second — holds a connection and a goroutine, not
// one of the few places in which requests are served: before, eight such
// clients made every API request wait in the queue and then get 503.
//
// The bodies being read and those read but not yet answered are counted
// apart, in bytes, against a budget, and give it back when their request
// has been answered, so the memory that bodies hold at once stays bounded
// however many connections send them (bodyBudget.read says how a body
// takes its share). A body that finds the budget spent is answered 503
// with Retry-After at once; one over limit 413; one that does not arrive
// within the server's read timeout 408. Handlers take the body from memory
// afterwards (readBody), within their own (smaller or equal) limits.
func readBodies(limit int64, budget *bodyBudget, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, held, err := budget.read(r.Body, r.ContentLength, limit)
		defer budget.release(held)
		if err != nil {
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				writeError(w, http.StatusRequestEntityTooLarge, "", fmt.Sprintf("body over %d bytes", limit))
			case errors.Is(err, errBodyBudget):
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusServiceUnavailable, "", fmt.Sprintf("the console is busy: it holds request bodies of at most %d bytes in all, and they are taken; try again in 1 s", budget.max))
			case errors.Is(err, os.ErrDeadlineExceeded):
				writeError(w, http.StatusRequestTimeout, "", "the body did not arrive within the server's read timeout")
			default:
				writeError(w, http.StatusBadRequest, "", fmt.Sprintf("reading the body: %v", err))
			}
			return
		}
		// Handlers take the bytes from the context (readBody) rather than
		// copying them again; the body stays readable for any other.
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// bodyKey keys the body readBodies read in a request's context.
type bodyKey struct{}

// errBodyBudget: the bytes of the bodies held at once are at their bound.
var errBodyBudget = errors.New("web: request bodies at their bound")

// bodyBudget bounds the bytes of the request bodies held at once. It is
// safe for concurrent use.
type bodyBudget struct {
	max int64

	mu   sync.Mutex
	used int64
}

// take takes n bytes of the budget, or reports that there are not n left.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// read reads all of src, up to limit bytes. A body of known length
// (Content-Length: what browsers and curl send) takes budget for all of
// it before a byte is read, and one over limit is refused unread: in a
// flood of large bodies, those that start are those that can finish,
// rather than every one taking a share and few completing. A body of
// unknown length (chunked) takes budget for the memory that holds it as
// it grows — at most twice what has arrived — once a piece has arrived. It
// returns the body and the budget held, to be released also on error.
func (b *bodyBudget) read(src io.Reader, declared, limit int64) ([]byte, int64, error) {
	var (
		out     []byte
		scratch [4096]byte
		held    int64
	)
	if declared > limit {
		return nil, 0, &http.MaxBytesError{Limit: limit}
	}
	if declared > 0 {
		if !b.take(declared) {
			return nil, 0, errBodyBudget
		}
		held = declared
		out = make([]byte, 0, declared)
	}
	for {
		n, err := src.Read(scratch[:])
		if n > 0 {
			need := int64(len(out) + n)
			if need > limit {
				return nil, held, &http.MaxBytesError{Limit: limit}
			}
			if need > int64(cap(out)) {
				// Doubling from what has arrived: a client that has sent
				// one byte holds one byte of the budget.
				grow := min(max(2*int64(cap(out)), need), limit)
				if !b.take(grow - int64(cap(out))) {
					return nil, held, errBodyBudget
				}
				held += grow - int64(cap(out))
				out = append(make([]byte, 0, grow), out...)
			}
			out = append(out, scratch[:n]...)
		}
		if err == io.EOF {
			return out, held, nil
		}
		if err != nil {
			return nil, held, err
		}
	}
}
