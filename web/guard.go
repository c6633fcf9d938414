package web

import (
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadhttp"
	"github.com/afloat/afloat/internal/hostcheck"
)

// The console runs on the user's machine, and every web page the user
// visits can send requests to it: a form or an <img> tag on any site, and
// with DNS rebinding a script that reads the answers. These guards stand
// between the network and the API (docs/api.md, "Protections"):
//
//   - hostGuard answers only to a Host that names the loopback interface,
//     so a rebound name (evil.example resolving to 127.0.0.1) gets 403;
//   - crossOriginGuard refuses a state-changing request a browser marks
//     as coming from another site (Go's http.CrossOriginProtection: the
//     Sec-Fetch-Site header, else Origin against Host);
//   - jsonOnly refuses a POST whose body is not exactly application/json:
//     the types another site can send without a CORS preflight (none,
//     text/plain, a form) get 403, any other type 415;
//   - readBodies reads a request's body before it takes a place in the
//     bulkhead, against a budget of bytes of its own, so that clients
//     sending bodies slowly do not hold the places;
//   - inFlight runs the API inside afloat's own bulkhead, so that a flood
//     of costly requests waits in a bounded queue or gets 503 +
//     Retry-After instead of taking the machine's memory and time.

// hostGuard refuses requests whose Host is not allowed.
func hostGuard(allowed func(host string) bool, next http.Handler) http.Handler {
	if allowed == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r.Host) {
			writeError(w, http.StatusForbidden, "Host", fmt.Sprintf("host %q: this console answers only to localhost, 127.0.0.1 and [::1] "+
				"(a protection against DNS rebinding); serve it with --allow-remote to answer other names", clip([]byte(r.Host))))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names the loopback interface:
// localhost and its subdomains (which browsers resolve to loopback
// themselves, never through DNS), and loopback IP literals. The rule is
// internal/hostcheck's, shared with the quota's listeners.
func loopbackHost(hostport string) bool { return hostcheck.Loopback(hostport) }

// crossOriginGuard refuses cross-origin requests with unsafe methods.
func crossOriginGuard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "Origin", "cross-origin request refused: "+err.Error()+
				"; the console's API takes changes only from its own pages or from clients that are not browsers")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// simpleTypes are the media types a page of another site can POST without
// a CORS preflight: what a <form> or a no-cors fetch sends.
var simpleTypes = []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"}

// jsonOnly refuses a request with a body (POST, PUT, PATCH) unless its
// Content-Type is exactly application/json, with at most a charset=utf-8
// parameter.
func jsonOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
		default:
			next.ServeHTTP(w, r) // no body: the mux answers 405 where it is not allowed
			return
		}
		ct := r.Header.Get("Content-Type")
		if err := checkJSONType(ct); err != nil {
			status := http.StatusUnsupportedMediaType
			mt, _, _ := mime.ParseMediaType(ct)
			for _, s := range simpleTypes {
				if strings.EqualFold(mt, s) || ct == "" {
					status = http.StatusForbidden
				}
			}
			writeError(w, status, "Content-Type", err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkJSONType accepts application/json and application/json;
// charset=utf-8 (in any case), nothing else.
func checkJSONType(ct string) error {
	want := fmt.Sprintf("Content-Type %q: want application/json", clip([]byte(ct)))
	if ct == "" {
		return errors.New("no Content-Type: want application/json (a request without one is what another site's form sends)")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return errors.New(want)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return errors.New(want + " with at most charset=utf-8")
		}
	}
	return nil
}

// inFlight bounds the API requests being served at once with a bulkhead:
// limit inside, queue waiting; beyond both, or after the queue's maximum
// wait, 503 with Retry-After.
func inFlight(b *bulkhead.Bulkhead, next http.Handler) http.Handler {
	limit := b.Limit()
	mw := bulkheadhttp.Middleware(b, bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		if bulkhead.ReasonOf(err) == bulkhead.ReasonCanceled {
			return // the client has gone: nobody reads an answer
		}
		after := int(math.Ceil(b.RetryAfter().Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(after))
		writeError(w, http.StatusServiceUnavailable, "", fmt.Sprintf("the console is busy (%v): it serves %d API requests at a time; try again in %d s",
			err, limit, after))
	}))(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r) // the embedded assets cost next to nothing
			return
		}
		mw.ServeHTTP(w, r)
	})
}
